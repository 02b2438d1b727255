"""Held-out text (workflow_scripts/perplexity.py): bits per character and tokens per sentence, with each sentence's
NLL for the paired intervals (workflow_scripts/intervals.py)."""

from workflow_scripts.labels import data_label
from workflow_scripts.tasks import Column, TaskSpec, register
from workflow_scripts.tasks.base import Step, cli


def step(steps, wc):
    """The held-out text, its first n sentences, batch size; the cell and data label; ppl.json."""
    settings, text, model = steps.evaluation["ppl"], steps.heldout(wc), steps.model(wc)
    return Step(
        {"model": model, "text": text},
        cli(
            model=model,
            text=text,
            n=settings["n"],
            batch_size=settings["batch_size"],
            cell=steps.cell(wc),
            data_label=data_label(steps.layout, wc.lang),
            out=steps.out(wc, "ppl.json"),
        ),
    )


SPEC = register(
    TaskSpec(
        name="ppl",
        order=20,
        rule="evaluate_ppl",
        cost=((7000, 29), (6000, 5.5), (2000, 15)),
        rule_words="held-out likelihood",
        words="held-out text",
        card_type="text-generation",
        columns=(Column("bits per character (held-out)", "bits_per_char", "{:.3f}", 90),),
        cell_job=True,
        cell_order=1,
        doc="Perplexity (same-vocabulary comparisons) and bits per character (comparable across vocabularies).",
        program="workflow_scripts.perplexity",
        step=step,
    )
)
