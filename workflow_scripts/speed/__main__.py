"""Command line of the speed step (rule measure_speed): ``python -m workflow_scripts.speed --model M
--source-tokenizer S --pairs mt.tsv --lang th --out speed.json``; see the package docstring for what it times."""

from __future__ import annotations

import argparse

from workflow_scripts.inference import DECODING, add_common_args, read_cell
from workflow_scripts.io import set_threads, setup_logging
from workflow_scripts.speed import __doc__ as PACKAGE_DOC
from workflow_scripts.speed.items import add_mt_item_args
from workflow_scripts.speed.job import run
from workflow_scripts.speed.settings import JobSettings


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=PACKAGE_DOC, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(p, batch_size=4)
    p.add_argument("--source-tokenizer", required=True, help="the SOURCE model's folder (its tokenizer re-counts text)")
    add_mt_item_args(p)
    p.add_argument(
        "--sum-data",
        default=None,
        help="the sum dataset folder the harness evaluates (hub layout): time the sum task too",
    )
    p.add_argument(
        "--choice-data",
        action="append",
        default=[],
        metavar="TASK=FOLDER",
        help="a log-likelihood task and its dataset folder (hub layout): time its forward "
        "passes over prompt and choices (workflow_scripts.speed.choices); repeatable",
    )
    p.add_argument(
        "--choice-fewshot",
        action="append",
        default=[],
        metavar="TASK=N",
        help="few-shot examples in the timed contexts of a --choice-data task, as the harness evaluates "
        "it (evaluation.<task>.fewshot); default: the task's own (its spec's fewshot); "
        "repeatable",
    )
    p.add_argument(
        "--large-batch-decodings",
        nargs="*",
        default=None,
        choices=sorted(DECODING),
        help="decodings timed at --batch-size (default: every decoding)",
    )
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--decodings", nargs="+", default=["greedy"], choices=sorted(DECODING))
    p.add_argument("--no-teacher-forced", action="store_true", help="skip teacher forcing")
    p.add_argument(
        "--paired",
        action="store_true",
        help="teacher-force Source's model (--source-tokenizer's folder) item by item next to this one: "
        "a speed-up both sides of which saw the same machine load (paired_speedup)",
    )
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--mumo-k", type=int, default=10, help="a MuMo --model: candidates per step (MuMo's k)")
    p.add_argument("--mumo-no-verify", action="store_true", help="a MuMo --model: decode without verification")
    return p


def parse_args(argv: list[str] | None) -> JobSettings:
    """The job's settings from the command line; a wrong option exits with argparse's usage and its message."""
    p = parser()
    try:
        return JobSettings.from_options(vars(p.parse_args(argv)))
    except ValueError as e:
        p.error(str(e))


def main(argv: list[str] | None = None) -> None:
    """Time every unit, saving each unit's records as it finishes; a rerun with the same arguments skips the units
    its partial file holds, so the final JSON is the one an uninterrupted run writes (``job``)."""
    job = parse_args(argv)
    setup_logging(job.log)
    set_threads(job.threads)
    run(job, read_cell(job.cell))


if __name__ == "__main__":
    from workflow_scripts.io import cli_main

    cli_main(main)  # expected failures (bad input files) as one line, exit 1
