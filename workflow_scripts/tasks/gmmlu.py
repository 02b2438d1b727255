"""Global-MMLU (57 subject tasks, 5-shot log-likelihood): accuracy, the mean over subjects; and its English retention
check (paper 002 Table 9), the original English MMLU (``lighteval/mmlu``) in the prompt of LightEval's leaderboard
MMLU tasks.

Each MMLU subject is its own LightEval task ``gmmlu_<lang>:<subject>`` (5-shot from the subject's dev rows, the
subject named in an instruction above the items; rows with an empty option dropped, LightEval's filter), and one job
runs them together in one pipeline (``group``)."""

from __future__ import annotations

import tempfile
from functools import cache, partial
from string import ascii_uppercase

from workflow_scripts.languages import PAPER_LANGUAGES
from workflow_scripts.tasks import Column, TaskSpec, register
from workflow_scripts.tasks.base import Source, Unavailable
from workflow_scripts.tasks.mc import choice_step

# Global-MMLU's 42 subsets (CohereLabs/Global-MMLU), by ISO 639-1 code (fil: Filipino); no Burmese, no Thai.
GLOBAL_MMLU_LANGS = frozenset(
    "am ar bn cs de el en es fa fil fr ha he hi id ig it ja ko ky lt mg ms ne nl ny pl pt ro ru si sn so sr sv sw te "
    "tr uk vi yo zh".split()
)


def source(lang: str) -> Source:
    """Global-MMLU's subset (test; few-shot dev); for English the original MMLU, whose ``all`` subset holds every
    subject (the tasks filter by subject)."""
    if lang == "en":
        return Source("mmlu", "all", "test", "dev")
    if lang not in GLOBAL_MMLU_LANGS:
        raise Unavailable(
            f"Global-MMLU has no {lang} subset"
            + (" (the paper reports no gmmlu for my and th)" if lang in PAPER_LANGUAGES else "")
        )
    return Source("global_mmlu", lang, "test", "dev")


@cache
def mmlu_subjects() -> tuple[str, ...]:
    """LightEval's own list of MMLU's 57 subjects (its bundled ``mmlu:{subject}`` tasks); Global-MMLU has the same."""
    from lighteval.tasks.tasks import mmlu as lighteval_mmlu

    return tuple(c.hf_subset for c in lighteval_mmlu.TASKS_TABLE)


def instruction(subject: str, lang: str) -> str:
    """Global-MMLU's instruction naming the MMLU subject (``_`` shown as a space) in ``lang`` (prompts.yaml)."""
    from workflow_scripts import prompts

    return prompts.lookup("gmmlu", lang).format(subject=subject.replace("_", " "))


def global_mmlu_input(line: dict, lang: str) -> dict:
    """A Global-MMLU row as LightEval's MCQInput (as its Global-MMLU tasks read it), with the reference's instruction
    naming the row's subject; LightEval's prompt builder puts the instruction once above the few-shot examples."""
    return {
        "question": line["question"],
        "choices": [line[f"option_{c}"] for c in "abcd"],
        "gold_idx": ascii_uppercase.index(line["answer"]),
        "instruction": instruction(line["subject"], lang),
    }


def keep_global_mmlu_row(row: dict, subject: str | None = None) -> bool:
    """LightEval's Global-MMLU row filter: the task's subject (any, for ``None``) and four non-empty options."""
    if subject is not None and row["subject"].lower() != subject:
        return False
    return all(row[f"option_{c}"] is not None and row[f"option_{c}"].strip() for c in "abcd")


def keep_mmlu_row(row: dict, subject: str | None = None) -> bool:
    """English MMLU: the task's subject (the ``all`` subset holds every subject; the leaderboard read one each)."""
    return subject is None or row["subject"] == subject


def mmlu_instruction(subject: str) -> str:
    """The English MMLU header naming the subject (``_`` shown as a space), as LightEval's leaderboard MMLU prompt."""
    return f"The following are multiple choice questions (with answers) about {subject.replace('_', ' ')}."


