"""Random and Mean (paper 002 §4; METHODS.md "Initialization"): the two baselines every other method is compared with.

- Random: each dimension ~ N(mean, std) of that dimension over the source rows, seeded.
- Mean: equal weights over the source BPE model's spelling of the new token's own piece (``source_subwords``).
"""

from __future__ import annotations

from typing import Any

from workflow_scripts.initialize.registry import InitContext, InitResult, mean_of_rows, register_method


@register_method("Random")
def init_random(source: Any, ctx: InitContext, role: str) -> InitResult:
    """Random (paper 002 §4): each dimension ~ N(mean, std) of that dimension over the source rows, seeded."""
    import torch

    mean, std = ctx.row_stats(source)
    # One stream per role, so that an untied head does not reuse the embedding's standard normals.
    gen = torch.Generator().manual_seed(ctx.seed * 2 + (role == "output"))
    z = torch.randn(len(ctx.new_tokens), source.shape[1], generator=gen, dtype=torch.float64)
    records = [{"rule": "random", "fallback": None} for _ in ctx.new_tokens]
    return InitResult(rows=mean + std * z, records=records)


@register_method("Mean")
def init_mean(source: Any, ctx: InitContext, role: str) -> InitResult:
    """Mean (paper 002 §4): mean of the source rows of the source tokens that spell the new token (BPE-model level).

    A token nothing maps onto gets the mean of all source rows (fallback "no_subwords", counted in the report).
    """
    import torch

    mapped = [ctx.subwords(tok) for tok in ctx.new_tokens]
    rows = torch.empty(len(mapped), source.shape[1], dtype=torch.float64)
    have = [k for k, (ids, _) in enumerate(mapped) if ids]
    if have:
        rows[have] = mean_of_rows(source, [mapped[k][0] for k in have])
    if len(have) < len(mapped):
        rows[[k for k, (ids, _) in enumerate(mapped) if not ids]] = ctx.row_stats(source)[0]
    records = [
        {"rule": "mean_of_source_subwords" if ids else "mean_of_source_rows", "source_ids": ids, "fallback": fallback}
        for ids, fallback in mapped
    ]
    return InitResult(rows=rows, records=records)
