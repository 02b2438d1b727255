"""The expand sequence in one place: rank the candidates, plan V_new, write T_t, report (paper 002 §3).

Used by the ``vocab expand`` command (the rule), the analysis step, tools/init_quality.py and the tests, so that all of
them build the target tokenizer the same way.

Where the new merges go (``new_merges``, config ``tokenizer.new_merges``):
- ``last`` (default): after every source merge. Every new token is then a union of whole source tokens on every
  text, so Align collapses to Mean; the plan is exact and nothing is replaced. Target text is never longer than the
  source's: a new merge only joins two pieces the source tokenizer already produced.
- ``first`` (the paper's priority, an option): before every source merge, the source merges kept in their order among
  themselves. New tokens win over source merges, as in the paper's tokenizers (the SentencePiece route gave new pieces
  score 0, the highest priority; the Hugging Face route put aux merges first), so a new token can cross a source-token
  boundary. Text that contains none of the new tokens' strings still tokenizes exactly as before: a new merge fires
  only where its string forms, and until one fires the source merges run in their own order. The plan
  (``select.plan_expansion``) is made with appended-merge reachability; with the new merges first some planned tokens
  are no longer produced for their own string (a new merge inside them fires earlier), and some are never produced on
  D. Both kinds are replaced, as the reference's refill loop did: they are excluded from the candidates and the plan
  is made again, until every new token is produced for its own string and used at least once on D (the replaced tokens
  are reported). Not the default, because a new merge that fires first can stop a longer source merge from forming:
  where the source already has multi-byte pieces of the script, target text gets longer. Measured on Thai held-out
  text (aux 6,000, k = 50 / 100 / 500; tokens per sentence, source 23.06 / 48.86): Llama-3 last 22.08 / 21.60 / 19.65,
  first 22.07 / 23.31 / 25.32; Mistral last 40.49 / 35.01 / 20.28, first 40.09 / 35.02 / 21.81.
We never copy the reference's Hugging Face order (all aux merges first, the source merges the aux tokenizer shares
moved ahead of the others): it changes the tokenization of text without new strings (English token counts doubled
on SmolLM2 with a Thai aux tokenizer).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from workflow_scripts.pieces import piece_text
from workflow_scripts.vocab.crossing import boundary_crossings
from workflow_scripts.vocab.select import (
    SELECTIONS,
    ExpansionPlan,
    aux_merge_parts,
    plan_expansion,
    plan_topk,
    rank_candidates,
)
from workflow_scripts.vocab.source import as_tokenizer, load_source
from workflow_scripts.vocab.target import (
    NEW_MERGES,
    build_expanded_json,
    expand_tokenizer,
    expansion_report,
    next_free_id,
)

# Re-planning rounds under new_merges "first" before giving up (each round excludes every token found wanting).
MAX_REFILL_ROUNDS = 50


@dataclass
class Expansion:
    """What ``expand`` built: the plan (V_new with its merges), T_t, the ranked candidates and the report."""

    plan: ExpansionPlan
    target: Tokenizer
    ranked: list[tuple[str, int]]
    seconds: float
    report: dict | None = None
    new_merges: str = "last"
    replaced: list[dict] = field(default_factory=list)  # planned tokens replaced under "first", and why
    refill_rounds: int = 0
    selection: str = "reachable"


def expand(
    source_tokenizer_dir: str | Path,
    aux: Tokenizer | str | Path,
    corpus: Sequence[str],
    k: int,
    out_dir: str | Path | None = None,
    heldout: Sequence[str] | None = None,
    *,
    ranked: Sequence[tuple[str, int]] | None = None,
    new_merges: str = "last",
    selection: str = "reachable",
) -> Expansion:
    """Rank V_aux minus V_s on D, choose exactly k reachable new tokens, build T_t and, given held-out text, report.

    ``new_merges`` puts the new merges before ("first", with the refill loop of the module docstring) or after
    ("last") the source merges. ``out_dir`` None keeps T_t in memory (same tokenizer.json, no folder written: for
    experiments over many k). ``ranked`` reuses a ranking already computed for the same aux tokenizer and corpus.
    ``selection`` ``topk`` takes the plain top-k instead (``select.plan_topk``): no building blocks, no replacement
    under "first"; members that T_t never produces for their own string are reported as unreachable.
    """
    if new_merges not in NEW_MERGES:
        raise ValueError(f"new_merges must be one of {NEW_MERGES}, got {new_merges!r}")
    if selection not in SELECTIONS:
        raise ValueError(f"tokenizer.selection must be one of {SELECTIONS}, got {selection!r}")
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
    replaced: list[dict] = []
    rounds = 0
    if selection == "topk":
        plan = plan_topk(source, ranked, k)
    else:
        parts = aux_merge_parts(aux)
        plan = plan_expansion(source, ranked, k, parts)
        if new_merges == "first":
            plan, replaced, rounds = _refill(source, source_json, family, ranked, k, parts, plan, corpus)
    target = _build(source_tokenizer_dir, source_json, plan, out_dir, new_merges, selection)
    result = Expansion(
        plan=plan,
        target=target,
        ranked=ranked,
        seconds=time.perf_counter() - t0,
        new_merges=new_merges,
        replaced=replaced,
        refill_rounds=rounds,
        selection=selection,
    )
    if heldout is not None:
        result.report = expansion_report(source, target, plan.selected, heldout)
        result.report.update(_plan_report(plan, family, aux.get_vocab_size(), len(ranked), result.seconds))
        start = next_free_id(source_json)
        result.report["new_merges"] = new_merges
        result.report["selection"] = selection
        result.report["refill_rounds"] = rounds
        result.report["replaced"] = replaced
        # On D, the corpus the new tokens (and Align) are computed from.
        crossing = boundary_crossings(source, target, corpus, range(start, start + k))
        result.report["boundary_crossings_in_D"] = crossing
        result.report["seconds"] = time.perf_counter() - t0
    return result


def _build(
    source_tokenizer_dir: str | Path,
    source_json: dict,
    plan: ExpansionPlan,
    out_dir: str | Path | None,
    new_merges: str,
    selection: str,
) -> Tokenizer:
    """T_t of the plan (a folder when ``out_dir`` is given); for ``topk`` the plan's ``unreachable`` is set to the
    members the built T_t never produces for their own string (under "first" a new merge inside a member can fire
    before the member's own, so more can end so than the plan says; they are reported, not refused)."""
    tokens = [t for t, _ in plan.selected]
    if out_dir is None:
        target = Tokenizer.from_str(json.dumps(build_expanded_json(source_json, tokens, plan.merges, new_merges)))
    else:
        target = expand_tokenizer(
            source_tokenizer_dir,
            plan.selected,
            out_dir,
            plan.merges,
            new_merges,
            unreachable=[t for t, _ in plan.unreachable],
            check_reachable=selection != "topk",
        )
    if selection == "topk":
        dead = _wanting(target, tokens, next_free_id(source_json), ())
        plan.unreachable = [(t, f) for t, f in plan.selected if t in dead]
    return target


def _wanting(target: Tokenizer, tokens: list[str], start: int, corpus: Sequence[str]) -> dict[str, str]:
    """New tokens not produced for their own string ("unreachable") or never produced on D ("unused_in_D"; not checked
    when ``corpus`` is empty, e.g. a ranking passed in without its corpus)."""
    out = {}
    for offset, token in enumerate(tokens):
        if [(t.value, t.id) for t in target.model.tokenize(token)] != [(token, start + offset)]:
            out[token] = "unreachable"
    if not corpus:
        return out
    encodings = target.encode_batch([line for line in corpus if line.strip()], add_special_tokens=False)
    ids = np.fromiter((i for e in encodings for i in e.ids if i >= start), dtype=np.int64)
    counts = np.bincount(ids - start, minlength=len(tokens)) if ids.size else np.zeros(len(tokens), dtype=np.int64)
    for offset, token in enumerate(tokens):
        if counts[offset] == 0:
            out.setdefault(token, "unused_in_D")
    return out


def _refill(
    source: Tokenizer,
    source_json: dict,
    family: str,
    ranked: list[tuple[str, int]],
    k: int,
    parts: dict[str, tuple[str, str]],
    plan: ExpansionPlan,
    corpus: Sequence[str],
) -> tuple[ExpansionPlan, list[dict], int]:
    """Under new merges first: replace planned tokens that are unreachable or unused on D until none is left.

    Each round builds T_t, finds the wanting tokens, excludes them from the candidates and plans again (their
    building blocks may go with them, and other candidates come in). Raises ValueError when the candidates run out.
    """
    start = next_free_id(source_json)
    freq = dict(ranked)
    excluded: set[str] = set()
    replaced: list[dict] = []
    for rounds in range(MAX_REFILL_ROUNDS + 1):
        tokens = [t for t, _ in plan.selected]
        target = Tokenizer.from_str(json.dumps(build_expanded_json(source_json, tokens, plan.merges, "first")))
        wanting = _wanting(target, tokens, start, corpus)
        if not wanting:
            # Measured against the full ranking, as without replacement: top-k candidates left out, members below k.
            chosen, rank = set(tokens), {t: i for i, (t, _) in enumerate(ranked)}
            plan.passed_over = [(t, int(f)) for t, f in ranked[:k] if t not in chosen]
            plan.outside_top_k = [(t, f) for t, f in plan.selected if rank[t] >= k]
            return plan, replaced, rounds
        if rounds == MAX_REFILL_ROUNDS:
            break
        for token, why in wanting.items():
            replaced.append(
                {
                    "piece": token,
                    "text": piece_text(token, family),
                    "frequency": freq[token],
                    "reason": why,
                    "round": rounds + 1,
                }
            )
        excluded |= set(wanting)
        try:
            plan = plan_expansion(source, [r for r in ranked if r[0] not in excluded], k, parts)
        except ValueError as e:
            raise ValueError(
                f"new_merges first: after excluding {len(excluded)} tokens that are unreachable or unused on D, {e}"
            ) from e
    raise ValueError(
        f"new_merges first: {len(wanting)} new tokens still unreachable or unused on D after {MAX_REFILL_ROUNDS} "
        "rounds of replacement; use tokenizer.new_merges: last, or lower k"
    )


def _plan_report(plan: ExpansionPlan, family: str, aux_vocab_size: int, candidates: int, seconds: float) -> dict:
    """The report's fields about the choice: candidates, top-k tokens left out, members ranked below k, merges."""

    def entries(tokens: list[tuple[str, int]]) -> list[dict]:
        return [{"piece": t, "text": piece_text(t, family), "frequency": f} for t, f in tokens]

    return {
        "aux_vocab_size": aux_vocab_size,
        "candidates": candidates,
        # how far V_new is from the paper's plain choice (§3: the k most frequent candidates)
        "top_k_in_v_new": plan.top_k_in,
        "passed_over": entries(plan.passed_over),
        "outside_top_k": entries(plan.outside_top_k),
        "unreachable": entries(plan.unreachable),
        "merges": [list(m) for m in plan.merges],
        "seconds": seconds,
    }
