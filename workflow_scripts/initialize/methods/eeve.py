"""EEVE (Kim et al. 2024, §2.2; docs/initialization.md "EEVE's initialization"): input rows as Mean, output rows the
first subword's row.

A tied model has one matrix and gets the input rule only.
"""

from __future__ import annotations

from typing import Any

from workflow_scripts.initialize.methods.random_mean import init_mean
from workflow_scripts.initialize.registry import InitContext, InitResult, Plan, register_method, rows_from_plans


def eeve_stats(ctx: InitContext) -> dict:
    """The report's note on which rule EEVE applied: a tied model gets the input rule only."""
    return {
        "eeve": "tied: one matrix, initialized by the input rule (mean of subwords), i.e. as Mean"
        if ctx.tied
        else "untied: input rows mean of subwords, output rows the first subword's LM-head row"
    }


@register_method("EEVE", stats=eeve_stats, order=60)
def init_eeve(source: Any, ctx: InitContext, role: str) -> InitResult:
    """EEVE (Kim et al. 2024, §2.2): input rows = Mean; output rows = the LM-head row of the first source subword.

    A tied model has one matrix, which gets the input rule (so EEVE equals Mean there; the report says so): untying
    would add a |V| × d head that the Source model and the other methods lack.
    """
    if role == "input":
        res = init_mean(source, ctx, role)
        if ctx.tied:
            for r in res.records:
                r["note"] = "tied embeddings: one matrix, input rule (mean of subwords)"
        return res
    plans: list[Plan | None] = []
    records = []
    for tok in ctx.new_tokens:
        ids, fallback = ctx.subwords(tok)
        plans.append({ids[0]: 1.0} if ids else None)
        records.append(
            {
                "rule": "first_source_subword" if ids else "mean_of_source_rows",
                "source_ids": ids[:1],
                "fallback": fallback,
            }
        )
    return InitResult(rows=rows_from_plans(source, ctx, plans), records=records)
