"""Timing: warm-up, repeats, device synchronisation, and the records of one task's prompts (paper 002 §6.5).

A repeat is one pass over every item of the task, timed call by call (``perf_counter`` between two device
synchronisations) and summed; each unit's rate of that repeat is its counts ÷ its seconds. The record's value is the
median over repeats; every repeat is kept. Decoding is seeded per batch, so every repeat does identical work.
"""

from __future__ import annotations

import platform
import time
from dataclasses import dataclass

from workflow_scripts.speed.decoders import Decoder
from workflow_scripts.speed.units import TextCounts, bound, count_text, new_token_share, rates, summary


@dataclass
class Item:
    """One item of a task: the prompt (the harness's template filled in) and the reference target text."""

    prompt: str
    target: str


def encode_items(tokenizer, items: list[Item]) -> tuple[list[list[int]], list[list[int]]]:
    """Prompt ids and target ids per item; the target is the reference after a space, tokenized in context (the
    ids of prompt + " " + target after the prompt's own ids), so that it is the text the model would have to emit."""
    prompts, targets = [], []
    for item in items:
        p = tokenizer(item.prompt)["input_ids"]
        full = tokenizer(f"{item.prompt} {item.target}")["input_ids"]
        if full[: len(p)] == p:
            t = full[len(p) :]
        else:  # the boundary merged into one token: tokenize the continuation on its own
            t = tokenizer(f" {item.target}", add_special_tokens=False)["input_ids"]
        prompts.append(p)
        targets.append(t)
    return prompts, targets


def _counts(decoder: Decoder, tokenizer, source_tokenizer, ids: list[int]) -> TextCounts:
    """Counts of the text of ``ids`` (the model tokenizer's): characters, the decoder's own tokens, source tokens."""
    return count_text(tokenizer.decode(ids, skip_special_tokens=True), decoder.own_tokens(ids), source_tokenizer)


def _timed(decoder: Decoder, fn, *args, **kwargs):
    decoder.sync()
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    decoder.sync()
    return out, time.perf_counter() - t0


def time_generation(
    decoder: Decoder,
    tokenizer,
    source_tokenizer,
    prompt_ids: list[list[int]],
    *,
    batch_size: int,
    decoding: str,
    max_new_tokens: int,
    repeats: int,
    warmup: int,
    seed: int,
) -> dict:
    """Generate for every prompt ``repeats`` times (after ``warmup`` untimed calls): counts and seconds per repeat."""
    batches = [prompt_ids[i : i + batch_size] for i in range(0, len(prompt_ids), batch_size)]
    for _ in range(warmup):
        decoder.generate(batches[0], max_new_tokens, decoding=decoding, seed=seed)
    per_repeat, outputs, steps = [], [], 0
    for _ in range(repeats):
        seconds, outputs, steps = 0.0, [], 0
        for b, batch in enumerate(batches):
            (ids, n_steps), s = _timed(
                decoder, decoder.generate, batch, max_new_tokens, decoding=decoding, seed=seed + b
            )
            seconds += s
            outputs += ids
            steps += n_steps
        counts = sum((_counts(decoder, tokenizer, source_tokenizer, o) for o in outputs), TextCounts(0, 0, 0))
        per_repeat.append((counts, seconds))
    return {"per_repeat": per_repeat, "outputs": outputs, "steps": steps}


def time_teacher_forced(
    decoder: Decoder,
    tokenizer,
    source_tokenizer,
    prompt_ids: list[list[int]],
    target_ids: list[list[int]],
    *,
    repeats: int,
    warmup: int,
    baseline: tuple[Decoder, list[list[int]], list[list[int]]] | None = None,
) -> dict:
    """Feed every reference through the KV cache ``repeats`` times; the timed steps are the target tokens' steps.

    ``baseline`` (Source's decoder, prompt ids, target ids of the same items) is timed item by item right next to the
    model, so both see the same machine load; ``paired`` holds Source's seconds ÷ the model's per repeat (on identical
    text, the speed-up in characters and in source tokens). The order alternates (item i of repeat r: Source first
    when i + r is odd), so that an effect of being timed first or second cannot bias every ratio the same way."""
    counts = sum((_counts(decoder, tokenizer, source_tokenizer, t) for t in target_ids), TextCounts(0, 0, 0))
    for _ in range(warmup):
        decoder.teacher_force(prompt_ids[0], target_ids[0])
        if baseline:
            baseline[0].teacher_force(baseline[1][0], baseline[2][0])
    per_repeat, paired, steps, matches, prefill = [], [], 0, 0, 0.0
    for r in range(repeats):
        forced, base_seconds = [], 0.0
        for i, (p, t) in enumerate(zip(prompt_ids, target_ids, strict=True)):
            source_first = baseline is not None and (i + r) % 2 == 1  # counterbalanced: see the docstring
            if source_first:
                base_seconds += baseline[0].teacher_force(baseline[1][i], baseline[2][i]).seconds
            forced.append(decoder.teacher_force(p, t))
            if baseline and not source_first:
                base_seconds += baseline[0].teacher_force(baseline[1][i], baseline[2][i]).seconds
        per_repeat.append((counts, sum(f.seconds for f in forced)))
        if baseline:
            paired.append(base_seconds / per_repeat[-1][1])
        steps, matches = sum(f.steps for f in forced), sum(f.matches for f in forced)
        prefill = sum(f.prefill_seconds for f in forced)
    return {"per_repeat": per_repeat, "steps": steps, "matches": matches, "prefill_seconds": prefill, "paired": paired}


