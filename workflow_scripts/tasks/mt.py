"""Translation (paper 002 Table 2; workflow_scripts/harness): English to the target language through LightEval, chrF."""

from workflow_scripts.tasks import Column, TaskSpec, register

SPEC = register(
    TaskSpec(
        name="mt",
        order=10,
        rule="evaluate_mt",
        cost=((7000, 29), (6000, 5.5), (2000, 15)),
        rule_words="translation",
        words="translation",
        card_type="translation",
        columns=(Column("translation chrF (0–100)", "chrF", "{:.1f}", 10),),
        mumo=True,
        cell_files=("mt.json", "mt_predictions.tsv"),
        cell_order=2,
    )
)
