"""The paper's evaluation tasks as LightEval custom tasks (paper 002 §6.4; prompts in ``prompts.yaml``).

- ``mt_<lang>``: English→target, zero-shot, at most ``generation_size`` new tokens, stop at newline; chrF.
- ``sum_<lang>``: XL-Sum / MLSUM (de) / GreekSUM (el), zero-shot, the article cut so that the prompt fits 4,096
  tokens of the evaluated tokenizer; ROUGE-L F1 (script-aware).
- ``mc_<lang>``: Belebele (or the embedded default's l10n proxy, same layout), 3-shot, log-likelihood accuracy, in
  LightEval's own multilingual MCQ prompt (``get_mcq_prompt_function``, MCF) with the language's literals.
- ``gmmlu_<lang>:<subject>``: Global-MMLU, one task per MMLU subject, 5-shot from the subject's dev rows, the same
  prompt under an instruction naming the subject; rows with an empty option are dropped (LightEval's filter).
- ``mc_en`` / ``gmmlu_en`` are the English retention checks of Table 9: English Belebele, and the original English
  MMLU (``lighteval/mmlu``) in the prompt of LightEval's leaderboard MMLU tasks, 5-shot, one task per subject.

``task_config`` builds one task for a dataset folder (a hub mirror or a local folder in the hub layout, the same
definition for both); ``task_configs`` the tasks of one evaluation job. ``TASKS_TABLE`` holds the hub-backed tasks
for every language, so that LightEval's own CLI can run them too (``--custom-tasks workflow_scripts/harness/tasks.py``,
with the repository on PYTHONPATH).
"""

from __future__ import annotations

import tempfile
from dataclasses import fields
from functools import cache, partial
from pathlib import Path
from string import ascii_uppercase

from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.requests import Doc
from lighteval.tasks.tasks import mmlu as lighteval_mmlu
from lighteval.tasks.templates.multichoice import get_mcq_prompt_function
from lighteval.tasks.templates.utils.formulation import MCFFormulation
from lighteval.tasks.templates.utils.translation_literals import TRANSLATION_LITERALS, TranslationLiterals
from lighteval.utils.language import Language, iso_639_3_ind_to_iso_639_3_macro

from workflow_scripts import prompts
from workflow_scripts.harness import lighteval_metrics
from workflow_scripts.harness.datasets import HUB_IDS, Unavailable, flores_subset, task_source
from workflow_scripts.languages import PAPER_LANGUAGES

FEWSHOT = {"mt": 0, "sum": 0, "mc": 3, "gmmlu": 5}


def item_id(line: dict) -> dict | None:
    """The dataset's own id of an item, kept for the predictions file (LightEval sets ``Doc.id`` to the row index);
    the ids files of ``workflow_scripts.items`` name the same ids."""
    return {"item_id": str(line["id"])} if line.get("id") is not None else None


def mt_doc(line: dict, task_name: str, lang: str) -> Doc:
    """One mt item: the paper's prompt on the English source; the target sentence is the reference."""
    return Doc(
        query=prompts.mt_query(line["source"], lang),
        choices=[line["reference"]],
        gold_index=0,
        task_name=task_name,
        specific=item_id(line),
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
        specific=item_id(line),
    )


# The reference's formulation (docs/evaluation.md "Multiple choice"): lettered options, the answer scored as the letter.
MCF = MCFFormulation()
# LightEval's own list of MMLU's 57 subjects (its bundled ``mmlu:{subject}`` tasks); Global-MMLU has the same ones.
MMLU_SUBJECTS: tuple[str, ...] = tuple(c.hf_subset for c in lighteval_mmlu.TASKS_TABLE)


def lighteval_language(lang: str) -> Language:
    """LightEval's ``Language`` of a project language, mapped as LightEval's Belebele tasks map their subset: the
    FLORES code's individual ISO 639-3 code, as its macrolanguage where it has one (arb -> ara, swh -> swa)."""
    code = flores_subset(lang).split("_")[0]
    return iso_639_3_ind_to_iso_639_3_macro.get(code) or Language(code)


def _literal(literals: TranslationLiterals, name: str):
    return object.__getattribute__(literals, name)  # its __getattribute__ raises on a missing literal