def rate_records(task: str, timing: dict, **variant) -> list[dict]:
    """One record per unit (median, min, max, every repeat), the bound on the text timed, and the counts."""
    per_unit: dict[str, list[float]] = {}
    for counts, seconds in timing["per_repeat"]:
        for metric, value in rates(counts, seconds).items():
            per_unit.setdefault(metric, []).append(value)
    counts = timing["per_repeat"][0][0]
    records = []
    for metric, values in per_unit.items():
        records.append({"task": task, "metric": metric, **summary(values), "repeats": values, **variant})
    seconds = [s for _, s in timing["per_repeat"]]
    records.append({"task": task, "metric": "seconds", **summary(seconds), "repeats": seconds, **variant})
    records.append({"task": task, "metric": "token_ratio_bound", "value": bound(counts), **variant})
    for name in ("chars", "tokens", "source_tokens"):
        records.append({"task": task, "metric": f"total_{name}", "value": getattr(counts, name), **variant})
    records.append({"task": task, "metric": "model_steps", "value": timing["steps"], **variant})
    return records


def share_records(task: str, prompt_ids, outputs, source_vocab_size: int, **variant) -> list[dict]:
    """Figure 4: the share of new tokens (ids >= the source vocabulary size) in the task's inputs and outputs."""
    return [
        {
            "task": task,
            "metric": "input_new_token_share",
            "value": new_token_share(prompt_ids, source_vocab_size),
            **variant,
        },
        {
            "task": task,
            "metric": "output_new_token_share",
            "value": new_token_share(outputs, source_vocab_size),
            **variant,
        },
        {"task": task, "metric": "prompt_tokens", "value": sum(map(len, prompt_ids)) / len(prompt_ids), **variant},
        {"task": task, "metric": "generated_tokens", "value": sum(map(len, outputs)) / len(outputs), **variant},
    ]


def hardware(model) -> dict:
    """Where the timing ran: device (and GPU name), torch threads, CPU count, library versions, platform."""
    import os

    import torch
    import transformers

    info = {
        "device": str(model.device),
        "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "dtype": str(next(model.parameters()).dtype).removeprefix("torch."),
    }
    if model.device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(model.device)
    return info


@dataclass(frozen=True)
class Settings:
    """What to time (``evaluation.speed``): repeats after warm-up calls, the batch sizes, the decodings."""

    max_new_tokens: int = 128
    repeats: int = 3
    warmup: int = 1
    batch_sizes: tuple[int, ...] = (1,)
    decodings: tuple[str, ...] = ("greedy",)
    teacher_forced: bool = True
    seed: int = 42
    large_batch_decodings: tuple[str, ...] = ()  # decodings timed at the larger batch sizes (empty: every decoding)


def run_task(
    decoder: Decoder,
    tokenizer,
    source_tokenizer,
    task: str,
    items: list[Item],
    settings: Settings,
    source_decoder: Decoder | None = None,
) -> list[dict]:
    """Every record of one task: generation per decoding x batch size, then teacher forcing on the references.

    The new-token shares (Figure 4) come from batch size 1 of the first decoding: its prompts and outputs.
    ``source_decoder`` (Source's model) makes teacher forcing paired: ``paired_speedup`` (``time_teacher_forced``).
    """
    records = run_generation(decoder, tokenizer, source_tokenizer, task, items, settings)
    if settings.teacher_forced:
        records += run_teacher_forced(decoder, tokenizer, source_tokenizer, task, items, settings, source_decoder)
    return records


def run_generation(decoder: Decoder, tokenizer, source_tokenizer, task: str, items: list[Item], settings: Settings):
    """The generation records of one task: every decoding at batch size 1, and the larger batch sizes for
    ``settings.large_batch_decodings`` (every decoding when empty)."""
    prompt_ids, _ = encode_items(tokenizer, items)
    source_vocab_size = len(source_tokenizer)
    records = []
    for decoding in settings.decodings:
        for batch_size in settings.batch_sizes:
            if batch_size > 1 and settings.large_batch_decodings and decoding not in settings.large_batch_decodings:
                continue
            variant = {"mode": "generate", "decoding": decoding, "batch_size": batch_size}
            timing = time_generation(
                decoder,
                tokenizer,
                source_tokenizer,
                prompt_ids,
                batch_size=batch_size,
                decoding=decoding,
                max_new_tokens=settings.max_new_tokens,
                repeats=settings.repeats,
                warmup=settings.warmup,
                seed=settings.seed,
            )
            records += rate_records(task, timing, **variant)
            if decoding == settings.decodings[0] and batch_size == 1:
                records += share_records(task, prompt_ids, timing["outputs"], source_vocab_size, **variant)
    return records


def run_teacher_forced(
    decoder: Decoder,
    tokenizer,
    source_tokenizer,
    task: str,
    items: list[Item],
    settings: Settings,
    source_decoder: Decoder | None = None,
) -> list[dict]:
    """The teacher-forcing records of one task, paired with ``source_decoder`` when given."""
    prompt_ids, target_ids = encode_items(tokenizer, items)
    variant = {"mode": "teacher_forced", "decoding": "greedy", "batch_size": 1}
    baseline = (source_decoder, *encode_items(source_tokenizer, items)) if source_decoder else None
    timing = time_teacher_forced(
        decoder,
        tokenizer,
        source_tokenizer,
        prompt_ids,
        target_ids,
        repeats=settings.repeats,
        warmup=settings.warmup,
        baseline=baseline,
    )
    records = rate_records(task, timing, **variant)
    if timing["paired"]:
        paired = timing["paired"]
        records.append({"task": task, "metric": "paired_speedup", **summary(paired), "repeats": paired, **variant})
    records.append({"task": task, "metric": "argmax_matches", "value": timing["matches"], **variant})
    records.append({"task": task, "metric": "prefill_seconds", "value": timing["prefill_seconds"], **variant})
    return records
