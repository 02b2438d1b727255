"""Speed on the log-likelihood tasks mc and gmmlu (paper 002 Table 4b; the Speedup rows of Tables 6, 10a and 11).

The work of a log-likelihood task is a forward pass over the prompt and the choices; nothing is generated. The paper
timed the one token these tasks emit, so its T/S there is the time per item: the speed-up comes from the prompt, which
an expanded vocabulary cuts into fewer tokens. This module times that forward pass, with the warm-up, repeats, pairing
with Source and units of generation (``measure``):

- **Items**: rows of the task's evaluation split read through the harness's own task definition
  (``harness.tasks.task_config(task, lang, folder).prompt_function``), so the timed text is the text LightEval scores:
  the context is LightEval's plain-text prompt of the item (``PromptManager``, zero-shot: the few-shot examples the
  harness prepends are the same kind of text and would only lengthen every prompt alike), the choices are the Doc's.
  Rows the task's ``hf_filter`` or its prompt function drops (it returns None) are skipped.
- **Tokens**: as LightEval's ``tok_encode_pair(pairwise=True)``: the context with the tokenizer's special tokens, each
  choice on its own without (trailing spaces of the context move to the choices).
- **One measurement** of an item: one forward pass (``Decoder.score_choices``) that yields every choice's
  log-probability, logits of the scored positions only. The lettered MCF choices are single tokens, all scored by the
  context's last position, so the pass reads the context once (LightEval's backend reads it once per choice: the
  same log-probabilities at four times the work, which would scale Source's and the model's time alike); choices of
  several tokens are scored as LightEval batches them, one ``context + choice`` sequence each.
- **Units**: ``chars_per_second`` counts the characters of the prompt and the choices scored (each once);
  ``tokens_per_second`` the model's tokens of them; ``source_tokens_per_second`` the same text in Source's
  tokenizer; ``items_per_second`` the items (the paper's T/S on these tasks: one generated token per item). On
  identical items every speed-up but the own-token one equals the time ratio, and ``token_ratio_bound`` (source ÷
  model tokens of that text) bounds it.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from workflow_scripts.speed.decoders import Decoder
from workflow_scripts.speed.units import TextCounts, bound, summary

VARIANT = {"mode": "loglikelihood", "decoding": "choices", "batch_size": 1}


@dataclass
class ChoiceItem:
    """One log-likelihood item: LightEval's context and the choices it scores."""

    context: str
    choices: list[str]


def choice_items(task: str, lang: str, folder: str | Path, n: int | None) -> list[ChoiceItem]:
    """The first ``n`` items of ``task`` (mc, gmmlu) for ``lang`` from ``folder`` (hub layout), as the harness's task
    definition builds them; read through a private ``datasets`` cache, as the harness reads."""
    import datasets
    from lighteval.tasks.prompt_manager import PromptManager

    from workflow_scripts.harness.run import private_datasets_cache
    from workflow_scripts.harness.tasks import task_config

    config = task_config(task, lang, folder)
    manager = PromptManager(use_chat_template=False)
    items: list[ChoiceItem] = []
    with tempfile.TemporaryDirectory() as cache, private_datasets_cache(cache):
        rows = datasets.load_dataset(str(folder), config.hf_subset, split=config.evaluation_splits[0])
        for row in rows:
            if n is not None and len(items) >= n:
                break
            if getattr(config, "hf_filter", None) is not None and not config.hf_filter(row):
                continue  # the rows LightEval would not evaluate (the task's hf_filter)
            doc = config.prompt_function(row, config.name)
            if doc is not None:
                items.append(ChoiceItem(manager.prepare_prompt(doc), [str(c) for c in doc.choices]))
    if not items:
        raise ValueError(f"{folder}: no {task} items for {lang} (subset {config.hf_subset})")
    return items


def encode_pair(tokenizer, context: str, choices: list[str]) -> tuple[list[int], list[list[int]]]:
    """Context and choice ids as LightEval's ``tok_encode_pair(pairwise=True)`` makes them."""
    spaces = len(context) - len(context.rstrip())
    if spaces:
        choices, context = [context[-spaces:] + c for c in choices], context[:-spaces]
    ids = tokenizer(context)["input_ids"]
    if ids and ids[-1] == tokenizer.eos_token_id:
        ids = ids[:-1]
    return ids, [tokenizer(c, add_special_tokens=False)["input_ids"] for c in choices]


