"""Speed on the log-likelihood tasks (``timed`` in workflow_scripts/tasks/; paper 002 Table 4b; the Speedup rows of
Tables 6, 10a and 11).

The work of a log-likelihood task is a forward pass over the prompt and the choices; nothing is generated. The paper
timed the one token these tasks emit, so its T/S there is the time per item: the speed-up comes from the prompt, which
an expanded vocabulary cuts into fewer tokens. This module times that forward pass, with the warm-up, repeats, pairing
with Source and units of generation (``measure``):

- **Items**: the first ``n`` rows of the task's evaluation split (rows its ``hf_filter`` or prompt function drops are
  skipped), as LightEval documents of the harness's own task definitions (``harness.tasks.task_configs``) with the
  evaluated few-shot count, built by LightEval itself as the harness's pipeline builds them (``harness.run.task_docs``:
  its registry, loader, ``get_docs`` and few-shot sampler; a grouped task by member, each item with its member's
  examples). The context is LightEval's plain-text prompt of that document (``PromptManager``: instruction, few-shot
  examples with their answers, query), the choices are the document's: the text timed is the text the harness scores,
  few-shot examples included.
- **Tokens**: as LightEval's ``tok_encode_pair(pairwise=True)``: the context with the tokenizer's special tokens, each
  choice on its own without (trailing spaces of the context move to the choices). A context whose tokens and a
  choice's exceed the model's maximum length (``workflow_scripts.inference.model_max_length``) is cut from the
  left to fit, as LightEval's backend cuts it; ``choice_limits`` counts such items.
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


def choice_items(task: str, lang: str, folder: str | Path, n: int | None, fewshot: int = 0) -> list[ChoiceItem]:
    """The first ``n`` items of ``task`` (a log-likelihood task) for ``lang`` from ``folder`` (hub layout) in the order
    of the evaluation split, each with ``fewshot`` examples: the harness's contexts (module docstring)."""
    import datasets
    from lighteval.tasks.prompt_manager import PromptManager

    from workflow_scripts.harness.run import private_datasets_cache, task_docs
    from workflow_scripts.harness.tasks import task_configs

    configs = task_configs(task, lang, folder)
    for config in configs:
        config.num_fewshots = fewshot
    docs = task_docs(configs)  # each task's documents, keyed by the row's index in its filtered split
    by_row = {name: {int(doc.id): doc for doc in task} for name, task in docs.items()}
    with tempfile.TemporaryDirectory() as cache, private_datasets_cache(cache):
        rows = datasets.load_dataset(str(folder), configs[0].hf_subset, split=configs[0].evaluation_splits[0])
    seen = dict.fromkeys(by_row, 0)  # rows each task's filter has kept so far: the index its documents carry
    manager = PromptManager(use_chat_template=False)
    items: list[ChoiceItem] = []
    for row in rows:
        if n is not None and len(items) >= n:
            break
        # the task whose filter keeps the row (a grouped task: its member's; else the one task, no filter)
        name = next((c.name for c in configs if c.hf_filter is None or c.hf_filter(row)), None)
        if name is None:
            continue
        doc = by_row[name].get(seen[name])  # absent where the prompt function dropped the row
        seen[name] += 1
        if doc is not None:
            items.append(ChoiceItem(manager.prepare_prompt(doc), [str(c) for c in doc.choices]))
    if not items:
        raise ValueError(f"{folder}: no {task} items for {lang} (subset {configs[0].hf_subset})")
    return items


def encode_pair(
    tokenizer, context: str, choices: list[str], max_length: int | None = None
) -> tuple[list[int], list[list[int]]]:
    """Context and choice ids as LightEval's ``tok_encode_pair(pairwise=True)`` makes them; with ``max_length``, the
    context cut from the left so that it and its longest choice fit, as LightEval's backend cuts each sequence
    (the same cut for every choice where they are single tokens, as the MCF letters are)."""
    spaces = len(context) - len(context.rstrip())
    if spaces:
        choices, context = [context[-spaces:] + c for c in choices], context[:-spaces]
    ids = tokenizer(context)["input_ids"]
    if ids and ids[-1] == tokenizer.eos_token_id:
        ids = ids[:-1]
    choice_ids = [tokenizer(c, add_special_tokens=False)["input_ids"] for c in choices]
    if max_length is not None:
        room = _context_room(max_length, choice_ids)
        if len(ids) > room:
            ids = ids[len(ids) - room :]
    return ids, choice_ids


def _context_room(max_length: int, choice_ids: list[list[int]]) -> int:
    """The context tokens that fit beside the longest choice within ``max_length``."""
    return max(max_length - max(map(len, choice_ids), default=0), 0)


def choice_limits(items: list[ChoiceItem], tokenizer, max_length: int) -> int:
    """How many items ``encode_pair`` cuts to fit ``max_length`` in ``tokenizer`` (each item tokenized once)."""
    cut = 0
    for item in items:
        ctx, choice_ids = encode_pair(tokenizer, item.context, item.choices)
        cut += len(ctx) > _context_room(max_length, choice_ids)
    return cut


def item_counts(
    item: ChoiceItem, tokenizer, source_tokenizer, max_length: int | None = None, source_max_length: int | None = None
) -> TextCounts:
    """Counts of the prompt and the choices one item scores: characters of the whole text, model tokens and Source's
    tokens read (each cut to its model's ``max_length`` as ``encode_pair`` cuts)."""
    ctx, choices = encode_pair(tokenizer, item.context, item.choices, max_length)
    src_ctx, src_choices = encode_pair(source_tokenizer, item.context, item.choices, source_max_length)
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
    baseline: tuple[Decoder, object, int | None] | None = None,
    max_length: int | None = None,
) -> dict:
    """Score every item ``repeats`` times after ``warmup`` untimed passes over the first item, each context cut to
    ``max_length`` (``encode_pair``).

    ``baseline`` (Source's decoder, tokenizer and maximum length) is timed item by item next to the model, the order
    alternating as in teacher forcing (``measure.time_teacher_forced``); ``paired`` holds Source's seconds ÷ the
    model's per repeat."""
    encoded = [encode_pair(tokenizer, i.context, i.choices, max_length) for i in items]
    base = [encode_pair(baseline[1], i.context, i.choices, baseline[2]) for i in items] if baseline else []
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
    max_length: int | None = None,
    source_max_length: int | None = None,
) -> list[dict]:
    """Every record of one log-likelihood task, paired with ``source_decoder`` (Source's model) when given; contexts
    cut to the model's ``max_length`` (Source's: ``source_max_length``) as the harness cuts them."""
    counts = sum(
        (item_counts(i, tokenizer, source_tokenizer, max_length, source_max_length) for i in items), TextCounts(0, 0, 0)
    )
    baseline = (source_decoder, source_tokenizer, source_max_length) if source_decoder is not None else None
    timing = time_choices(
        decoder, tokenizer, items, repeats=repeats, warmup=warmup, baseline=baseline, max_length=max_length
    )
    return choice_records(task, timing, counts, len(items))
