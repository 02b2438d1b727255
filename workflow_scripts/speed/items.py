"""The items a speed job times: the harness's prompts on the evaluation data of each task, with their references
(mt, sum) or choices (the log-likelihood tasks, ``choices``)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

from workflow_scripts.io import read_pairs
from workflow_scripts.languages import language_arg
from workflow_scripts.prompts import mt_query
from workflow_scripts.speed.measure import Item


def add_mt_item_args(p: argparse.ArgumentParser) -> None:
    """The options of the mt items and their timing, shared by the speed step and the serving speed
    (``serve.speed``): the pairs, the language, the reference's length, the repeats and warm-up passes."""
    p.add_argument("--pairs", required=True, help="mt TSV English<TAB>target")
    p.add_argument("--lang", required=True, type=language_arg)
    p.add_argument(
        "--reference-chars",
        type=int,
        default=0,
        help="teacher forcing: only the first N characters of each reference (0: all)",
    )
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)


def mt_items(pairs_file: str | Path, lang: str, n: int | None, reference_chars: int | None = None) -> list[Item]:
    """The mt items: the harness's prompt on the English side, the target side as the reference (its first
    ``reference_chars`` characters when given: teacher forcing then costs less, on the same text for every model)."""
    return [Item(mt_query(en, lang), target[:reference_chars]) for en, target in read_pairs(pairs_file, n)]


def sum_items(
    folder: str | Path, lang: str, n: int | None, reference_chars: int | None = None, tokenizer=None
) -> list[Item]:
    """The sum items: the harness's prompt on each article of the evaluation split (cut as the harness cuts it for
    ``tokenizer``), the summary as the reference; read through a private ``datasets`` cache, as the harness reads."""
    import tempfile

    import datasets

    from workflow_scripts.harness.datasets import task_source
    from workflow_scripts.harness.run import private_datasets_cache
    from workflow_scripts.prompts import sum_prompt

    source = task_source("sum", lang)
    with tempfile.TemporaryDirectory() as cache, private_datasets_cache(cache):
        rows = datasets.load_dataset(str(folder), source.subset, split=source.split)
        rows = [rows[i] for i in range(min(n or len(rows), len(rows)))]
    return [Item(sum_prompt(r["text"], lang, tokenizer), r["summary"][:reference_chars]) for r in rows]


def read_items(
    tokenizer,
    *,
    lang: str,
    n: int | None,
    pairs: str | Path,
    reference_chars: int | None,
    sum_data: str | Path | None,
    choice_fewshot: Mapping[str, int],
    choice_data: Mapping[str, str | Path],
) -> dict[str, list]:
    """The timed items per task: mt's from ``pairs``, sum's from ``sum_data`` when given (cut for ``tokenizer``), and
    each log-likelihood task's from its ``choice_data`` folder with its ``choice_fewshot`` examples."""
    items = {"mt": mt_items(pairs, lang, n, reference_chars)}
    if sum_data:
        items["sum"] = sum_items(sum_data, lang, n, reference_chars, tokenizer)
    if choice_data:
        from workflow_scripts.speed.choices import choice_items

        for task, folder in choice_data.items():
            items[task] = choice_items(task, lang, folder, n, choice_fewshot[task])
    return items


def max_lengths(model, source_dir: str | Path) -> dict[str, int]:
    """The model's and Source's maximum lengths, which the log-likelihood tasks' contexts are cut to (as the harness
    cuts them)."""
    from transformers import AutoConfig

    from workflow_scripts.inference import model_max_length

    return {
        "model": model_max_length(model.config),
        "source": model_max_length(AutoConfig.from_pretrained(source_dir)),
    }
