"""Choose LAPT's learning rate and steps on a validation split that the reported numbers never use.

The held-out text (heldout.txt) is what the results page reports bits per character on; a setting chosen by looking at
it (or at the held-out curve, measured on the same sentences) flatters the page. This tool trains a finished run's
cells again, one candidate setting at a time, in a scratch folder, and measures bits per character on a validation
split: for a language whose corpus is l10n pairs, the pairs of the package that neither D, the held-out text nor the MT
test set took (disjoint from all three by construction); for any corpus, a file given with --validation (keep it apart
from the corpus you sampled D from). Source's bits per character on the same sentences is measured once.

    snakemake --cores 2                      # the run whose cells are tuned: its initialized models and D
    python -m tools.tune --lr 1e-4 2e-4 5e-4 1e-3 [--max-steps 16 24] [--lang th si] [--method Mean CPT-only]

Writes ``results/<run>/tuning/lapt.tsv`` (one row per language, cell and setting: validation bits per character, its
difference from Source's, training seconds) and prints it as a table. Nothing of the run is changed: the scratch
models are deleted after they are measured. docs/measurements.md, "The default's settings", shows a sweep.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import sys
import tempfile
import time
from pathlib import Path

import yaml

from workflow_scripts.io import UserError, cli_main, read_corpus, set_threads, write_text

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "schemas" / "config.schema.yaml"


def validation_sentences(layout, lang: str, given: str | None, n: int) -> tuple[list[str], str]:
    """Up to ``n`` validation sentences of ``lang`` and where they come from: ``given``, or the language's l10n pairs
    that D, heldout.txt and mt.tsv did not take."""
    if given:
        return read_corpus(given, what="validation text")[:n], given
    if layout.corpus_kind(lang) != "l10n":
        raise UserError(
            f"languages.{lang}.corpus is {layout.corpus_kind(lang)!r}: give a validation file with --validation "
            "(sentences of the language kept apart from the corpus D is sampled from)"
        )
    pairs = Path(layout.data_file(lang, "train.txt")).with_name("pairs.tsv")
    used = set()
    for name in ("train.txt", "heldout.txt"):
        used |= set(read_corpus(layout.data_file(lang, name), what=name))
    with open(layout.data_file(lang, "mt.tsv"), encoding="utf-8") as f:
        used |= {line.rstrip("\n").split("\t")[1] for line in f if "\t" in line}
    with open(pairs, encoding="utf-8") as f:
        targets = [line.rstrip("\n").split("\t")[1] for line in f if "\t" in line]
    spare = list(dict.fromkeys(t for t in targets if t.strip() and t not in used))
    if not spare:
        raise UserError(f"{pairs}: every pair went to D, heldout.txt or mt.tsv; give a file with --validation")
    return spare[:n], f"{pairs} (pairs outside D, heldout.txt and mt.tsv)"


def bpc(folder: str | Path, sentences: list[str], batch_size: int) -> float:
    """Bits per character of the model in ``folder`` on ``sentences`` (the perplexity step's measure, in fp32)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from workflow_scripts.lapt.curve import bits_per_char

    model = AutoModelForCausalLM.from_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    return bits_per_char(model, tokenizer, sentences, batch_size=batch_size, device_type="cpu", bf16=False)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command-line options: the config, the languages, model and methods to tune, and the settings to try."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--configfile", default="config.yaml")
    p.add_argument("--lang", nargs="+", help="languages (default: all of the config)")
    p.add_argument("--model", help="the model (default: the config's first)")
    p.add_argument("--method", nargs="+", help="method labels, e.g. Mean CPT-only (default: every trained method)")
    p.add_argument("--lr", nargs="+", type=float, required=True, help="learning rates to try")
    p.add_argument("--max-steps", nargs="+", type=int, help="training.max_steps values to try (default: the config's)")
    p.add_argument("--validation", help="a validation file (one sentence a line); needed where the corpus is not l10n")
    p.add_argument("--n", type=int, default=100, help="validation sentences (default 100)")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--threads", type=int, default=2)
    return p.parse_args(argv)


def chosen_methods(plan, labels: list[str] | None) -> list:
    """The plan's trained methods (no post-hoc step, no MuMo) whose label is in ``labels`` (all of them without
    ``labels``); a user error naming the trained methods when a label is none of theirs or none is chosen."""
    trained = [m for m in plan.methods if m.trains and m.posthoc == "none" and not m.is_mumo]
    chosen = [m for m in trained if not labels or m.label in labels]
    unknown = sorted(set(labels or []) - {m.label for m in trained})
    if unknown or not chosen:
        raise UserError(f"--method {unknown or labels}: the config's trained methods are {[m.label for m in trained]}")
    return chosen


