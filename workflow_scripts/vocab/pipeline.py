"""The expand sequence in one place: rank the candidates, plan V_new, write T_t, report (paper 002 §3).

Used by the ``vocab expand`` command (the rule), by tools/init_quality.py and by the tests, so that all of them build
the target tokenizer the same way.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer

from workflow_scripts.pieces import piece_text
from workflow_scripts.vocab.select import ExpansionPlan, aux_merge_parts, plan_expansion, rank_candidates
from workflow_scripts.vocab.source import as_tokenizer, load_source
from workflow_scripts.vocab.target import build_expanded_json, expand_tokenizer, expansion_report


@dataclass
class Expansion:
    """What ``expand`` built: the plan (V_new with its merges), T_t, the ranked candidates and the report."""

    plan: ExpansionPlan
    target: Tokenizer
    ranked: list[tuple[str, int]]
    seconds: float
    report: dict | None = None


def expand(
    source_tokenizer_dir: str | Path,
    aux: Tokenizer | str | Path,
    corpus: Sequence[str],
    k: int,
    out_dir: str | Path | None = None,
    heldout: Sequence[str] | None = None,
    *,
    ranked: Sequence[tuple[str, int]] | None = None,
) -> Expansion:
    """Rank V_aux minus V_s on D, choose exactly k reachable new tokens, build T_t and, given held-out text, report.

    ``out_dir`` None keeps T_t in memory (same tokenizer.json, no folder written and no reachability check: for
    experiments over many k). ``ranked`` reuses a ranking already computed for the same aux tokenizer and corpus.
    """
    t0 = time.perf_counter()
    source_json, family = load_source(source_tokenizer_dir)
    source = Tokenizer.from_str(json.dumps(source_json))
    aux = as_tokenizer(aux)
    ranked = list(ranked) if ranked is not None else rank_candidates(aux, source, corpus)
    if len(ranked) < k:
        raise ValueError(
            f"the aux tokenizer yields only {len(ranked)} tokens absent from V_s, fewer than k={k}: "
            "lower k or train the aux tokenizer with a larger vocabulary"
        )
    plan = plan_expansion(source, ranked, k, aux_merge_parts(aux))
    if out_dir is None:
        expanded = build_expanded_json(source_json, [t for t, _ in plan.selected], plan.merges)
        target = Tokenizer.from_str(json.dumps(expanded))
    else:
        target = expand_tokenizer(source_tokenizer_dir, plan.selected, out_dir, plan.merges)
    result = Expansion(plan=plan, target=target, ranked=ranked, seconds=time.perf_counter() - t0)
    if heldout is not None:
        result.report = expansion_report(source, target, plan.selected, heldout)
        result.report.update(_plan_report(plan, family, aux.get_vocab_size(), len(ranked), result.seconds))
    return result


def _plan_report(plan: ExpansionPlan, family: str, aux_vocab_size: int, candidates: int, seconds: float) -> dict:
    """The report's fields about the choice: candidates, top-k tokens left out, members ranked below k, merges."""

    def entries(tokens: list[tuple[str, int]]) -> list[dict]:
        return [{"piece": t, "text": piece_text(t, family), "frequency": f} for t, f in tokens]

    return {
        "aux_vocab_size": aux_vocab_size,
        "candidates": candidates,
        "passed_over": entries(plan.passed_over),
        "outside_top_k": entries(plan.outside_top_k),
        "merges": [list(m) for m in plan.merges],
        "seconds": seconds,
    }
