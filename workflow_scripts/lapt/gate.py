"""The step-0 sanity gate of an initialization (``training.init_gate``; docs/initialization.md "The step-0 gate").

Before the first optimizer step of an expanded cell, the LAPT job measures the held-out bits per character of the
initialized model and of the same model with its new rows replaced by Random's (the initialize step's Random, same
seed, from the per-dimension mean and std of the source rows the model holds). An initialization whose bits per
character are not finite, or more than ``GATE_TOLERANCE`` (relative) above Random's, stops the job with a
``UserError`` before any training: a broken initialization (rows of the wrong scale, NaN) would otherwise cost a
whole training run and look like a finding. The text is the cell's held-out curve text when the curve is on
(``training.curve_points``), else the first ``GATE_SENTENCES`` sentences of D (not held out, but nothing has been
trained on them yet). Random itself is not gated, nor CPT-only and Source (no initialization), nor vocabulary
replacement (its source rows are gone, so Random's draw cannot be repeated).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

from workflow_scripts.io import UserError
from workflow_scripts.lapt.curve import bits_per_char, timed

log = logging.getLogger("vocabexp.lapt")

# An initialization may be at most this much (relative) worse than Random at step 0. Sound methods are far better (the
# pilot: Mean 8.7 against Random 15.9 bits per character on Thai); the margin only absorbs noise on tiny models.
GATE_TOLERANCE = 0.02
GATE_SENTENCES = 32  # sentences of D scored when the run has no held-out curve


@dataclass(frozen=True)
class InitGate:
    """What the gate needs from the initialize step's report: the method, its seed, the new ids and V_s's size (the
    rows below it are the source rows), the saved dtype, and where the report is (for the message)."""

    method: str
    seed: int
    new_ids: list[int]
    n_source: int
    dtype: str
    report: str
    fallback_sentences: list[str]  # D's first sentences: the text when there is no held-out curve


def gate_from_report(report: dict[str, Any], path: str, corpus: list[str]) -> InitGate | None:
    """The gate of an expanded cell from its initialize report; None (with a log line) where no gate applies."""
    method = report.get("method")
    if method == "Random":
        log.info("init gate: not applied to Random itself")
        return None
    if report.get("vocab_mode") == "replace":
        log.info("init gate: not applied to vocabulary replacement (the source rows Random draws from are gone)")
        return None
    new_ids = [int(t["id"]) for t in report.get("tokens", [])]
    n_source = report.get("vocab", {}).get("source")
    if method is None or n_source is None or not new_ids or min(new_ids) < n_source:
        log.info("init gate: not applied (%s names no method, or no new tokens above the source ids)", path)
        return None
    dtype = str(report.get("dtype", "float32"))
    return InitGate(method, int(report.get("seed", 0)), new_ids, int(n_source), dtype, path, corpus[:GATE_SENTENCES])


def gate_from_files(report: str, train: str) -> InitGate | None:
    """``gate_from_report`` of an expanded cell's initialize report file and its corpus D file."""
    import json
    from pathlib import Path

    from workflow_scripts.io import read_corpus

    data = json.loads(Path(report).read_text(encoding="utf-8"))
    return gate_from_report(data, report, read_corpus(train, what="corpus D"))


def _matrices(model: Any) -> dict[str, tuple[Any, Any]]:
    """Per role, the (weight, bias or None) the initialize step wrote new rows into; a tied model has one."""
    inp = model.get_input_embeddings().weight
    head = model.get_output_embeddings()
    out = {"input": (inp, None)}
    if head.weight.data_ptr() != inp.data_ptr():
        out["output"] = (head.weight, getattr(head, "bias", None))
    return out


def random_rows(model: Any, gate: InitGate) -> dict[str, Any]:
    """Per role, Random's new rows for this model (``init_random`` on the model's source rows, the initialize step's
    seed), rounded through the dtype the initialized model was saved in, as the Random cell's model holds them."""
    import torch

    from workflow_scripts.initialize.methods.random_mean import init_random
    from workflow_scripts.initialize.registry import InitContext

    matrices = _matrices(model)
    # init_random reads only len(new_tokens), the seed and the source rows' statistics.
    ctx = InitContext(None, None, list(range(gate.n_source)), gate.new_ids, gate.seed, "output" not in matrices)
    saved = getattr(torch, gate.dtype, torch.float32)
    out = {}
    with torch.no_grad():
        for role, (weight, bias) in matrices.items():
            source = weight[: gate.n_source].detach().to("cpu")
            if bias is not None:
                source = torch.cat([source, bias[: gate.n_source].detach().to("cpu")[:, None]], 1)
            out[role] = init_random(source, ctx, role).rows.to(saved)
    return out


def check_init(
    model: Any, tokenizer: Any, gate: InitGate, sentences: list[str], *, batch_size: int, device_type: str, bf16: bool
) -> dict[str, Any]:
    """Measure the initialized model's and Random's step-0 bits per character on ``sentences`` and refuse (UserError)
    a non-finite value or one more than GATE_TOLERANCE above Random's; returns the record for the run's stats."""
    import torch

    if not sentences:
        log.info("init gate: no text to score; not applied")
        return {"method": gate.method, "skipped": "no text"}
    kwargs = {"batch_size": batch_size, "device_type": device_type, "bf16": bf16}
    bpc, seconds = timed(bits_per_char, model, tokenizer, sentences, **kwargs)
    advice = (
        f"the initialization is broken, so training was not started. Look at the rows' norms in {gate.report} "
        f"(stats.*.new_over_source); to train it anyway, set training.init_gate: false"
    )
    if not math.isfinite(bpc):
        raise UserError(
            f"initialization check: {gate.method}'s new rows give step-0 bits per character {bpc} on "
            f"{len(sentences)} sentences, not a finite number: {advice}"
        )
    replacement = random_rows(model, gate)
    idx = torch.as_tensor(gate.new_ids, dtype=torch.long)
    kept = {}
    with torch.no_grad():
        for role, (weight, bias) in _matrices(model).items():
            i = idx.to(weight.device)
            kept[role] = (weight[i].clone(), None if bias is None else bias[i].clone())
            rows = replacement[role].to(weight.device)
            weight[i] = rows[:, : weight.shape[1]].to(weight.dtype)
            if bias is not None:
                bias[i] = rows[:, weight.shape[1]].to(bias.dtype)
    try:
        random_bpc, random_seconds = timed(bits_per_char, model, tokenizer, sentences, **kwargs)
    finally:
        with torch.no_grad():
            for role, (weight, bias) in _matrices(model).items():
                i = idx.to(weight.device)
                weight[i] = kept[role][0]
                if bias is not None:
                    bias[i] = kept[role][1]
    limit = random_bpc * (1 + GATE_TOLERANCE)
    record = {
        "method": gate.method,
        "bits_per_char": bpc,
        "random_bits_per_char": random_bpc,
        "tolerance": GATE_TOLERANCE,
        "n_sentences": len(sentences),
        "seconds": round(seconds + random_seconds, 3),
    }
    log.info(
        "init gate: %s step-0 held-out bits/char %.4f, Random's %.4f (limit %.4f) on %d sentences",
        gate.method,
        bpc,
        random_bpc,
        limit,
        len(sentences),
    )
    if math.isfinite(random_bpc) and bpc > limit:
        raise UserError(
            f"initialization check: {gate.method}'s new rows give step-0 bits per character {bpc:.4f} on "
            f"{len(sentences)} sentences, worse than Random's {random_bpc:.4f} (same model, same new tokens, seed "
            f"{gate.seed}) by more than {GATE_TOLERANCE:.0%}: {advice}"
        )
    return record
