"""Reading comprehension (Belebele, 3-shot log-likelihood of 4 choices; or the l10n proxy): accuracy. Its records'
label depends on its source (mc_label). And its English retention check (paper 002 Table 9), English Belebele."""

from functools import cache, partial

from workflow_scripts.languages import flores_subset
from workflow_scripts.tasks import TASKS, Column, TaskSpec, register
from workflow_scripts.tasks.base import Source, Step, cli


def source(lang: str) -> Source:
    """Belebele's FLORES subset (test, its few-shot examples too); the l10n proxy has the same layout."""
    return Source("belebele", flores_subset(lang), "test")


def belebele_input(line: dict) -> dict:
    """A Belebele row as LightEval's MCQInput, read as LightEval's Belebele tasks read it (answer number 1-based)."""
    return {
        "question": line["question"],
        "context": line["flores_passage"],
        "choices": [line[f"mc_answer{i}"] for i in range(1, 5)],
        "gold_idx": int(line["correct_answer_num"]) - 1,
    }


@cache
def mc_prompt_function(kit, lang: str):
    """LightEval's multilingual MCQ prompt function (MCF) on Belebele rows, with the language's literals."""
    from lighteval.tasks.templates.multichoice import get_mcq_prompt_function

    language = kit.literals_language(kit.lighteval_language(lang))
    return get_mcq_prompt_function(language, belebele_input, formulation=kit.MCF)


def lighteval(kit, lang: str, folder, generation_size: int = 128, tokenizer_dir: str | None = None):
    """``mc_<lang>``: Belebele (or the embedded default's l10n proxy, same layout), 3-shot, log-likelihood accuracy,
    in LightEval's own multilingual MCQ prompt (``get_mcq_prompt_function``, MCF) with the language's literals."""
    return kit.choice_config(f"mc_{lang}", folder, source(lang), mc_prompt_function(kit, lang))


def mc_label(steps) -> str:
    """mc's data label: the l10n proxy's, or Belebele."""
    if steps.evaluation["mc"]["source"] == "l10n_proxy":
        return "mc proxy: 4-way choice of the translation of a held-out l10n sentence (not Belebele)"
    return "Belebele"


def choice_step(task: str, steps, wc):
    """The step of a log-likelihood task (and of its English retention check, ``<task>_en``, Table 9): its dataset,
    few-shot count, batch size and n (of the task it checks in English), its data label (the task's ``label``; mc's,
    which has none, by its source)."""
    base, label = task.removesuffix("_en"), TASKS[task].label or mc_label(steps)
    settings, data, model = steps.evaluation[base], steps.layout.harness_data(task, wc.lang), steps.model(wc)
    return Step(
        {"model": model, "data": data},
        cli(task=base, lang=wc.lang, model=model)
        + (cli(lang="en") if task.endswith("_en") else [])
        + (cli(data=data) if data else [])
        + cli(fewshot=settings["fewshot"], batch_size=settings["batch_size"])
        + (cli(n=settings["n"]) if settings.get("n") else [])
        + cli(cell=steps.cell(wc), data_label=label, out=steps.out(wc, f"{task}.json"))
        + steps.chat(wc),
    )


SPEC = register(
    TaskSpec(
        name="mc",
        order=50,
        rule="evaluate_mc",
        # Belebele 900 items, 3-shot log-likelihood of 4 choices
        cost=((7000, 29), (6000, 5.5), (2000, 20)),
        rule_words="reading comprehension",
        words="reading comprehension",
        card_type="multiple-choice",
        columns=(Column("reading comprehension accuracy", "acc", "{:.3f}", 30),),
        cell_job=True,
        cell_order=3,
        choice=True,
        timed=True,
        doc="Belebele (or the default's l10n proxy), 3-shot, log-likelihood accuracy through LightEval.",
        step=partial(choice_step, "mc"),
        lighteval=lighteval,
        source=source,
        fewshot=3,
    )
)
EN_SPEC = register(
    TaskSpec(
        name="mc_en",
        order=70,
        rule="evaluate_mc_en",
        cost=((7000, 29), (6000, 5.5), (2000, 20)),
        rule_words="English reading comprehension",
        words="English reading comprehension",
        card_type="multiple-choice",
        choice=True,
        label="English Belebele (retention, Table 9)",
        doc="English Belebele (Table 9: retention), 3-shot; log-likelihood accuracy.",
        step=partial(choice_step, "mc_en"),
    )
)
