"""The command line of the LAPT step (``python -m workflow_scripts.lapt``, called by rules/lapt.smk)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
from pathlib import Path

from workflow_scripts.io import set_threads, setup_logging, write_json
from workflow_scripts.lapt import shard, testhooks
from workflow_scripts.lapt.checkpoint import remove_checkpoint
from workflow_scripts.lapt.curve import CurveSpec
from workflow_scripts.lapt.gate import gate_from_files
from workflow_scripts.lapt.hparams import DEFAULT_HPARAMS
from workflow_scripts.lapt.loop import train
from workflow_scripts.lapt.objective import OBJECTIVES
from workflow_scripts.lapt.procedures import PROCEDURES
from workflow_scripts.lapt.tracking import TrackingSpec

log = logging.getLogger("vocabexp.lapt")

STOP_SIGNALS = (signal.SIGTERM, signal.SIGUSR1)


def parser() -> argparse.ArgumentParser:
    """The LAPT step's arguments (rules/lapt.smk passes them)."""
    p = argparse.ArgumentParser(
        prog="python -m workflow_scripts.lapt",
        description=sys.modules[__package__].__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--model", required=True, help="HF model folder with its tokenizer (source or initialized expanded)")
    p.add_argument("--train", required=True, help="adaptation corpus D, one sentence a line")
    p.add_argument("--procedure", required=True, choices=sorted(PROCEDURES))
    p.add_argument("--objective", default="clm", choices=OBJECTIVES)
    p.add_argument("--seq-len", type=int, required=True)
    p.add_argument("--hparams", default="{}", help=f"JSON dict overriding {json.dumps(DEFAULT_HPARAMS)}")
    p.add_argument("--out", required=True, help="output HF model folder")
    p.add_argument("--stats", required=True, help="output JSON with counts, timing and memory")
    p.add_argument("--loss-curve", required=True, help="output TSV: step, epoch, lr, loss, tokens_seen")
    p.add_argument("--checkpoint-dir", required=True, help="resume folder (deleted once all outputs are written)")
    rows = p.add_mutually_exclusive_group()
    rows.add_argument("--n-source-rows", type=int, help="EEVE: source vocabulary size (rows >= it are new tokens)")
    rows.add_argument("--init-report", help="the initialize step's report JSON (EEVE: its vocab.source_matrix_rows)")
    p.add_argument("--no-init-gate", action="store_true", help="skip the step-0 check (training.init_gate: false)")
    curve = p.add_argument_group("held-out curve (training.curve_points; curve.py)")
    curve.add_argument("--curve-points", type=int, default=0, help="points: step 0 and evenly spaced steps (0: none)")
    curve.add_argument("--curve-text", help="held-out text, one sentence a line (the ppl step's)")
    curve.add_argument("--curve-n", type=int, help="its first n sentences (the ppl step's n; default all)")
    curve.add_argument("--curve-batch-size", type=int, default=8, help="sentences per forward (the ppl step's)")
    curve.add_argument("--curve", help="output TSV: step, tokens, bits_per_char, n_sentences")
    p.add_argument("--tracking", help="JSON of a tracking.TrackingSpec: send the run's numbers to a tracker")
    p.add_argument("--threads", type=int)
    p.add_argument("--log")
    return p


def main(argv: list[str] | None = None) -> None:
    """Train, write the stats, then delete the checkpoint; SIGTERM or SIGUSR1 checkpoint and stop after the step.

    Under ``torchrun --nproc-per-node N`` each process runs this; they shard the model (shard.py) and rank 0 writes.
    The tests' kill, hold and signal points (testhooks.py) join the loop as step hooks when their variables are set.
    """
    p = parser()
    a = p.parse_args(argv)
    if a.curve_points < 0:
        p.error(f"--curve-points {a.curve_points}: give 0 (no curve) or more points")
    if a.curve_points and not (a.curve_text and a.curve):
        p.error("--curve-points > 0 needs --curve-text (the held-out text) and --curve (the output TSV)")
    spec = None
    if a.curve_points:
        spec = CurveSpec(a.curve_points, Path(a.curve_text), a.curve_n, a.curve_batch_size, Path(a.curve))
    n_source_rows = a.n_source_rows
    if a.init_report:
        n_source_rows = int(json.loads(Path(a.init_report).read_text(encoding="utf-8"))["vocab"]["source_matrix_rows"])
    setup_logging(a.log)
    if int(os.environ.get("RANK", "0")):  # one log of the run: the other processes report only problems
        logging.getLogger("vocabexp").setLevel(logging.WARNING)
    set_threads(a.threads)
    gate = None if a.no_init_gate or not a.init_report else gate_from_files(a.init_report, a.train)
    # Slurm sends SIGTERM at the time limit (or a chosen signal before it with --signal): finish the step, checkpoint,
    # exit non-zero; the rerun resumes.
    stop_requested: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, frame: stop_requested.append(signum)) for sig in STOP_SIGNALS}
    try:
        stats = train(
            a.model,
            a.train,
            a.out,
            procedure=a.procedure,
            objective=a.objective,
            seq_len=a.seq_len,
            hparams=json.loads(a.hparams),
            checkpoint_dir=a.checkpoint_dir,
            loss_curve=a.loss_curve,
            should_stop=lambda: bool(stop_requested),
            n_source_rows=n_source_rows,
            curve=spec,
            init_gate=gate,
            tracking=TrackingSpec.from_json(a.tracking) if a.tracking else None,
            step_hooks=testhooks.from_environment(),
        )
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        shard.close()
    if int(os.environ.get("RANK", "0")):  # a sharded run's other processes: rank 0 writes the files
        return
    write_json(a.stats, stats)
    # Only now is the run complete: a crash before this line resumes at the final step and rewrites the outputs.
    remove_checkpoint(a.checkpoint_dir)
    log.info("LAPT done: %s", {k: stats[k] for k in ("steps", "first_loss", "final_loss", "tokens_per_second")})