def mmlu_leaderboard_doc(line: dict, task_name: str):
    """One English MMLU item as the reference's ``leaderboard|mmlu:{subject}`` task scored it (docs/evaluation.md,
    "English retention"): the question, the options ``A. …`` to ``D. …`` one a line, ``Answer:``; continuations
    `` A`` … `` D``.

    The header is the Doc's ``instruction`` and not part of its ``query``: LightEval 0.13.0's plain-text prompt
    builder joins the instruction, each few-shot query with its answer, and the item's query by a blank line, so the
    context is ``header + "\\n\\n" + shot_1 + " A" + "\\n\\n" + … + query``, byte for byte the leaderboard's
    (its header ended in a blank line and its builder joined the rest by one). A query that started with the header
    would instead be written without it after its whitespace is stripped."""
    from lighteval.tasks.requests import Doc

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
def prompt_function(kit, lang: str):
    """LightEval's multilingual MCQ prompt function (MCF) on Global-MMLU rows; English MMLU takes the leaderboard's
    MMLU prompt (``mmlu_leaderboard_doc``)."""
    if lang == "en":
        return mmlu_leaderboard_doc
    from lighteval.tasks.templates.multichoice import get_mcq_prompt_function

    language = kit.literals_language(kit.lighteval_language(lang))
    return get_mcq_prompt_function(language, partial(global_mmlu_input, lang=lang), formulation=kit.MCF)


def lighteval(kit, lang: str, folder, generation_size: int = 128, tokenizer_dir: str | None = None, subject=None):
    """The task ``gmmlu_<lang>:<subject>`` (few-shot examples from the subject's dev rows); without a subject, one
    task over every subject (its prompt function gives any row's Doc)."""
    name = f"gmmlu_{lang}"
    if subject is not None:
        if subject not in mmlu_subjects():
            raise ValueError(f"{subject!r} is not one of MMLU's 57 subjects")
        name = f"{name}:{subject}"
    keep = keep_mmlu_row if lang == "en" else keep_global_mmlu_row
    return kit.choice_config(
        name,
        folder,
        source(lang),
        prompt_function(kit, lang),
        hf_filter=partial(keep, subject=subject),
        # the leaderboard's MMLU took each subject's dev rows in order; LightEval's Global-MMLU its default (balanced)
        few_shots_select="sequential" if lang == "en" else None,
    )


def subjects(folder, lang: str) -> list[dict]:
    """The MMLU subjects with at least one kept test row in ``folder`` (Global-MMLU, or English MMLU for ``en``), in
    LightEval's order: one task each, so that a subject without items never stops the pipeline (every subject where
    ``folder`` is None)."""
    if folder is None:
        return [{"subject": s} for s in mmlu_subjects()]
    import datasets as hf_datasets

    data = source(lang)
    keep = keep_mmlu_row if lang == "en" else keep_global_mmlu_row
    with tempfile.TemporaryDirectory(prefix="vocabexp-subjects-") as tmp:  # a fresh cache: run.private_datasets_cache
        rows = hf_datasets.load_dataset(str(folder), data.subset, split=data.split, cache_dir=tmp)
        present = {str(row["subject"]).lower() for row in rows if keep(row)}
    unknown = sorted(present - set(mmlu_subjects()))
    if unknown:
        raise ValueError(f"{folder} ({data.subset}/{data.split}): subjects {unknown} are not MMLU's 57")
    return [{"subject": s} for s in mmlu_subjects() if s in present]


SPEC = register(
    TaskSpec(
        name="gmmlu",
        order=60,
        rule="evaluate_gmmlu",
        # Global-MMLU's whole test set (about 14K items), 5-shot
        cost=((7000, 58), (6000, 18), (2000, 20)),
        rule_words="Global-MMLU",
        words="Global-MMLU",
        card_type="multiple-choice",
        columns=(Column("Global-MMLU accuracy", "acc", "{:.3f}", 40),),
        choice=True,
        timed=True,
        label="Global-MMLU (57 subject tasks; acc = mean over subjects)",
        doc="Global-MMLU, 5-shot, one LightEval task per MMLU subject in one pipeline; log-likelihood accuracy.",
        step=partial(choice_step, "gmmlu"),
        lighteval=lighteval,
        group=subjects,
        source=source,
        fewshot=5,
        prompt=True,
    )
)
EN_SPEC = register(
    TaskSpec(
        name="gmmlu_en",
        order=80,
        rule="evaluate_gmmlu_en",
        cost=((7000, 58), (6000, 18), (2000, 20)),
        rule_words="English MMLU",
        words="English MMLU",
        card_type="multiple-choice",
        choice=True,
        label="English MMLU (lighteval/mmlu, 57 subject tasks; retention, Table 9)",
        doc="English MMLU (Table 9: retention), 5-shot in the leaderboard's prompt; log-likelihood accuracy.",
        step=partial(choice_step, "gmmlu_en"),
    )
)