def literals_language(language: Language) -> Language:
    """The language whose ``TRANSLATION_LITERALS`` the MCF prompt takes: ``language`` itself, or English where
    LightEval 0.13.0 lacks the words for "question" and "answer" (Sinhala, Burmese: its own prompt function then
    raises AttributeError). English is chosen only where every literal the language does have (punctuation, spaces,
    option letters) equals English's, so only the two missing words change (docs/evaluation.md, "Multiple choice")."""
    own = TRANSLATION_LITERALS.get(language)
    if own is None:
        raise ValueError(f"LightEval has no translation literals for {language}")
    if _literal(own, "question_word") is not None and _literal(own, "answer") is not None:
        return language
    english = TRANSLATION_LITERALS[Language.ENGLISH]
    differing = [
        f.name
        for f in fields(TranslationLiterals)
        if f.name != "language"
        and _literal(own, f.name) is not None
        and _literal(own, f.name) != _literal(english, f.name)
    ]
    if differing:
        raise ValueError(
            f"LightEval lacks the MCF words of {language}, and its other literals {differing} differ from English's: "
            "no faithful stand-in (docs/evaluation.md)"
        )
    return Language.ENGLISH


def belebele_input(line: dict) -> dict:
    """A Belebele row as LightEval's MCQInput, read as LightEval's Belebele tasks read it (answer number 1-based)."""
    return {
        "question": line["question"],
        "context": line["flores_passage"],
        "choices": [line[f"mc_answer{i}"] for i in range(1, 5)],
        "gold_idx": int(line["correct_answer_num"]) - 1,
    }


def global_mmlu_input(line: dict, lang: str) -> dict:
    """A Global-MMLU row as LightEval's MCQInput (as its Global-MMLU tasks read it), with the reference's instruction
    naming the row's subject; LightEval's prompt builder puts the instruction once above the few-shot examples."""
    return {
        "question": line["question"],
        "choices": [line[f"option_{c}"] for c in "abcd"],
        "gold_idx": ascii_uppercase.index(line["answer"]),
        "instruction": prompts.gmmlu_instruction(line["subject"], lang),
    }


def keep_global_mmlu_row(row: dict, subject: str | None = None) -> bool:
    """LightEval's Global-MMLU row filter: the task's subject (any, for ``None``) and four non-empty options."""
    if subject is not None and row["subject"].lower() != subject:
        return False
    return all(row[f"option_{c}"] is not None and row[f"option_{c}"].strip() for c in "abcd")


def keep_mmlu_row(row: dict, subject: str | None = None) -> bool:
    """English MMLU: the task's subject (the ``all`` subset holds every subject; the leaderboard read one each)."""
    return subject is None or row["subject"] == subject


@cache
def mc_prompt_function(lang: str):
    """LightEval's multilingual MCQ prompt function (MCF) on Belebele rows, with the language's literals."""
    return get_mcq_prompt_function(literals_language(lighteval_language(lang)), belebele_input, formulation=MCF)


def mmlu_instruction(subject: str) -> str:
    """The English MMLU header naming the subject (``_`` shown as a space), as LightEval's leaderboard MMLU prompt."""
    return f"The following are multiple choice questions (with answers) about {subject.replace('_', ' ')}."


def mmlu_leaderboard_doc(line: dict, task_name: str) -> Doc:
    """One English MMLU item as the reference's ``leaderboard|mmlu:{subject}`` task scored it (docs/evaluation.md,
    "English retention"): the question, the options ``A. …`` to ``D. …`` one a line, ``Answer:``; continuations
    `` A`` … `` D``.

    The header is the Doc's ``instruction`` and not part of its ``query``: LightEval 0.13.0's plain-text prompt
    builder joins the instruction, each few-shot query with its answer, and the item's query by a blank line, so the
    context is ``header + "\n\n" + shot_1 + " A" + "\n\n" + … + query``, byte for byte the leaderboard's
    (its header ended in a blank line and its builder joined the rest by one). A query that started with the header
    would instead be written without it after its whitespace is stripped."""
    answer = line["answer"]
    gold = ascii_uppercase.index(answer) if isinstance(answer, str) else int(answer)
    letters = ascii_uppercase[: len(line["choices"])]
    options = "".join(f"{letter}. {choice}\n" for letter, choice in zip(letters, line["choices"], strict=True))
    return Doc(
        query=f"{line['question']}\n{options}Answer:",
        choices=[" A", " B", " C", " D"],
        gold_index=gold,
        instruction=mmlu_instruction(line["subject"]),
        task_name=task_name,
    )


@cache
def gmmlu_prompt_function(lang: str):
    """LightEval's multilingual MCQ prompt function (MCF) on Global-MMLU rows; English MMLU takes the leaderboard's
    MMLU prompt (``mmlu_leaderboard_doc``)."""
    if lang == "en":
        return mmlu_leaderboard_doc
    language = literals_language(lighteval_language(lang))
    return get_mcq_prompt_function(language, partial(global_mmlu_input, lang=lang), formulation=MCF)


