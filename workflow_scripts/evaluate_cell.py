"""One evaluation job for one cell: its steps (the tasks whose spec says ``cell_job``: ppl, mt, mc, speed) run one
after another in one Python process.

    python -m workflow_scripts.evaluate_cell --model DIR --cell JSON --threads 1 \\
        --ppl "--text heldout.txt --n 100 --out ppl.json" --mt "--lang th --pairs mt.tsv ... --out mt.json" ...

Each ``--STEP`` takes the arguments of that step's own command line (``workflow_scripts.perplexity``,
``workflow_scripts.harness --task mt|mc``, ``workflow_scripts.speed``) without ``--model``, ``--cell`` and
``--threads``, which this command passes to every step; each step writes the file it writes when run alone, in the
same format. What the single process saves is the start-up each separate job pays: importing torch, transformers
and LightEval (about 11 s of CPU for LightEval alone on a 2-core machine, docs/measurements.md), which for a 135M model
costs more than the evaluation itself. A module of its own: it runs steps of both the harness and the speed package.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import shlex
import time
from collections.abc import Callable

from workflow_scripts.io import set_threads, setup_logging
from workflow_scripts.plan.steps import CELL_STEPS as STEPS
from workflow_scripts.tasks import HARNESS, TASKS

log = logging.getLogger("vocabexp")


def runner(task: str) -> Callable[[list[str]], None]:
    """The step's command line run in this process: its module's own ``main`` (``TaskSpec.main``), else ``main`` of
    the program its rule runs (``TaskSpec.program``), the harness told the task."""
    spec = TASKS[task]
    if spec.main is not None:
        return spec.main
    module = spec.program
    prefix = ["--task", task] if module == HARNESS else []

    def run(argv: list[str]) -> None:
        program = importlib.import_module(module)
        if hasattr(program, "__path__"):  # a package: its command line is its __main__
            program = importlib.import_module(f"{module}.__main__")
        program.main([*prefix, *argv])

    return run


RUNNERS: dict[str, Callable[[list[str]], None]] = {task: runner(task) for task in STEPS}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="the cell's model folder")
    p.add_argument("--cell", required=True, help="grid cell as JSON, or a JSON file")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--log")
    for step in STEPS:
        p.add_argument(f"--{step}", default=None, metavar="ARGS", help=f"the {step} step's own arguments (one string)")
    a = p.parse_args(argv)
    if not any(getattr(a, step) for step in STEPS):
        p.error(f"nothing to run: give at least one of {', '.join('--' + s for s in STEPS)}")
    return a


def shared_argv(model: str, cell: str, threads: int | None, log_file: str | None) -> list[str]:
    """The arguments this command passes to every step."""
    return [
        *("--model", model, "--cell", cell),
        *(("--threads", str(threads)) if threads is not None else ()),
        *(("--log", log_file) if log_file else ()),
    ]


def main(argv: list[str] | None = None) -> None:
    a = parse_args(argv)
    setup_logging(a.log)
    set_threads(a.threads)
    shared = shared_argv(a.model, a.cell, a.threads, a.log)
    # every step's own arguments split before any model loads
    argvs = {s: [*shlex.split(getattr(a, s)), *shared] for s in STEPS if getattr(a, s)}
    steps = list(argvs)
    for step in steps:
        started = time.process_time(), time.perf_counter()
        RUNNERS[step](argvs[step])
        log.info(
            "cell step %s: %.1f s CPU, %.1f s wall",
            step,
            time.process_time() - started[0],
            time.perf_counter() - started[1],
        )


if __name__ == "__main__":
    from workflow_scripts.io import cli_main

    cli_main(main)  # expected failures (bad input files) as one line, exit 1