def main(argv: list[str] | None = None) -> None:
    a = parse_args(argv)

    from snakemake.settings.types import ResourceSettings

    from workflow_scripts.lapt.loop import train
    from workflow_scripts.plan import paths
    from workflow_scripts.plan.build import ConfigError, check_plan
    from workflow_scripts.plan.grid import cell_hparams, first_entries
    from workflow_scripts.plan.paths import Layout
    from workflow_scripts.plan.runs import DOWNLOADS_ROOT

    set_threads(a.threads)
    configfile = Path(a.configfile)
    config = yaml.safe_load(configfile.read_text(encoding="utf-8"))
    try:
        plan = check_plan(config, [configfile], Path.cwd(), ResourceSettings(), SCHEMA)
    except ConfigError as e:
        raise UserError(str(e)) from None
    methods = {m.slug: m for m in plan.methods}
    layout = Layout(config, methods, plan.results, str(DOWNLOADS_ROOT))
    model = a.model or next(iter(config["models"]))
    langs = a.lang or list(config["languages"])
    chosen = chosen_methods(plan, a.method)
    first = first_entries(config)
    steps = a.max_steps or [None]
    out = Path(plan.results) / "tuning" / "lapt.tsv"
    rows: list[dict] = []
    for lang in langs:
        sentences, source = validation_sentences(layout, lang, a.validation, a.n)
        print(f"{lang}: {len(sentences)} validation sentences from {source}", file=sys.stderr)
        source_dir = layout.source_model(model)
        missing = [f for f in (source_dir, layout.data_file(lang, "train.txt")) if not Path(f).exists()]
        if missing:
            raise UserError(f"{missing[0]} does not exist: run the workflow first (snakemake --cores 2)")
        source_bpc = bpc(source_dir, sentences, a.batch_size)
        rows.append(row(lang, "Source", None, None, source_bpc, source_bpc, 0.0, len(sentences)))
        for m, lr, max_steps in itertools.product(chosen, a.lr, steps):
            start = m.expands and layout.init_dir(model, lang, m)
            if start and not Path(start).exists():
                raise UserError(f"{start} does not exist: run the workflow first (snakemake --cores 2)")
            hparams = {**cell_hparams(config, model, m, first[m.slug]), "seed": config["seed"], "lr": lr}
            if max_steps is not None:
                hparams["max_steps"] = max_steps
            n_source_rows = None
            if m.expands:
                report = json.loads(Path(paths.report(start)).read_text(encoding="utf-8"))
                n_source_rows = int(report["vocab"]["source_matrix_rows"])
            with tempfile.TemporaryDirectory(prefix="tune-", dir=plan.results) as scratch:
                began = time.time()
                stats = train(
                    start or source_dir,
                    layout.data_file(lang, "train.txt"),
                    Path(scratch, "model"),
                    procedure=m.procedure,
                    objective=m.objective,
                    seq_len=m.seq_len,
                    hparams=hparams,
                    checkpoint_dir=Path(scratch, "checkpoints"),
                    n_source_rows=n_source_rows,
                )
                seconds = time.time() - began
                value = bpc(Path(scratch, "model"), sentences, a.batch_size)
            rows.append(row(lang, m.label, lr, stats["steps"], value, source_bpc, seconds, len(sentences)))
            print(format_row(rows[-1]), file=sys.stderr)
    write_rows(out, rows)
    print(markdown(rows))
    print(f"written: {out}", file=sys.stderr)


def row(lang, label, lr, steps, value, source, seconds, n) -> dict:
    return {
        "language": lang,
        "method": label,
        "lr": lr,
        "steps": steps,
        "validation_bpc": round(value, 4),
        "vs_source": round(value - source, 4),
        "train_seconds": round(seconds, 1),
        "sentences": n,
    }


def format_row(r: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in r.items())


def write_rows(path: Path, rows: list[dict]) -> None:
    import io

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), delimiter="\t", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, buf.getvalue())


def markdown(rows: list[dict]) -> str:
    head = "| language | method | lr | steps | validation bits/char | vs Source | training s |"
    lines = [head, "|---|---|---|---|---|---|---|"]
    for r in rows:
        lr = "–" if r["lr"] is None else f"{r['lr']:g}"
        steps = "–" if r["steps"] is None else r["steps"]
        lines.append(
            f"| {r['language']} | {r['method']} | {lr} | {steps} | {r['validation_bpc']:.3f} | "
            f"{r['vs_source']:+.3f} | {r['train_seconds']:.0f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    cli_main(main)
