"""English Belebele: the English retention check of reading comprehension (paper 002 Table 9)."""

from functools import partial

from workflow_scripts.tasks import TaskSpec, register
from workflow_scripts.tasks.mc import choice_step

SPEC = register(
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
        step=partial(choice_step, "mc_en"),
    )
)
