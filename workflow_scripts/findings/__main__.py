"""Command line: the findings page (findings.md, findings.html and its figures) from a run's results.csv and the
learning curves in its folder (see the package docstring)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import pandas as pd

from workflow_scripts.findings import glance, numbers, plots, text
from workflow_scripts.findings.numbers import Panel
from workflow_scripts.findings.paragraph import details
from workflow_scripts.findings.titles import TITLES
from workflow_scripts.io import setup_logging, write_text
from workflow_scripts.paper.headline import data_labels, labels_for, read_results, to_html
from workflow_scripts.paper.names import panel_name

log = logging.getLogger("vocabexp")
FIGURES = ("quality_speed", "learning_curves", "k_tradeoff")
ABSENT = {
    "quality_speed": "quality against speed (no adapted cell with both a paired speed-up and bits per character)",
    "learning_curves": "learning curves (no cell recorded held-out bits per character during training)",
    "k_tradeoff": "the number of new tokens (no initialization run with more than one)",
}


def curve_note(panels: list[Panel]) -> str:
    """Where the curves' held-out sentences are not the final evaluation's, say so (their levels then differ)."""
    counts = {int(c["n_sentences"].iloc[0]) for p in panels for r in p.curves() if "n_sentences" in (c := r["curve"])}
    final = {int(r["sentences"]) for p in panels for r in p.rows if r.get("sentences") is not None}
    if not counts or counts == final:
        return ""
    curve_n = ", ".join(map(str, sorted(counts)))
    final_n = ", ".join(map(str, sorted(final))) or "an unrecorded number"
    return f" The curves are measured on {curve_n} held-out sentences, the final values on {final_n}: other text."


def page(panels: list[Panel], drawn: dict[str, bool], labels: list[str], models: list[str], n_seeds: int) -> str:
    """findings.md: the data line, the opening bullets (the scope among them, once), the sentences that follow from
    the numbers, the extrapolation table, each figure with its caption, one table per panel with its initializations'
    ranking, and what the run has no data for."""
    langs = sorted({p.language for p in panels})
    multi = len({p.model for p in panels}) > 1
    lines = ["# Findings", "", *(f"> Data: {label}." for label in labels), *([""] if labels else [])]
    rankings = [glance.ranking(p) for p in panels]  # the paired bootstraps of each language, once for the page
    lines += ["## At a glance", "", *glance.bullets(panels, text.scope(models, labels, n_seeds, langs), rankings), ""]
    more = details(panels, glance.uncurved(panels, multi))
    absent = [ABSENT[name] for name in FIGURES if not drawn.get(name)]
    if absent:
        more.append("Not in this run: " + "; ".join(absent) + ".")
    lines += ["## More from the numbers", "", *(f"- {sentence}" for sentence in more), ""]
    extrapolated = glance.extrapolation_table(panels, multi)
    if extrapolated:
        lines += [
            f"## What it would take to come within {numbers.WITHIN:.0f}% of CPT-only",
            "",
            text.CAPTIONS["extrapolation"],
            "",
            *extrapolated,
        ]
    note = curve_note(panels)
    for name in FIGURES:
        if drawn.get(name):
            caption = text.CAPTIONS[name] + (note if name == "learning_curves" else "")
            lines += [f"## {TITLES[name].split(':')[0]}", "", f"![{TITLES[name]}]({name}.png)", "", caption, ""]
    for panel, ranking in zip(panels, rankings, strict=True):
        several = len({r["k"] for r in panel.expanded()}) > 1
        caption = (text.CAPTIONS["table_k"].format(k=panel.main_k()) if several else "") + text.CAPTIONS["table"]
        caption += text.CAPTIONS["table_curves"] + note if panel.curves() else ""
        if any(r.get("served", (None,))[0] is not None for r in panel.rows):
            caption += text.CAPTIONS["table_served"]
        name = panel_name(panel.model, panel.language, multi)
        lines += [f"## {name}", "", *text.table(panel), caption, ""]
        ranked = glance.ranking_table(panel, ranking)
        if ranked:
            lines += [f"### {name}: the initializations ranked", "", *ranked, text.CAPTIONS["ranking"], ""]
        if panel.fidelity:
            lines += [
                f"### {name}: served in llama.cpp",
                "",
                *text.fidelity_table(panel),
                text.CAPTIONS["fidelity"],
                "",
            ]
    return "\n".join(lines)


def build(frame: pd.DataFrame, root: Path, out: Path, labels: list[str]) -> str:
    """Write the page's figures and findings.md / findings.html under ``out``; returns the Markdown."""
    out.mkdir(parents=True, exist_ok=True)
    panels = numbers.panels(frame, numbers.read_curves(root), numbers.read_fidelity(root), numbers.read_sentences(root))
    own = labels_for(labels, ["ppl", "mt"])
    drawn = {name: bool(getattr(plots, name)(panels, out / name, own)) for name in FIGURES}
    models = list(dict.fromkeys(str(m) for m in frame["model"])) if not frame.empty else []
    md = page(panels, drawn, own, models, numbers.seeds(frame)) if panels else "# Findings\n\nNo adapted cell yet.\n"
    write_text(out / "findings.md", md)
    images = {f"{name}.png": out / f"{name}.png" for name, done in drawn.items() if done}
    write_text(out / "findings.html", to_html(md, images))
    log.info("findings: %d panels, figures %s -> %s", len(panels), [n for n, d in drawn.items() if d], out)
    return md


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m workflow_scripts.findings", description=__doc__)
    p.add_argument("--results", required=True, type=Path, help="results/<run>/tables/results.csv (rule tables)")
    p.add_argument(
        "--root",
        type=Path,
        help="the run folder holding <model>/<lang>/<method>/curve.tsv (default: two levels above --results)",
    )
    p.add_argument("--out", required=True, type=Path, help="output folder, e.g. results/<run>/findings")
    p.add_argument("--data-label", action="append", help="data description (default: read from results.md)")
    p.add_argument("--log")
    a = p.parse_args(argv)
    setup_logging(a.log)
    frame = read_results(a.results)
    labels = a.data_label or data_labels(a.results.with_suffix(".md"))
    build(frame, a.root or a.results.resolve().parent.parent, a.out, labels)


if __name__ == "__main__":
    main()
