"""MuMo generation speed on the mt prompts at batch size 1 (the agreed speed.json records; MuMo §4.1 "Tokens/sec").

``tokens_per_second`` counts MuMo steps (one accepted candidate each), ``source_tokens_per_second`` the generated text
re-tokenized by the source tokenizer, ``chars_per_second`` its characters. Each repeat times every prompt once (after
one untimed warm-up call); the value is the median over repeats.
"""

from __future__ import annotations

import statistics
import time

from workflow_scripts.mumo.decode import DecodeSettings, mumo_generate
from workflow_scripts.mumo.head import MuMo


def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(
    mumo: MuMo, tokenizer, prompts: list[str], settings: DecodeSettings, *, max_new_tokens: int, repeats: int = 3
) -> tuple[list[dict], dict]:
    """Speed records (median over ``repeats``) and details (counts, seconds per repeat)."""
    stop = {"eos_ids": {tokenizer.eos_token_id} - {None}, "stop_strings": ("\n",), "tokenizer": tokenizer}
    encoded = [tokenizer.encode(p) for p in prompts]
    mumo_generate(mumo, encoded[0], settings, max_new_tokens=max_new_tokens, **stop)  # warm-up, not timed
    rates: dict[str, list[float]] = {"tokens_per_second": [], "source_tokens_per_second": [], "chars_per_second": []}
    seconds_per_repeat = []
    for _ in range(repeats):
        steps = tokens = chars = 0
        seconds = 0.0
        for ids in encoded:
            _sync(mumo.device)
            t0 = time.perf_counter()
            out = mumo_generate(mumo, ids, settings, max_new_tokens=max_new_tokens, **stop)
            _sync(mumo.device)
            seconds += time.perf_counter() - t0
            text = tokenizer.decode(out.source_ids, skip_special_tokens=True)
            steps += len(out.steps)
            tokens += len(tokenizer.encode(text, add_special_tokens=False))
            chars += len(text)
        seconds_per_repeat.append(round(seconds, 4))
        rates["tokens_per_second"].append(steps / seconds)
        rates["source_tokens_per_second"].append(tokens / seconds)
        rates["chars_per_second"].append(chars / seconds)
    decoding = "paper" if settings.sample else "greedy"
    records = [
        {
            "task": "mt",
            "metric": metric,
            "value": statistics.median(values),
            "repeats": values,
            "mode": "generate",
            "decoding": decoding,
            "batch_size": 1,
        }
        for metric, values in rates.items()
    ]
    details = {
        "n": len(prompts),
        "max_new_tokens": max_new_tokens,
        "steps_total": steps,
        "source_tokens_total": tokens,
        "source_tokens_per_step": tokens / max(steps, 1),
        "seconds_per_repeat": seconds_per_repeat,
        "verify": settings.verify,
        "k": settings.k,
        "device": str(mumo.device),
    }
    return records, details
