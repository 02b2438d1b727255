"""The findings page's figure titles and the report's labels of its files: read when the Snakefile is parsed (rule
findings' report entries), so nothing here imports matplotlib or pandas."""

from __future__ import annotations

TITLES = {
    "quality_speed": "Quality against speed: final bits per character relative to Source against the paired speed-up",
    "learning_curves": "Learning curves: held-out bits per character over training",
    "k_tradeoff": "The number of new tokens: what more of them gains and costs",
}


def report_labels(wildcards) -> dict[str, str]:
    """The report's labels of a file of rule findings' folder (``wildcards.name``: its name without extension): the
    page first, then the figures in the page's order."""
    name = str(wildcards.name)
    order = ["findings", *TITLES]
    number = order.index(name) + 1 if name in order else len(order) + 1
    return {"no.": f"{number:02d}", "what": TITLES.get(name, "Findings: the page").split(":")[0]}
