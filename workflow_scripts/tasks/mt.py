"""Translation (paper 002 Table 2; workflow_scripts/harness): English to the target language through LightEval, chrF."""

from workflow_scripts.labels import mt_data_label
from workflow_scripts.tasks import Column, TaskSpec, register
from workflow_scripts.tasks.base import Step, cli


def step(steps, wc):
    """The MT pairs, the shared decoding options, the cell and data label; mt.json and its predictions."""
    pairs, model = steps.layout.data_file(wc.lang, "mt.tsv"), steps.model(wc)
    return Step(
        {"model": model, "pairs": pairs},
        cli(task="mt", lang=wc.lang, model=model, pairs=pairs)
        + steps.generation("mt", wc)
        + cli(cell=steps.cell(wc), data_label=mt_data_label(steps.layout, wc.lang), out=steps.out(wc, "mt.json"),
              predictions=steps.out(wc, "mt_predictions.tsv"))
        + steps.chat(wc)
        + steps.mumo(wc),
    )  # fmt: skip


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
        step=step,
    )
)
