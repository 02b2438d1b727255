"""The held-out learning curve of a LAPT run (``training.curve_points``): bits per character of the cell's held-out
text at step 0 (the initialized model) and at evenly spaced optimizer steps up to the last.

Every point is the evaluation's ppl computation (``perplexity.evaluate_ppl`` on the first ``evaluation.ppl.n``
sentences of the held-out file, in its batch size), run on the model being trained, in eval mode, under no_grad and
the loop's autocast; the train mode and every RNG state are restored afterwards, so a run with the curve trains
exactly the weights of a run without it. The last point is the trained model before it is saved: it equals the ppl
step's bits per character on the saved model up to the precision the two run in (docs/grid.md "Held-out learning
curve").
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

COLUMNS = ("step", "tokens", "bits_per_char", "n_sentences")

log = logging.getLogger("vocabexp.lapt")


@dataclass(frozen=True)
class CurveSpec:
    """What the curve measures: how many points, on the first ``n`` sentences of ``text`` (all: None) in batches of
    ``batch_size``, and the TSV it is written to."""

    points: int
    text: Path
    n: int | None
    batch_size: int
    out: Path


@dataclass
class CurvePlan:
    """A run's curve: its spec, the sentences, the steps measured and the sentences' hash (what a checkpoint's rows
    must have been measured on to be kept)."""

    spec: CurveSpec
    sentences: list[str]
    steps: list[int]
    sha256: str = field(init=False)

    def __post_init__(self) -> None:
        self.sha256 = hashlib.sha256("\n".join(self.sentences).encode("utf-8")).hexdigest()

    def resumed_rows(self, saved: dict[str, Any], step: int, checkpoint_dir: Path) -> list[dict[str, Any]]:
        """The rows of a checkpoint's curve (``saved``) measured on these sentences at these steps; a step before the
        resumed ``step`` that has no row cannot be measured again, and is reported."""
        rows = [r for r in saved["rows"] if r["step"] in self.steps] if saved.get("sha256") == self.sha256 else []
        have = {r["step"] for r in rows}
        lost = [s for s in self.steps if s < step and s not in have]
        if lost:
            log.warning(
                "curve: the checkpoint holds no point of steps %s on this held-out text; the curve lacks "
                "them (delete %s to measure them all)",
                lost,
                checkpoint_dir,
            )
        return rows


def curve_steps(total_steps: int, points: int) -> list[int]:
    """The optimizer steps after which the curve is measured: step 0 (before the first step), then ``points`` - 1
    more evenly spaced up to ``total_steps`` (rounded half up, duplicates dropped); none for ``points`` 0."""
    if points <= 0:
        return []
    if points == 1:
        return [0]
    gaps = points - 1
    return sorted({(2 * i * total_steps + gaps) // (2 * gaps) for i in range(points)})


def plan_curve(spec: CurveSpec | None, total_steps: int) -> CurvePlan | None:
    """The curve of a run of ``total_steps`` steps: the held-out sentences read (the ppl step's reading) and its
    steps; None when there is no spec or it asks for no point."""
    from workflow_scripts.inference import read_sentences

    if spec is None or spec.points <= 0:
        return None
    return CurvePlan(spec, read_sentences(spec.text, spec.n), curve_steps(total_steps, spec.points))


def bits_per_char(model, tokenizer, sentences: list[str], *, batch_size: int, device_type: str, bf16: bool) -> float:
    """Held-out bits per character of ``model`` (``perplexity.evaluate_ppl``) in eval mode, no_grad and bf16
    autocast when ``bf16``; the model's train mode and the Python, numpy and torch RNG states are restored after."""
    import torch

    from workflow_scripts.lapt.checkpoint import rng_state, set_rng_state
    from workflow_scripts.perplexity import evaluate_ppl

    was_training, rng = model.training, rng_state()
    model.eval()
    try:
        with torch.no_grad(), torch.autocast(device_type=device_type, dtype=torch.bfloat16, enabled=bf16):
            result = evaluate_ppl(model, tokenizer, sentences, batch_size=batch_size)
    finally:
        model.train(was_training)
        set_rng_state(rng)
    return next(r["value"] for r in result["records"] if r["metric"] == "bits_per_char")


def curve_row(step: int, tokens: int, bpc: float, n_sentences: int, seconds: float) -> dict[str, Any]:
    """One measured point (``seconds``: its measurement's wall time, kept for the stats)."""
    return {"step": step, "tokens": tokens, "bits_per_char": bpc, "n_sentences": n_sentences, "seconds": seconds}


def curve_tsv(rows: list[dict[str, Any]]) -> str:
    """The curve file: step, training tokens seen up to it, bits per character, sentences scored; by step."""
    lines = ["\t".join(COLUMNS)]
    lines += [
        f"{r['step']}\t{r['tokens']}\t{r['bits_per_char']:.6f}\t{r['n_sentences']}"
        for r in sorted(rows, key=lambda r: r["step"])
    ]
    return "\n".join(lines) + "\n"


def timed(fn, *args, **kwargs) -> tuple[Any, float]:
    """``fn(*args, **kwargs)`` and its wall time in seconds."""
    t0 = time.time()
    return fn(*args, **kwargs), time.time() - t0
