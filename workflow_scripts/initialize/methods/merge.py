"""Merge (paper 002 §4.3; docs/initialization.md "Merge"): hierarchical mean down T_t's merge tree.

BPE is replayed on the new token's piece with T_t's merge rules; a node in V_s contributes its source row, any other
node the mean of its two children. A token that no merge rule produces falls back to Mean.
"""

from __future__ import annotations

from typing import Any

from workflow_scripts.initialize.registry import (
    InitContext,
    InitResult,
    Plan,
    mean_plan,
    register_method,
    rows_from_plans,
    scaled_add,
)
from workflow_scripts.initialize.tokens import NewToken
from workflow_scripts.pieces import tokenizer_json


def bpe_merge_ranks(tokenizer: Any) -> dict[tuple[str, str], int]:
    """T_t's merge rules as (left, right) -> rank (lower applies first), read from tokenizer.json."""
    ranks: dict[tuple[str, str], int] = {}
    for r, m in enumerate(tokenizer_json(tokenizer)["model"]["merges"]):
        left, right = m.split(" ", 1) if isinstance(m, str) else m
        ranks.setdefault((left, right), r)
    return ranks


def merge_tree(piece: str, ranks: dict[tuple[str, str], int]) -> Any:
    """How T_t's BPE builds ``piece`` from its characters: a nested (left, right) tuple of strings, or None.

    Replays BPE on the piece alone (lowest-ranked adjacent pair first, leftmost on ties), so the tree is the one T_t
    really uses, also when several merges could produce the same string. None when the merges do not join the whole
    piece into one symbol (a token added without a merge rule).
    """
    symbols: list[Any] = list(piece)
    strings = list(piece)
    while len(symbols) > 1:
        best, at = None, -1
        for j in range(len(symbols) - 1):
            r = ranks.get((strings[j], strings[j + 1]))
            if r is not None and (best is None or r < best):
                best, at = r, j
        if best is None:
            return None
        symbols[at : at + 2] = [(symbols[at], symbols[at + 1])]
        strings[at : at + 2] = [strings[at] + strings[at + 1]]
    return symbols[0]


def _tree_string(node: Any) -> str:
    return node if isinstance(node, str) else _tree_string(node[0]) + _tree_string(node[1])


def _walk(
    ctx: InitContext, node: Any, src_vocab: dict[str, int], by_piece: dict[str, NewToken], fallbacks: list[str]
) -> tuple[Plan | None, Any]:
    """(plan, shape) of one merge-tree node: its source row if it is in V_s, else the mean of its children's plans."""
    s = _tree_string(node)
    if s in src_vocab:
        return {src_vocab[s]: 1.0}, src_vocab[s]
    if isinstance(node, str):  # a character outside V_s (SentencePiece without the character): its Mean
        tok = by_piece.get(s) or NewToken(id=-1, piece=s, text=s, partial_utf8=False)
        fallbacks.append("part_mean")
        return mean_plan(ctx, tok), s
    (lp, lt) = _walk(ctx, node[0], src_vocab, by_piece, fallbacks)
    (rp, rt) = _walk(ctx, node[1], src_vocab, by_piece, fallbacks)
    if lp is None or rp is None:
        return None, [lt, rt]
    plan: Plan = {}
    scaled_add(plan, lp, 0.5)
    scaled_add(plan, rp, 0.5)
    return plan, [lt, rt]


def merge_plans(ctx: InitContext) -> list[tuple[Plan | None, dict]]:
    """Merge (paper 002 §4.3): hierarchical mean down T_t's merge tree until every part is in V_s (cached per ctx).

    A node in V_s contributes its row; any other node the mean of its two children's rows. A new token (or a part)
    that no merge rule produces falls back to Mean (fallback "no_merge_rule"; "no_subwords" if even Mean has none).
    """
    if "Merge" in ctx.cache:
        return ctx.cache["Merge"]
    ranks = bpe_merge_ranks(ctx.target_tokenizer)
    src_vocab = ctx.source_tokenizer.get_vocab()
    by_piece = {t.piece: t for t in ctx.new_tokens}
    out = []
    for tok in ctx.new_tokens:
        tree = merge_tree(tok.piece, ranks)
        if tree is None or isinstance(tree, str):
            plan = mean_plan(ctx, tok)
            fallback = "no_merge_rule" if plan else "no_subwords"
            out.append(
                (plan, {"rule": "mean_of_source_subwords", "source_ids": ctx.subwords(tok)[0], "fallback": fallback})
            )
            continue
        fallbacks: list[str] = []
        plan, shape = _walk(ctx, tree, src_vocab, by_piece, fallbacks)
        fallback = None if plan else "no_subwords"
        if plan and fallbacks:
            fallback = "part_without_merge_rule"
        out.append((plan, {"rule": "hierarchical_mean", "merge_tree": shape, "fallback": fallback}))
    ctx.cache["Merge"] = out
    return out


@register_method("Merge", order=30)
def init_merge(source: Any, ctx: InitContext, role: str) -> InitResult:
    """Merge (paper 002 §4.3): hierarchical mean of source rows through T_t's merge rules; fallback Mean."""
    plans = merge_plans(ctx)
    return InitResult(rows=rows_from_plans(source, ctx, [p for p, _ in plans]), records=[r for _, r in plans])
