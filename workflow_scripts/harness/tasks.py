"""The paper's evaluation tasks as LightEval custom tasks (paper 002 §6.4; prompts in ``prompts.yaml``).

- ``mt_<lang>``: English→target, zero-shot, at most ``generation_size`` new tokens, stop at newline; chrF.
- ``sum_<lang>``: XL-Sum / MLSUM (de) / GreekSUM (el), zero-shot, the article cut so that the prompt fits 4,096
  tokens of the evaluated tokenizer; ROUGE-L F1 (script-aware).
- ``mc_<lang>``: Belebele (or the embedded default's l10n proxy, same layout), 3-shot, log-likelihood accuracy.
- ``gmmlu_<lang>``: Global-MMLU, 5-shot from its dev split, log-likelihood accuracy. ``mc_en`` / ``gmmlu_en`` are the
  English retention checks of Table 9 (English Belebele; MMLU as Global-MMLU's English subset).

``task_config`` builds one task for a dataset folder (a hub mirror or a local folder in the hub layout, the same
definition for both). ``TASKS_TABLE`` holds the hub-backed tasks for every language, so that LightEval's own CLI can
run them too (``--custom-tasks workflow_scripts/harness/tasks.py``, with the repository on PYTHONPATH).
"""

from __future__ import annotations

from functools import cache, partial
from pathlib import Path

from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.requests import Doc

from workflow_scripts import prompts
from workflow_scripts.harness import lighteval_metrics
from workflow_scripts.harness.datasets import FLORES_CODES, HUB_IDS, Unavailable, task_source

FEWSHOT = {"mt": 0, "sum": 0, "mc": 3, "gmmlu": 5}


def mt_doc(line: dict, task_name: str, lang: str) -> Doc:
    """One mt item: the paper's prompt on the English source; the target sentence is the reference."""
    return Doc(
        query=prompts.mt_query(line["source"], lang), choices=[line["reference"]], gold_index=0, task_name=task_name
    )


@cache
def _tokenizer(path: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


def sum_doc(line: dict, task_name: str, lang: str, tokenizer_dir: str | None = None) -> Doc:
    """One sum item: the paper's one-line prompt on the (truncated) article; the summary is the reference."""
    tokenizer = _tokenizer(tokenizer_dir) if tokenizer_dir is not None else None
    return Doc(
        query=prompts.sum_prompt(line["text"], lang, tokenizer),
        choices=[line["summary"]],
        gold_index=0,
        task_name=task_name,
    )


def belebele_doc(line: dict, task_name: str) -> Doc:
    """One Belebele item (passage, question, four answers; ``correct_answer_num`` is 1-based) in the MCF template."""
    options = [line[f"mc_answer{i}"] for i in range(1, 5)]
    query = prompts.mcf_query(line["question"], options, passage=line["flores_passage"])
    gold = int(line["correct_answer_num"]) - 1
    return Doc(query=query, choices=prompts.mcf_choices(4), gold_index=gold, task_name=task_name)


def global_mmlu_doc(line: dict, task_name: str) -> Doc:
    """One Global-MMLU item (question, option_a..d, answer letter) in the MCF template."""
    options = [line[f"option_{c}"] for c in "abcd"]
    gold = prompts.LETTERS.index(str(line["answer"]).strip().upper())
    return Doc(
        query=prompts.mcf_query(line["question"], options),
        choices=prompts.mcf_choices(4),
        gold_index=gold,
        task_name=task_name,
    )


def task_config(
    task: str,
    lang: str,
    folder: str | Path,
    *,
    generation_size: int = 128,
    tokenizer_dir: str | None = None,
) -> LightevalTaskConfig:
    """The LightEval task ``{task}_{lang}`` reading ``folder`` (hub id or local folder in the hub layout).

    ``mt`` reads the pairs layout of ``datasets.pairs_dataset``; the others the hub dataset of ``task_source``.
    """
    name = f"{task}_{lang}"
    common = {"name": name, "hf_repo": str(folder), "hf_avail_splits": ["train", "dev", "test"]}
    if task == "mt":
        return LightevalTaskConfig(
            **common,
            prompt_function=partial(mt_doc, lang=lang),
            hf_subset=FLORES_CODES[lang],
            evaluation_splits=["test"],
            metrics=lighteval_metrics.chrf_metrics(),
            generation_size=generation_size,
            stop_sequence=["\n"],
        )
    source = task_source(task, lang)
    if task == "sum":
        return LightevalTaskConfig(
            **common,
            prompt_function=partial(sum_doc, lang=lang, tokenizer_dir=tokenizer_dir),
            hf_subset=source.subset,
            evaluation_splits=[source.split],
            few_shots_split=source.fewshot_split or source.split,  # Belebele has only test
            metrics=lighteval_metrics.rouge_metrics(),
            generation_size=generation_size,
            stop_sequence=["\n"],
        )
    prompt = belebele_doc if task == "mc" else global_mmlu_doc
    return LightevalTaskConfig(
        **common,
        prompt_function=prompt,
        hf_subset=source.subset,
        evaluation_splits=[source.split],
        few_shots_split=source.fewshot_split or source.split,  # Belebele has only test
        metrics=lighteval_metrics.accuracy_metrics(),
        generation_size=1,
    )


def _hub_table() -> list[LightevalTaskConfig]:
    table = []
    for task in ("sum", "mc", "gmmlu"):
        for lang in FLORES_CODES:
            try:
                hub_id = HUB_IDS[task_source(task, lang).dataset]
            except Unavailable:
                continue
            if hub_id:
                table.append(task_config(task, lang, hub_id))
    return table


# For LightEval's own CLI (the workflow builds its tasks per job with task_config and local folders).
TASKS_TABLE = _hub_table()
