"""Align (paper 002 §4.3; docs/initialization.md "Align"): the source tokens aligned with the new token's occurrences
in D.

Over the adaptation corpus D (``--corpus``), the source tokens inside each occurrence's span (byte spans, special tokens
excluded, every occurrence counted), weighted by tuple frequency; a token unseen in D falls back to Merge. See
``align_counts`` for how spans are matched.
"""

from __future__ import annotations

import bisect
import itertools
import time
from collections import Counter
from typing import Any

from workflow_scripts.initialize.methods.merge import merge_plans
from workflow_scripts.initialize.registry import InitContext, InitResult, Plan, register_method, rows_from_plans
from workflow_scripts.pieces import is_byte_level, piece_bytes


def _byte_lengths(tokenizer: Any) -> Any:
    """Bytes of normalized text each id stands for (numpy int64 by id); -1 where unknown (unk, added tokens).

    Byte-level BPE: the bytes of the byte-to-unicode piece. SentencePiece-style BPE: "<0xNN>" byte-fallback pieces are
    one byte, other pieces their UTF-8 length ("▁" included: both tokenizers see the same "▁"-marked string).
    """
    import numpy as np

    vocab = tokenizer.backend_tokenizer.get_vocab(with_added_tokens=False)
    n = max([*vocab.values(), *tokenizer.get_vocab().values()]) + 1
    out = np.full(n, -1, dtype=np.int64)
    byte_level = is_byte_level(tokenizer)
    unk = (
        tokenizer.backend_tokenizer.model.unk_token if hasattr(tokenizer.backend_tokenizer.model, "unk_token") else None
    )
    for piece, i in vocab.items():
        if piece == unk:
            continue
        if byte_level:
            try:
                out[i] = len(piece_bytes(piece))
            except ValueError:
                pass
        elif len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
            out[i] = 1
        else:
            out[i] = len(piece.encode("utf-8"))
    return out


def _byte_spans(enc: Any, lengths: list[int]) -> tuple[list[int], list[int], list[int]] | None:
    """(ids, starts, ends) of the non-special tokens of one encoding, in bytes; None if a length is unknown."""
    ids = [i for i, m in zip(enc.ids, enc.special_tokens_mask, strict=True) if not m]
    n = len(lengths)
    lens = [lengths[i] if i < n else -1 for i in ids]
    if lens and min(lens) < 0:
        return None
    ends = list(itertools.accumulate(lens))
    return ids, [e - x for e, x in zip(ends, lens, strict=True)], ends


def _char_spans(enc: Any, special_ids: set[int]) -> tuple[list[int], list[int], list[int]]:
    """(ids, starts, ends) of one encoding in characters, without special tokens and zero-width spans."""
    keep = [
        (i, a, b)
        for i, m, (a, b) in zip(enc.ids, enc.special_tokens_mask, enc.offsets, strict=True)
        if not m and i not in special_ids and b > a
    ]
    return [k[0] for k in keep], [k[1] for k in keep], [k[2] for k in keep]


