"""English MMLU (lighteval/mmlu, LightEval's MMLU prompt): the English retention check of Global-MMLU (Table 9)."""

from functools import partial

from workflow_scripts.tasks import TaskSpec, register
from workflow_scripts.tasks.mc import choice_step

SPEC = register(
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
        step=partial(choice_step, "gmmlu_en"),
    )
)
