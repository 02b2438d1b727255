"""Global-MMLU (57 subject tasks, 5-shot log-likelihood): accuracy, the mean over subjects."""

from functools import partial

from workflow_scripts.tasks import Column, TaskSpec, register
from workflow_scripts.tasks.mc import choice_step

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
        step=partial(choice_step, "gmmlu"),
    )
)