def item_counts(item: ChoiceItem, tokenizer, source_tokenizer) -> TextCounts:
    """Counts of the prompt and the choices one item scores: characters, model tokens and Source's tokens."""
    ctx, choices = encode_pair(tokenizer, item.context, item.choices)
    src_ctx, src_choices = encode_pair(source_tokenizer, item.context, item.choices)
    return TextCounts(
        chars=len(item.context) + sum(len(c) for c in item.choices),
        tokens=len(ctx) + sum(map(len, choices)),
        source_tokens=len(src_ctx) + sum(map(len, src_choices)),
    )


def time_choices(
    decoder: Decoder,
    tokenizer,
    items: list[ChoiceItem],
    *,
    repeats: int,
    warmup: int,
    baseline: tuple[Decoder, object] | None = None,
) -> dict:
    """Score every item ``repeats`` times after ``warmup`` untimed passes over the first item.

    ``baseline`` (Source's decoder and tokenizer) is timed item by item next to the model, the order alternating as
    in teacher forcing (``measure.time_teacher_forced``); ``paired`` holds Source's seconds ÷ the model's per repeat."""
    encoded = [encode_pair(tokenizer, i.context, i.choices) for i in items]
    base = [encode_pair(baseline[1], i.context, i.choices) for i in items] if baseline else []
    for _ in range(warmup):
        decoder.score_choices(*encoded[0])
        if baseline:
            baseline[0].score_choices(*base[0])
    seconds, paired = [], []
    for r in range(repeats):
        total, base_total = 0.0, 0.0
        for i, pair in enumerate(encoded):
            source_first = baseline is not None and (i + r) % 2 == 1
            if source_first:
                base_total += baseline[0].score_choices(*base[i]).seconds
            total += decoder.score_choices(*pair).seconds
            if baseline and not source_first:
                base_total += baseline[0].score_choices(*base[i]).seconds
        seconds.append(total)
        if baseline:
            paired.append(base_total / total)
    return {"seconds": seconds, "paired": paired}


def choice_records(task: str, timing: dict, counts: TextCounts, n_items: int) -> list[dict]:
    """The task's records (``VARIANT``): each unit's rate per repeat with median and spread, the seconds, the bound
    and counts, and the paired speed-up when Source was timed beside."""
    seconds = timing["seconds"]
    per_unit = {
        "chars_per_second": [counts.chars / s for s in seconds],
        "source_tokens_per_second": [counts.source_tokens / s for s in seconds],
        "tokens_per_second": [counts.tokens / s for s in seconds],
        "items_per_second": [n_items / s for s in seconds],
        "seconds": seconds,
    }
    records = [{"task": task, "metric": m, **summary(v), "repeats": v, **VARIANT} for m, v in per_unit.items()]
    records.append({"task": task, "metric": "token_ratio_bound", "value": bound(counts), **VARIANT})
    for name in ("chars", "tokens", "source_tokens"):
        records.append({"task": task, "metric": f"total_{name}", "value": getattr(counts, name), **VARIANT})
    records.append({"task": task, "metric": "model_steps", "value": n_items, **VARIANT})
    if timing["paired"]:
        paired = timing["paired"]
        records.append({"task": task, "metric": "paired_speedup", **summary(paired), "repeats": paired, **VARIANT})
    return records


def run_choice_task(
    decoder: Decoder,
    tokenizer,
    source_tokenizer,
    task: str,
    items: list[ChoiceItem],
    *,
    repeats: int,
    warmup: int,
    source_decoder: Decoder | None = None,
) -> list[dict]:
    """Every record of one log-likelihood task, paired with ``source_decoder`` (Source's model) when given."""
    counts = sum((item_counts(i, tokenizer, source_tokenizer) for i in items), TextCounts(0, 0, 0))
    baseline = (source_decoder, source_tokenizer) if source_decoder is not None else None
    timing = time_choices(decoder, tokenizer, items, repeats=repeats, warmup=warmup, baseline=baseline)
    return choice_records(task, timing, counts, len(items))