def align_counts(
    source_tokenizer: Any, target_tokenizer: Any, sentences: list[str], new_ids: list[int], batch_size: int = 4096
) -> tuple[dict[int, Counter], dict]:
    """For each new token, the tuples of source ids aligned with its occurrences in D, with counts (paper 002 §4.3).

    Both tokenizers encode each sentence as the model sees it (special tokens added, then excluded: a BOS never joins a
    sentence-initial token). Every occurrence counts. Spans are in bytes of the normalized text, from the token
    lengths: both tokenizers share normalizer and pre-tokenizer, so their tokens tile the same byte string. Character
    offsets are not used for this because a byte-level token that is a partial UTF-8 sequence gets the offsets of the
    whole character(s) it touches, so it would overlap its neighbours and pick up their source tokens (e.g. a token
    81 E0 B8, the tail of ก and the head of ข, would be aligned with all four source tokens of "กข"). A sentence whose
    byte tiling cannot be checked (an unk or added token; the two byte totals differ) falls back to character offsets,
    without special tokens and zero-width spans, and is counted. An occurrence maps to the source tokens whose spans
    lie inside its span, else to the one source token that contains it; if neither (source tokens straddle both
    edges) it is skipped and counted. Occurrences whose span does not start and end on source-token boundaries are
    counted as ``crossing_occurrences``.
    """

    src_be, tgt_be = source_tokenizer.backend_tokenizer, target_tokenizer.backend_tokenizer
    src_len, tgt_len = _byte_lengths(source_tokenizer).tolist(), _byte_lengths(target_tokenizer).tolist()
    special = set(source_tokenizer.all_special_ids) | set(target_tokenizer.all_special_ids)
    special |= {int(i) for i in source_tokenizer.added_tokens_decoder}
    special |= {int(i) for i in target_tokenizer.added_tokens_decoder}
    new = set(new_ids)
    counts: dict[int, Counter] = {}
    stats = {
        "sentences": len(sentences),
        "char_offset_sentences": 0,
        "occurrences": 0,
        "skipped_occurrences": 0,
        # Occurrences whose span does not start and end on a source-token boundary: only these can make Align's
        # tuple differ from the tokens inside a clean span (paper 002 §4.3).
        "crossing_occurrences": 0,
    }
    # Plain Python lists and bisect: the work is linear in the tokens of D, with no per-token numpy overhead.
    for s in range(0, len(sentences), batch_size):
        batch = sentences[s : s + batch_size]
        for src_enc, tgt_enc in zip(src_be.encode_batch(batch), tgt_be.encode_batch(batch), strict=True):
            if new.isdisjoint(tgt_enc.ids):
                continue
            src = _byte_spans(src_enc, src_len)
            tgt = _byte_spans(tgt_enc, tgt_len)
            if src is None or tgt is None or src[2][-1:] != tgt[2][-1:]:
                stats["char_offset_sentences"] += 1
                src, tgt = _char_spans(src_enc, special), _char_spans(tgt_enc, special)
            s_ids, s_start, s_end = src
            for i, a, b in zip(*tgt, strict=True):
                if i not in new:
                    continue
                # Spans are sorted; inside = start >= a and end <= b, a contiguous run of source tokens.
                lo, hi = bisect.bisect_left(s_start, a), bisect.bisect_right(s_end, b)
                if hi > lo:
                    key = tuple(s_ids[lo:hi])
                    if s_start[lo] != a or s_end[hi - 1] != b:
                        stats["crossing_occurrences"] += 1
                else:
                    stats["crossing_occurrences"] += 1
                    c = bisect.bisect_right(s_start, a) - 1
                    if c < 0 or s_end[c] < b:
                        stats["skipped_occurrences"] += 1
                        continue
                    key = (s_ids[c],)
                counts.setdefault(i, Counter())[key] += 1
                stats["occurrences"] += 1
    return counts, stats


def align_plans(ctx: InitContext) -> tuple[list[tuple[Plan | None, dict]], dict]:
    """Align (paper 002 §4.3): Σ_t f_t · mean(E_s[t]) over the aligned tuples, f normalized; unseen → Merge (cached)."""
    if "Align" in ctx.cache:
        return ctx.cache["Align"]
    t0 = time.perf_counter()
    counts, stats = align_counts(
        ctx.source_tokenizer, ctx.target_tokenizer, ctx.corpus("Align"), [t.id for t in ctx.new_tokens]
    )
    stats["seconds"] = round(time.perf_counter() - t0, 3)
    merge = None
    out = []
    for k, tok in enumerate(ctx.new_tokens):
        seen = counts.get(tok.id)
        if not seen:
            merge = merge or merge_plans(ctx)
            plan, rec = merge[k]
            # Merge's own fallback (e.g. to Mean) is kept beside Align's.
            rec = {
                **rec,
                "rule": f"merge:{rec['rule']}",
                "fallback": "unseen_in_corpus",
                "merge_fallback": rec["fallback"],
            }
            out.append((plan, rec))
            continue
        total = sum(seen.values())
        plan: Plan = {}
        for ids, c in seen.items():
            for i in ids:
                plan[i] = plan.get(i, 0.0) + (c / total) / len(ids)
        top = [[list(ids), c] for ids, c in seen.most_common(5)]
        out.append(
            (
                plan,
                {
                    "rule": "aligned_source_spans",
                    "occurrences": total,
                    "tuples": len(seen),
                    "top_tuples": top,
                    "fallback": None,
                },
            )
        )
    ctx.cache["Align"] = (out, stats)
    return out, stats


def align_stats(ctx: InitContext) -> dict:
    """The report's corpus statistics and timing of Align (occurrences counted, skipped, seconds)."""
    return {"align": ctx.cache["Align"][1]} if "Align" in ctx.cache else {}


@register_method("Align", needs_corpus=True, stats=align_stats, order=40)
def init_align(source: Any, ctx: InitContext, role: str) -> InitResult:
    """Align (paper 002 §4.3): frequency-weighted mean rows of the source spans aligned with each new token over D."""
    plans, _ = align_plans(ctx)
    return InitResult(rows=rows_from_plans(source, ctx, [p for p, _ in plans]), records=[r for _, r in plans])
