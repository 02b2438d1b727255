"""Random and Mean (paper 002 §4; docs/initialization.md "Initialization"): the two baselines every other method is
compared with.

- Random: each dimension ~ N(mean, std) of that dimension over the source rows, seeded.
- Mean: equal weights over the source BPE model's spelling of the new token's own piece (``source_subwords``).
- Mean-ref: the paper's Mean as its reference code computed it (full source tokenizer on the printed piece string),
  an ablation that shows what the correct mapping changes; never a default.
"""

from __future__ import annotations

from typing import Any

from workflow_scripts.initialize.registry import (
    ALL_ROWS,
    COPY_SHARED,
    InitContext,
    InitResult,
    mean_of_rows,
    register_method,
)


@register_method("Random", compared_with_mean=False, replace=ALL_ROWS, order=10, draws=True)
def init_random(source: Any, ctx: InitContext, role: str) -> InitResult:
    """Random (paper 002 §4): each dimension ~ N(mean, std) of that dimension over the source rows, seeded."""
    import torch

    mean, std = ctx.row_stats(source)
    # One stream per role, so that an untied head does not reuse the embedding's standard normals.
    gen = torch.Generator().manual_seed(ctx.seed * 2 + (role == "output"))
    z = torch.randn(len(ctx.new_tokens), source.shape[1], generator=gen, dtype=torch.float64)
    records = [{"rule": "random", "fallback": None} for _ in ctx.new_tokens]
    return InitResult(rows=mean + std * z, records=records)


@register_method("Mean", compared_with_mean=False, replace=COPY_SHARED, order=20)
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


@register_method("Mean-ref", order=25)
def init_mean_ref(source: Any, ctx: InitContext, role: str) -> InitResult:
    """The paper's Mean as its reference code computes it, an ABLATION (never a default; docs/initialization.md
    "The reference code's mapping", (1)):
    the mean of the source rows of the FULL source tokenizer run on the printed piece string.

    For byte-level BPE (Llama-3, GPT-2, SmolLM2) the piece is byte-to-unicode text, so its characters are UTF-8
    encoded and byte-mapped a second time ("mojibake" subwords: a Thai piece maps onto Latin-1-looking tokens). For
    SentencePiece BPE the tokenizer's normalizer runs on the "▁"-marked piece (e.g. a second "▁" prefix). No special
    tokens are added (our choice: the reference's setting is not known to us, and a BOS row would join every token).
    A piece that maps onto nothing gets the mean of all source rows (fallback "no_subwords").
    """
    import torch

    from workflow_scripts.initialize.tokens import map_full_tokenizer_on_piece

    mapped = [map_full_tokenizer_on_piece(ctx.source_tokenizer, tok) for tok in ctx.new_tokens]
    rows = torch.empty(len(mapped), source.shape[1], dtype=torch.float64)
    have = [k for k, ids in enumerate(mapped) if ids]
    if have:
        rows[have] = mean_of_rows(source, [mapped[k] for k in have])
    if len(have) < len(mapped):
        rows[[k for k, ids in enumerate(mapped) if not ids]] = ctx.row_stats(source)[0]
    records = [
        {
            "rule": "mean_of_full_tokenizer_on_piece" if ids else "mean_of_source_rows",
            "source_ids": ids,
            "same_as_mean": ids == ctx.subwords(tok)[0],
            "fallback": None if ids else "no_subwords",
        }
        for tok, ids in zip(ctx.new_tokens, mapped, strict=True)
    ]
    return InitResult(rows=rows, records=records)
