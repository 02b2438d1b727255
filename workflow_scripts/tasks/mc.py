"""Reading comprehension (Belebele, 3-shot log-likelihood of 4 choices; or the l10n proxy): accuracy. Its records'
label depends on its source (steps.Steps.mc_label)."""

from workflow_scripts.tasks import Column, TaskSpec, register

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
    )
)
