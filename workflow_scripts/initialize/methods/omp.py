"""OMP (Goddard & Fernandes Neto 2025, arXiv 2506.06607; mergekit's tokensurgeon; docs/initialization.md "OMP"): each
new token as a sparse combination of k source tokens found by Orthogonal Matching Pursuit, the same weights applied to
every matrix.

tokensurgeon approximates a new token's *donor-model* embedding by OMP over the shared tokens' donor embeddings and
applies the weights to their *base-model* rows. Here there is one model and no donor: the target vector is the new
token's Mean row in the source input embeddings (the mean of its source subwords' rows, the BPE-model spelling of
``ctx.subwords``), and the dictionary is every non-special source row of the input embeddings. The weights found
there give the input row (Mean's row up to OMP's residual) and, for an untied head, the output row from the same
tokens and weights: tokensurgeon's transfer from the space the weights were found in to another one. A token nothing
maps onto gets the mean of all source rows, as Mean does (fallback "no_subwords").
"""

from __future__ import annotations

import time
from typing import Any

from workflow_scripts.initialize.registry import (
    InitContext,
    InitResult,
    Plan,
    mean_of_rows,
    register_method,
    rows_from_plans,
)

# tokensurgeon's default number of atoms (its ``k``); ``resources["omp_options"]`` may override it.
OMP_DEFAULTS = {"k": 64}
_CHUNK = 256  # new tokens whose correlations are computed in one matrix product
_RESIDUAL_TOL = 1e-12  # relative residual norm at which the target counts as reconstructed exactly


def omp(targets: Any, atoms: Any, k: int) -> list[tuple[list[int], Any, float]]:
    """Orthogonal Matching Pursuit (Pati et al. 1993) of each row of ``targets`` [B, d] over the rows of ``atoms``
    [n, d], in float64: per target, up to ``k`` atom indices in the order picked, their weights and the relative
    residual norm ||y - Σ w a|| / ||y||.

    Each step picks the atom of largest |correlation| with the residual (the cosine with the unit-norm atom, ties to
    the lowest index), then refits the weights of all atoms picked so far by least squares. It stops early when the
    residual vanishes (relative norm below 1e-12); zero-norm atoms are never picked.
    """
    import torch

    targets, atoms = targets.to(torch.float64), atoms.to(torch.float64)
    n, d = atoms.shape
    norms = atoms.norm(dim=1)
    unit = atoms / norms.clamp(min=1e-300)[:, None]
    steps = min(k, int((norms > 0).sum()), d)
    out = []
    for s in range(0, targets.shape[0], _CHUNK):
        y = targets[s : s + _CHUNK]
        b = y.shape[0]
        y_norm = y.norm(dim=1).clamp(min=1e-300)
        residual = y.clone()
        picked: list[list[int]] = [[] for _ in range(b)]
        weights = [torch.zeros(0, dtype=torch.float64) for _ in range(b)]
        blocked = (norms == 0).expand(b, n).clone()
        for _ in range(steps):
            active = [i for i in range(b) if float(residual[i].norm() / y_norm[i]) > _RESIDUAL_TOL]
            if not active:
                break
            corr = (residual[active] @ unit.T).abs().masked_fill(blocked[active], -1.0)
            best = corr.argmax(dim=1).tolist()  # the first maximal index on ties
            for i, j in zip(active, best, strict=True):
                picked[i].append(j)
                blocked[i, j] = True
                basis = atoms[picked[i]].T  # [d, t]
                weights[i] = torch.linalg.lstsq(basis, y[i][:, None]).solution[:, 0]
                residual[i] = y[i] - basis @ weights[i]
        out += [(picked[i], weights[i], float(residual[i].norm() / y_norm[i])) for i in range(b)]
    return out


def omp_plans(source: Any, ctx: InitContext) -> tuple[list[tuple[Plan | None, dict]], dict]:
    """OMP's plan per new token (cached): the atoms and weights of the Mean row's OMP approximation over the
    non-special source rows of ``source``, the input embeddings."""
    import torch

    if "OMP" in ctx.cache:
        return ctx.cache["OMP"]
    t0 = time.perf_counter()
    k = int(ctx.resources.get("omp_options", {}).get("k", OMP_DEFAULTS["k"]))
    special = set(ctx.source_tokenizer.all_special_ids) | {int(i) for i in ctx.source_tokenizer.added_tokens_decoder}
    dictionary = [i for i in ctx.source_ids if i not in special]
    mapped = [ctx.subwords(tok) for tok in ctx.new_tokens]
    have = [j for j, (ids, _) in enumerate(mapped) if ids]
    out: list[tuple[Plan | None, dict]] = [
        (None, {"rule": "mean_of_source_rows", "fallback": fallback or "no_subwords"}) for _, fallback in mapped
    ]
    if have:
        targets = mean_of_rows(source, [mapped[j][0] for j in have])
        atoms = source[torch.as_tensor(dictionary, dtype=torch.long)]
        for j, (idx, w, rel) in zip(have, omp(targets, atoms, k), strict=True):
            plan: Plan = {dictionary[a]: float(x) for a, x in zip(idx, w.tolist(), strict=True)}
            top = sorted(plan.items(), key=lambda kv: -abs(kv[1]))[:5]
            rec = {
                "rule": "omp_of_mean_row",
                "source_ids": mapped[j][0],
                "atoms": len(plan),
                "top": [[i, round(x, 4)] for i, x in top],
                "relative_residual": rel,
                "fallback": mapped[j][1],
            }
            out[j] = (plan, rec)
    atoms_used = [r["atoms"] for p, r in out if p]
    stats = {
        "k": k,
        "dictionary_rows": len(dictionary),
        "mean_atoms": sum(atoms_used) / len(atoms_used) if atoms_used else None,
        "max_relative_residual": max((r["relative_residual"] for p, r in out if p), default=None),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    ctx.cache["OMP"] = (out, stats)
    return out, stats


def omp_stats(ctx: InitContext) -> dict:
    """The report's statistics and timing of OMP (k, dictionary size, atoms used, worst residual)."""
    return {"omp": ctx.cache["OMP"][1]} if "OMP" in ctx.cache else {}


@register_method("OMP", stats=omp_stats, order=70)
def init_omp(source: Any, ctx: InitContext, role: str) -> InitResult:
    """OMP (arXiv 2506.06607, as tokensurgeon): the Mean row's k-atom OMP approximation over the source input rows;
    the same atoms and weights give the untied LM-head row. The weights are found on the input matrix, so its role
    comes first (as ``apply`` calls them)."""
    if role == "input":
        plans, _ = omp_plans(source, ctx)
    elif "OMP" in ctx.cache:
        plans, _ = ctx.cache["OMP"]
    else:
        raise RuntimeError("OMP: the output rows reuse the input matrix's weights; initialize the input role first")
    return InitResult(rows=rows_from_plans(source, ctx, [p for p, _ in plans]), records=[r for _, r in plans])
