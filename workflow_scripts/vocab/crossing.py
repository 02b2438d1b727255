"""Where new tokens cut across source tokens: occurrences in D whose span does not start and end on a source-token
boundary (paper 002 §4.3: only then can Align's aligned source tokens differ from the tokens that spell the piece).

Spans are byte offsets into the normalized, pre-tokenized text, computed from the token lengths: source and target
tokenizers share normalizer and pre-tokenizer, so their tokens tile the same byte string. Character offsets are not
used because a byte-level token that is a partial UTF-8 sequence gets the offsets of the whole character(s) it touches.
A sentence whose byte tiling cannot be checked (a token of unknown length; the two byte totals differ) is measured
with character offsets instead and counted.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from tokenizers import Tokenizer

from workflow_scripts.pieces import piece_byte_length
from workflow_scripts.vocab.source import as_tokenizer


def byte_lengths(tok: Tokenizer) -> dict[int, int]:
    """Bytes each BPE vocabulary id stands for (``piece_byte_length``); unknown and added tokens are left out."""
    byte_level = not getattr(tok.model, "byte_fallback", False)
    unk = getattr(tok.model, "unk_token", None)
    out = {}
    for piece, i in tok.get_vocab(with_added_tokens=False).items():
        if piece == unk:
            continue
        try:
            out[i] = piece_byte_length(piece, byte_level)
        except ValueError:
            continue
    return out


def _spans(ids: Sequence[int], lengths: dict[int, int]) -> list[tuple[int, int]] | None:
    out, pos = [], 0
    for i in ids:
        n = lengths.get(i)
        if n is None:
            return None
        out.append((pos, pos + n))
        pos += n
    return out


def _total(spans: list[tuple[int, int]]) -> int:
    return spans[-1][1] if spans else 0


def boundary_crossings(
    source: Tokenizer | str | Path,
    target: Tokenizer | str | Path,
    lines: Iterable[str],
    new_ids: Iterable[int],
    batch_size: int = 4096,
) -> dict:
    """Occurrences of new tokens in ``lines`` (T_t's tokenization) and how many cross a source-token boundary.

    Returns counts over all new tokens (``occurrences``, ``crossing``, ``crossing_share``), the number of distinct new
    tokens with at least one crossing occurrence, per-id crossing counts, and the sentences measured by character
    offsets (``char_offset_sentences``).
    """
    source, target = as_tokenizer(source), as_tokenizer(target)
    src_len, tgt_len = byte_lengths(source), byte_lengths(target)
    new = set(new_ids)
    lines = [line for line in lines if line.strip()]
    occurrences, crossing = Counter(), Counter()
    char_sentences = 0
    for s in range(0, len(lines), batch_size):
        batch = lines[s : s + batch_size]
        tgt_encs = target.encode_batch(batch, add_special_tokens=False)
        todo = [j for j, e in enumerate(tgt_encs) if not new.isdisjoint(e.ids)]
        if not todo:
            continue
        src_encs = source.encode_batch([batch[j] for j in todo], add_special_tokens=False)
        for j, src_enc in zip(todo, src_encs, strict=True):
            tgt_enc = tgt_encs[j]
            src_spans, tgt_spans = _spans(src_enc.ids, src_len), _spans(tgt_enc.ids, tgt_len)
            if src_spans is None or tgt_spans is None or _total(src_spans) != _total(tgt_spans):
                char_sentences += 1
                src_spans, tgt_spans = list(src_enc.offsets), list(tgt_enc.offsets)
            bounds = set(itertools.chain.from_iterable(src_spans))
            for i, (a, b) in zip(tgt_enc.ids, tgt_spans, strict=True):
                if i in new:
                    occurrences[i] += 1
                    if a not in bounds or b not in bounds:
                        crossing[i] += 1
    n, c = sum(occurrences.values()), sum(crossing.values())
    return {
        "occurrences": n,
        "crossing": c,
        "crossing_share": c / n if n else 0.0,
        "tokens_with_crossing": len(crossing),
        "tokens_seen": len(occurrences),
        "crossing_by_id": {int(i): int(v) for i, v in sorted(crossing.items())},
        "char_offset_sentences": char_sentences,
    }
