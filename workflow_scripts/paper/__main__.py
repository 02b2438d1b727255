"""Command line: every paper table, figure and the cost table from a results CSV (see the package docstring)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import pandas as pd
import yaml

from workflow_scripts.io import setup_logging, write_text
from workflow_scripts.paper import costs, figures, render
from workflow_scripts.paper.cells import fill, is_papers_grid, rouge_metric, stand_ins, trim
from workflow_scripts.paper.headline import data_labels, labels_for, read_results, row_name
from workflow_scripts.paper.specs import FIGURE_TITLES, FIGURES, TABLES, report_title
from workflow_scripts.plan import paths

log = logging.getLogger("vocabexp")


def _read_optional_csv(path: Path) -> pd.DataFrame | None:
    return pd.read_csv(path) if path.is_file() else None


def write_tables(
    frame: pd.DataFrame, out: Path, labels: list[str], models: dict[str, str]
) -> tuple[list[str], list[str]]:
    """Every table spec this run's results fill, trimmed to what they fill (cells.trim) and written in four formats.
    Returns the Markdown of each table written, and the "not run by this configuration" lines: the tables not written
    and what the written ones leave out. A task's data label (the mc proxy) goes only to the tables that show it."""
    pages, not_run = [], []
    for spec in TABLES:
        filled, left = trim(fill(spec, frame, models))
        if filled is None:
            not_run.append(f"{report_title(spec.title, spec.caption)}: no result for any of its rows")
            continue
        own = labels_for(labels, [c.task for c in filled.spec.columns])
        md = render.markdown(filled, own)
        write_text(out / f"{spec.name}.md", md)
        write_text(out / f"{spec.name}.tex", render.latex(filled))
        write_text(out / f"{spec.name}.csv", render.to_csv(filled))
        write_text(out / f"{spec.name}.html", render.to_html(filled, own))
        pages.append(md)
        not_run += [f"{spec.title}, left out: {what}" for what in left]
    return pages, not_run


def write_figures(frame: pd.DataFrame, root: Path, out: Path, labels: list[str]) -> list[str]:
    """Figures 2-5 and the loss curves that the CSV and, when present, the files next to it under ``root`` fill;
    returns the titles of those with nothing to show (not written)."""
    top = paths.glob_root(root)
    reports = figures.read_reports(paths.found(paths.report(paths.tokenizer_dir("*", "*", "*", top))))
    frag = _read_optional_csv(Path(paths.analysis_file("fragmentation.csv", str(root))))
    figure3 = [(t, rouge_metric(frame)) if t == "sum" else (t, m) for t, m in figures.FIGURE3_TASKS]  # one ROUGE-L
    tasks5 = figures.FIGURE5_TASKS
    cells = frame.drop_duplicates("method").to_dict("records") if not frame.empty else []
    names = {str(c["method"]): row_name(c) for c in cells}
    losses = figures.read_losses(paths.found(paths.loss_curve("*", "*", "*", top)))
    drawn = {
        "figure2": figures.figure2(frag, frame, out / "figure2", labels_for(labels, [])),
        "figure3": figures.figure_vnew(
            frame, out / "figure3", figure3, FIGURE_TITLES["figure3"], labels_for(labels, [t for t, _ in figure3])
        ),
        "figure4": figures.figure4(reports, frame, out / "figure4", labels_for(labels, [])),
        "figure5": figures.figure_vnew(
            frame, out / "figure5", tasks5, FIGURE_TITLES["figure5"], labels_for(labels, [t for t, _ in tasks5])
        ),
        "loss_curves": figures.loss_curves(losses, out / "loss_curves", names, labels_for(labels, [])),
    }
    return [FIGURE_TITLES[name] for name, files in drawn.items() if not files]


# tables.md of a grid with none of the paper's models and languages: its tables would only be empty or mislabelled.
NOT_THE_PAPERS_GRID = (
    "# The paper's tables from this run's results\n\nNot the paper's grid: the results hold none of the paper's "
    "models and languages, so no table of the paper is filled; this run's results are tables/results.md and "
    "findings/findings.md (costs: costs.md).\n"
)


def index(pages: list[str], not_run: list[str]) -> str:
    """tables.md: the tables written, and one list of what this configuration did not run."""
    lines = ["# The paper's tables from this run's results", ""]
    if not_run:
        lines += [
            "## Not run by this configuration",
            "",
            "Tables and figures with nothing to show are not written; written tables leave out the rows, "
            "languages and columns no result fills.",
            "",
            *(f"- {n}" for n in not_run),
            "",
        ]
    return "\n".join(lines) + "\n" + "\n".join(pages)  # each page ends in a blank line


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m workflow_scripts.paper", description=__doc__)
    p.add_argument("--results", required=True, type=Path, help="results/<run>/tables/results.csv (rule tables)")
    p.add_argument("--out", required=True, type=Path, help="output folder, e.g. results/<run>/paper")
    p.add_argument(
        "--results-root",
        type=Path,
        help="folder with analysis/, benchmarks/, {model}/{lang}/ (default: two levels above --results)",
    )
    p.add_argument("--config", type=Path, help="the grid's config (model sizes for the requested hours)")
    p.add_argument("--size", action="append", metavar="MODEL=SIZE", help="a model's size class (as --config)")
    p.add_argument("--data-label", action="append", help="data description (default: read from results.md)")
    stand_in_help = (
        "results model standing in for a paper model, e.g. llama2=smollm2; 'none' for none (default: the first "
        "model stands in for llama2 when the results hold none of the paper's)"
    )
    p.add_argument("--stand-in", action="append", metavar="PAPER=MODEL", help=stand_in_help)
    p.add_argument("--log")
    a = p.parse_args(argv)
    setup_logging(a.log)
    frame = read_results(a.results)
    root = a.results_root or a.results.resolve().parent.parent
    labels = a.data_label or data_labels(a.results.with_suffix(".md"))
    requested = None
    if a.stand_in:
        requested = dict(s.split("=", 1) for s in a.stand_in if s != "none")
    models = stand_ins(frame, requested)
    if frame.empty or is_papers_grid(frame) or requested is not None:
        pages, not_run = write_tables(frame, a.out, labels, models)
        not_run += [f"{title}: nothing to show" for title in write_figures(frame, root, a.out, labels)]
        write_text(a.out / "tables.md", index(pages, not_run))
    else:
        write_text(a.out / "tables.md", NOT_THE_PAPERS_GRID)
    sizes = dict(s.split("=", 1) for s in a.size or [])
    if a.config:
        models_cfg = (yaml.safe_load(a.config.read_text()) or {}).get("models", {})
        sizes.update({m: spec.get("size") for m, spec in models_cfg.items()})
    devices = costs.run_devices(root)
    table = costs.cost_table(costs.read_benchmarks(root), sizes, devices)
    general = labels_for(labels, [])
    write_text(a.out / "costs.md", costs.markdown(table, general, devices))
    write_text(a.out / "costs.csv", costs.shown(table).to_csv(index=False))
    write_text(a.out / "costs.html", costs.to_html(table, general, devices))
    log.info("paper: %d tables, %d figures, %d cost rows -> %s", len(TABLES), len(FIGURES), len(table), a.out)


if __name__ == "__main__":
    main()