def task_config(
    task: str,
    lang: str,
    folder: str | Path,
    *,
    generation_size: int = 128,
    tokenizer_dir: str | None = None,
    subject: str | None = None,
) -> LightevalTaskConfig:
    """The LightEval task ``{task}_{lang}`` reading ``folder`` (hub id or local folder in the hub layout).

    ``mt`` reads the pairs layout of ``datasets.pairs_dataset``; the others the hub dataset of ``task_source``.
    gmmlu with ``subject`` is that subject's task ``gmmlu_{lang}:{subject}`` (few-shot examples from the subject's
    dev rows); without, one task over every subject (its ``prompt_function`` gives any row's Doc).
    """
    name = f"{task}_{lang}"
    common = {"name": name, "hf_repo": str(folder), "hf_avail_splits": ["train", "dev", "test"]}
    if task == "mt":
        return LightevalTaskConfig(
            **common,
            prompt_function=partial(mt_doc, lang=lang),
            hf_subset=flores_subset(lang),
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
            few_shots_split=source.fewshot_split or source.split,
            metrics=lighteval_metrics.rouge_metrics(),
            generation_size=generation_size,
            stop_sequence=["\n"],
        )
    choice = {
        "hf_subset": source.subset,
        "evaluation_splits": [source.split],
        "few_shots_split": source.fewshot_split or source.split,  # Belebele has only test
        "metrics": lighteval_metrics.accuracy_metrics(),
        "generation_size": 1,
    }
    if task == "mc":
        return LightevalTaskConfig(**common, prompt_function=mc_prompt_function(lang), **choice)
    if task != "gmmlu":
        raise ValueError(f"unknown task {task!r}")
    if subject is not None:
        if subject not in MMLU_SUBJECTS:
            raise ValueError(f"{subject!r} is not one of MMLU's 57 subjects")
        common["name"] = f"{name}:{subject}"
    keep = keep_mmlu_row if lang == "en" else keep_global_mmlu_row
    return LightevalTaskConfig(
        **common,
        prompt_function=gmmlu_prompt_function(lang),
        hf_filter=partial(keep, subject=subject),
        # the leaderboard's MMLU took each subject's dev rows in order; LightEval's Global-MMLU its default (balanced)
        few_shots_select="sequential" if lang == "en" else None,
        **choice,
    )


def subjects(folder: str | Path, lang: str) -> list[str]:
    """The MMLU subjects with at least one kept test row in ``folder`` (Global-MMLU, or English MMLU for ``en``),
    in LightEval's order: one task each, so that a subject without items never stops the pipeline."""
    import datasets as hf_datasets

    source = task_source("gmmlu", lang)
    keep = keep_mmlu_row if lang == "en" else keep_global_mmlu_row
    with tempfile.TemporaryDirectory(
        prefix="vocabexp-subjects-"
    ) as tmp:  # a fresh cache: see run.private_datasets_cache
        rows = hf_datasets.load_dataset(str(folder), source.subset, split=source.split, cache_dir=tmp)
        present = {str(row["subject"]).lower() for row in rows if keep(row)}
    unknown = sorted(present - set(MMLU_SUBJECTS))
    if unknown:
        raise ValueError(f"{folder} ({source.subset}/{source.split}): subjects {unknown} are not MMLU's 57")
    return [s for s in MMLU_SUBJECTS if s in present]


def task_configs(task: str, lang: str, folder: str | Path, **kwargs) -> list[LightevalTaskConfig]:
    """The LightEval tasks of one evaluation job: gmmlu as one task per MMLU subject (the reference's), run together
    in one pipeline; every other task as its one ``task_config``."""
    if task != "gmmlu":
        return [task_config(task, lang, folder, **kwargs)]
    return [task_config(task, lang, folder, subject=s, **kwargs) for s in subjects(folder, lang)]


def _hub_table() -> list[LightevalTaskConfig]:
    table = []
    for task in ("sum", "mc", "gmmlu"):
        for lang in (*PAPER_LANGUAGES, "en"):
            try:
                hub_id = HUB_IDS[task_source(task, lang).dataset]
            except Unavailable:
                continue
            if not hub_id:
                continue
            if task == "gmmlu":
                table += [task_config(task, lang, hub_id, subject=s) for s in MMLU_SUBJECTS]
            else:
                table.append(task_config(task, lang, hub_id))
    return table


# For LightEval's own CLI (the workflow builds its tasks per job with task_configs and local folders).
TASKS_TABLE = _hub_table()
