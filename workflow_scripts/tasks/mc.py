"""Reading comprehension (Belebele, 3-shot log-likelihood of 4 choices; or the l10n proxy): accuracy. Its records'
label depends on its source (mc_label)."""

from functools import partial

from workflow_scripts.tasks import TASKS, Column, TaskSpec, register
from workflow_scripts.tasks.base import Step, cli


def mc_label(steps) -> str:
    """mc's data label: the l10n proxy's, or Belebele."""
    if steps.evaluation["mc"]["source"] == "l10n_proxy":
        return "mc proxy: 4-way choice of the translation of a held-out l10n sentence (not Belebele)"
    return "Belebele"


def choice_step(task: str, steps, wc):
    """The step of a log-likelihood task (mc, gmmlu, and their English retention checks mc_en, gmmlu_en, Table 9):
    its dataset, few-shot count, batch size and n (of the task it checks in English), its data label (the task's
    ``label``; mc's, which has none, by its source)."""
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
        cell_files=("mc.json",),
        cell_order=3,
        choice=True,
        timed=True,
        step=partial(choice_step, "mc"),
    )
)
