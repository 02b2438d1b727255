"""Held-out text (workflow_scripts/perplexity.py): bits per character and tokens per sentence, with each sentence's
NLL for the paired intervals (workflow_scripts/intervals.py)."""

from workflow_scripts.tasks import Column, TaskSpec, register

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
        cell_files=("ppl.json",),
        cell_order=1,
    )
)
