"""Initialize the target model's new embedding and LM-head rows (paper 002 §4; METHODS.md "Initialization").

Input: a source model folder (HF, safetensors, its tokenizer inside) and an expanded target tokenizer folder: a real BPE
over V_s ∪ V_new whose new ids follow the source ids contiguously. Output: the target model folder, with embeddings and
LM head resized to the target vocabulary, the source rows copied bit for bit, every other row set explicitly (never by
``resize_token_embeddings``'s own initialization), config.vocab_size updated and the target tokenizer saved alongside.

Untied input embeddings and LM head are initialized separately by the same rule; a tied model has one matrix and stays
tied. Methods live in a registry (``INIT_METHODS``): a method maps (source matrix, context, role) to the new rows and
one record per new token. Random draws; every other method is a weighted sum of source rows (a "plan": source id ->
weight), computed once per run and applied to each matrix:

- Mean: equal weights over the source BPE model's spelling of the new token's own piece (see ``source_subwords``).
- Merge: hierarchical mean down T_t's merge tree (BPE replayed on the piece) until every part is in V_s; no rule: Mean.
- Align: over the corpus D (``--corpus``), the source tokens inside each occurrence's span (byte spans, special tokens
  excluded, every occurrence counted), weighted by tuple frequency; a token unseen in D: Merge. See ``align_counts``.
- FOCUS: fastText CBOW on D tokenized with T_t (PyPI fasttext-wheel), sparsemax over cosine similarities to the
  overlapping tokens' vectors; a token without a fastText vector: Random, as deepfocus does.
- EEVE: input rows as Mean, output rows the first subword's LM-head row; a tied model gets the input rule only.

Vocabulary padding (``pad_to_multiple_of``, 1 = none; 8 is the reference practice on GPU): the matrices get extra rows
after the last target id so that their size is a multiple of N. No tokenizer id maps to them, so they must never be
produced: their rows are the mean of the source rows, and their ids go into the saved generation_config's
``suppress_tokens`` so that ``generate()`` masks them. config.vocab_size is the padded size; len(tokenizer) is not.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from workflow_scripts.io import atomic_path, read_lines, seed_everything, set_threads, setup_logging, write_json
from workflow_scripts.vocab import bytes_to_unicode

METASPACE = "\u2581"  # "▁", SentencePiece's word-boundary marker
REPLACEMENT_CHAR = "\ufffd"
_STATS_CHUNK = 8192  # rows per block when reducing over V_s, so a 128K-row bf16 matrix is never upcast whole


# --------------------------------------------------------------------------------------------------------------------
# Tokens: which ids are new, what their BPE-model strings are, and how they map onto the source BPE.
# --------------------------------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def unicode_to_bytes() -> dict[str, int]:
    """Inverse of :func:`bytes_to_unicode`."""
    return {c: b for b, c in bytes_to_unicode().items()}


def piece_bytes(piece: str) -> bytes:
    """The bytes a byte-level BPE piece stands for (its characters are in the byte-to-unicode alphabet)."""
    table = unicode_to_bytes()
    try:
        return bytes(table[c] for c in piece)
    except KeyError as e:
        raise ValueError(f"piece {piece!r} has a character outside the byte-level alphabet: {e}") from e


def _tokenizer_json(tokenizer: Any) -> dict:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise TypeError(f"{type(tokenizer).__name__} has no backend_tokenizer: initialize needs fast (tokenizers) BPE")
    return json.loads(backend.to_str())


def _has_component(node: Any, kind: str) -> bool:
    """Whether a tokenizer.json component (possibly a Sequence) contains one of type ``kind``."""
    if isinstance(node, dict):
        return node.get("type") == kind or any(_has_component(v, kind) for v in node.values())
    if isinstance(node, list):
        return any(_has_component(v, kind) for v in node)
    return False


def is_byte_level(tokenizer: Any) -> bool:
    """Whether the tokenizer is a byte-level BPE (GPT-2, Llama-3, SmolLM2): its pieces are byte-to-unicode strings."""
    spec = _tokenizer_json(tokenizer)
    return _has_component(spec.get("pre_tokenizer"), "ByteLevel") or _has_component(spec.get("decoder"), "ByteLevel")


@dataclass(frozen=True)
class NewToken:
    """One token of V_new: its id in T_t, its BPE-model string and a readable rendering."""

    id: int
    piece: str  # the BPE vocabulary string: byte-to-unicode form (byte-level) or "▁"-marked characters
    text: str  # readable: bytes decoded with \\x escapes for partial UTF-8; "▁" shown as a space
    partial_utf8: bool  # byte-level piece whose bytes are not valid UTF-8 (decodes to U+FFFD)


def find_new_tokens(source_tokenizer: Any, target_tokenizer: Any) -> list[NewToken]:
    """V_new as T_t's ids above the source ids, after checking that T_t keeps every source token at its source id."""
    for name, tok in (("source", source_tokenizer), ("target", target_tokenizer)):
        if (kind := _tokenizer_json(tok)["model"].get("type")) != "BPE":
            raise ValueError(f"initialize needs BPE tokenizers; the {name} tokenizer's model is {kind!r}")
    src_vocab = source_tokenizer.get_vocab()
    tgt_vocab = target_tokenizer.get_vocab()
    moved = [(p, i, tgt_vocab.get(p)) for p, i in src_vocab.items() if tgt_vocab.get(p) != i]
    if moved:
        raise ValueError(
            f"target tokenizer does not keep the source vocabulary at its ids ({len(moved)} tokens differ, e.g. "
            f"{moved[:3]} as (piece, source id, target id)); expand the source tokenizer instead of retraining it"
        )
    n_src = max(src_vocab.values()) + 1
    new_ids = sorted(i for p, i in tgt_vocab.items() if p not in src_vocab)
    if new_ids and new_ids != list(range(n_src, n_src + len(new_ids))):
        raise ValueError(
            f"new target ids must follow the source ids contiguously from {n_src}; got {new_ids[:5]}...{new_ids[-3:]}"
        )
    model = target_tokenizer.backend_tokenizer.model
    added = [i for i in new_ids if model.id_to_token(i) is None]
    if added:
        # Added tokens are matched before BPE and are reachable by no merge (METHODS.md "Tokenizers"): not a real BPE.
        raise ValueError(
            f"{len(added)} new target ids are added tokens, not BPE vocabulary entries (e.g. {added[:5]}); the target "
            "tokenizer must extend the BPE model itself (vocab + merges)"
        )
    byte_level = is_byte_level(target_tokenizer)
    tokens = []
    for i in new_ids:
        piece = model.id_to_token(i)
        if byte_level:
            raw = piece_bytes(piece)
            try:
                text, partial = raw.decode("utf-8"), False
            except UnicodeDecodeError:
                text, partial = raw.decode("utf-8", errors="backslashreplace"), True
        else:
            text, partial = piece.replace(METASPACE, " "), False
        tokens.append(NewToken(id=i, piece=piece, text=text, partial_utf8=partial))
    return tokens


def _clean_bpe_model(tokenizer: Any) -> Any:
    """The tokenizer's BPE model, rebuilt without dropout if it has any (dropout would make the mapping random)."""
    from tokenizers import Tokenizer

    if not tokenizer.backend_tokenizer.model.dropout:
        return tokenizer.backend_tokenizer.model
    spec = _tokenizer_json(tokenizer)
    spec["model"]["dropout"] = None
    return Tokenizer.from_str(json.dumps(spec)).model


def source_subwords(source_bpe: Any, piece: str) -> tuple[list[int], str | None]:
    """Source ids spelling ``piece``: the SOURCE BPE model applied to the new token's own BPE string (METHODS.md).

    For byte-level BPE the string is already in byte-to-unicode form, so this is exactly its bytes; for SentencePiece
    BPE it is its "▁"-marked characters (byte fallback covers characters V_s lacks). Returns (ids, fallback): fallback
    is None, "unk_dropped" (unknown characters left out) or "no_subwords" (nothing maps; callers fall back).
    """
    found = source_bpe.tokenize(piece)
    unk = source_bpe.unk_token
    unk_id = source_bpe.token_to_id(unk) if unk else None
    ids = [t.id for t in found if t.id != unk_id]
    covered = len(ids) == len(found) and (source_bpe.byte_fallback or "".join(t.value for t in found) == piece)
    if not ids:
        return [], "no_subwords"
    # Without byte fallback and without an unk token, the BPE model silently skips unknown characters.
    return ids, None if covered else "unk_dropped"


def map_full_tokenizer_on_piece(source_tokenizer: Any, token: NewToken) -> list[int]:
    """WRONG mapping (1), kept only to measure it: run the full source tokenizer on the printed piece string.

    For byte-level BPE the piece is already byte-to-unicode text, so its characters are byte-encoded a second time.
    """
    return source_tokenizer.encode(token.piece, add_special_tokens=False)


def map_decode_encode(source_tokenizer: Any, target_tokenizer: Any, token: NewToken) -> list[int]:
    """WRONG mapping (2), kept only to measure it: decode the new token to text, then encode the text.

    Partial-UTF-8 byte-level tokens decode to U+FFFD and so map to the replacement character's row.
    """
    return source_tokenizer.encode(target_tokenizer.decode([token.id]), add_special_tokens=False)


# --------------------------------------------------------------------------------------------------------------------
# The registry of methods.
# --------------------------------------------------------------------------------------------------------------------


@dataclass
class InitContext:
    """What a method may use besides the source matrix: tokenizers, V_s, V_new, seed, method-specific resources."""

    source_tokenizer: Any
    target_tokenizer: Any
    source_ids: list[int]  # ids of V_s: the rows that statistics ("over the source rows") run over
    new_tokens: list[NewToken]
    seed: int
    tied: bool
    resources: dict[str, Any] = field(default_factory=dict)  # e.g. the corpus D for Align / FOCUS
    _bpe: Any = None
    _subwords: dict[int, tuple[list[int], str | None]] = field(default_factory=dict)
    _stats: dict[tuple, tuple[Any, Any]] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict)  # role-independent plans (Merge trees, Align counts, FOCUS)

    def corpus(self, method: str) -> list[str]:
        """The adaptation corpus D (``resources["corpus"]``); a clear error for methods that need it."""
        lines = self.resources.get("corpus")
        if lines is None:
            raise ValueError(
                f"{method} initialization needs the adaptation corpus D: pass --corpus FILE (one sentence a line)"
            )
        lines = [line for line in lines if line.strip()]
        if not lines:
            raise ValueError(f"{method} initialization got an empty corpus D")
        return lines

    def row_stats(self, matrix: Any) -> tuple[Any, Any]:
        """:func:`source_row_stats` of ``matrix`` over V_s, computed once per matrix."""
        key = (matrix.data_ptr(), tuple(matrix.shape))
        if key not in self._stats:
            self._stats[key] = source_row_stats(matrix, self.source_ids)
        return self._stats[key]

    def subwords(self, token: NewToken) -> tuple[list[int], str | None]:
        """The source ids spelling ``token`` (:func:`source_subwords`), cached across roles and methods."""
        if token.id not in self._subwords:
            if self._bpe is None:
                self._bpe = _clean_bpe_model(self.source_tokenizer)
            self._subwords[token.id] = source_subwords(self._bpe, token.piece)
        return self._subwords[token.id]


@dataclass
class InitResult:
    """New rows (one per token of ``ctx.new_tokens``, float64) and one JSON-able record per token.

    Each record has "rule" (what produced the row) and "fallback" (None, or why the method's own rule did not apply).
    """

    rows: Any  # torch.Tensor [k, d]
    records: list[dict]


# (source matrix [n_rows, d] in its own dtype, context, role "input" | "output") -> InitResult
InitMethod = Callable[[Any, InitContext, str], InitResult]
INIT_METHODS: dict[str, InitMethod] = {}
CORPUS_METHODS = ("Align", "FOCUS")  # methods that read the adaptation corpus D (resources["corpus"])


def register_method(name: str) -> Callable[[InitMethod], InitMethod]:
    """Register an initialization method under its paper name (Random, Mean, Merge, Align, FOCUS, EEVE)."""

    def deco(fn: InitMethod) -> InitMethod:
        if name in INIT_METHODS:
            raise ValueError(f"initialization method {name!r} is registered twice")
        INIT_METHODS[name] = fn
        return fn

    return deco


def source_row_stats(matrix: Any, source_ids: list[int]) -> tuple[Any, Any]:
    """Per-dimension mean and (population) std over the V_s rows, in float64, reduced block by block."""
    import torch

    idx = torch.as_tensor(source_ids, dtype=torch.long)
    n = len(source_ids)
    total = torch.zeros(matrix.shape[1], dtype=torch.float64)
    for s in range(0, n, _STATS_CHUNK):
        total += matrix[idx[s : s + _STATS_CHUNK]].to(torch.float64).sum(0)
    mean = total / n
    sq = torch.zeros_like(mean)
    for s in range(0, n, _STATS_CHUNK):  # two passes: numerically safer than E[x²] − E[x]²
        sq += ((matrix[idx[s : s + _STATS_CHUNK]].to(torch.float64) - mean) ** 2).sum(0)
    return mean, (sq / n).sqrt()


def mean_of_rows(matrix: Any, id_lists: list[list[int]]) -> Any:
    """Row k = mean of ``matrix`` rows over ``id_lists[k]`` (a repeated id counts per occurrence), float64; one gather.

    Every list must be non-empty.
    """
    import torch

    flat = torch.as_tensor([i for ids in id_lists for i in ids], dtype=torch.long)
    counts = torch.as_tensor([len(ids) for ids in id_lists], dtype=torch.long)
    segment = torch.repeat_interleave(torch.arange(len(id_lists)), counts)
    sums = torch.zeros(len(id_lists), matrix.shape[1], dtype=torch.float64)
    sums.index_add_(0, segment, matrix.index_select(0, flat).to(torch.float64))
    return sums / counts[:, None].to(torch.float64)


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


# --------------------------------------------------------------------------------------------------------------------
# Methods that are weighted sums of source rows: Merge, Align, FOCUS, EEVE. A plan maps source id -> weight.
# --------------------------------------------------------------------------------------------------------------------

Plan = dict[int, float]


def combine_rows(matrix: Any, plans: list[Plan]) -> Any:
    """Row k = Σ_i plans[k][i] · matrix[i], in float64, with one gather; every plan must be non-empty."""
    import torch

    ids = torch.as_tensor([i for plan in plans for i in plan], dtype=torch.long)
    weights = torch.as_tensor([w for plan in plans for w in plan.values()], dtype=torch.float64)
    segment = torch.repeat_interleave(torch.arange(len(plans)), torch.as_tensor([len(p) for p in plans]))
    out = torch.zeros(len(plans), matrix.shape[1], dtype=torch.float64)
    out.index_add_(0, segment, matrix.index_select(0, ids).to(torch.float64) * weights[:, None])
    return out


def _rows_from_plans(source: Any, ctx: InitContext, plans: list[Plan | None]) -> Any:
    """Rows for plans; a None plan (nothing maps onto the token) gets the mean of all source rows, as Mean does."""
    import torch

    rows = torch.empty(len(plans), source.shape[1], dtype=torch.float64)
    have = [k for k, plan in enumerate(plans) if plan]
    if have:
        rows[have] = combine_rows(source, [plans[k] for k in have])
    if len(have) < len(plans):
        rows[[k for k, plan in enumerate(plans) if not plan]] = ctx.row_stats(source)[0]
    return rows


def _mean_plan(ctx: InitContext, token: NewToken) -> Plan | None:
    """Mean's plan: equal weights over the source subwords (a repeated subword counts per occurrence)."""
    ids, _ = ctx.subwords(token)
    if not ids:
        return None
    plan: Plan = {}
    for i in ids:
        plan[i] = plan.get(i, 0.0) + 1.0 / len(ids)
    return plan


def _scaled_add(acc: Plan, plan: Plan, w: float) -> None:
    for i, v in plan.items():
        acc[i] = acc.get(i, 0.0) + w * v


# ---- Merge ----------------------------------------------------------------------------------------------------------


def bpe_merge_ranks(tokenizer: Any) -> dict[tuple[str, str], int]:
    """T_t's merge rules as (left, right) -> rank (lower applies first), read from tokenizer.json."""
    ranks: dict[tuple[str, str], int] = {}
    for r, m in enumerate(_tokenizer_json(tokenizer)["model"]["merges"]):
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

    def walk(node: Any, fallbacks: list[str]) -> tuple[Plan | None, Any]:
        s = _tree_string(node)
        if s in src_vocab:
            return {src_vocab[s]: 1.0}, src_vocab[s]
        if isinstance(node, str):  # a character outside V_s (SentencePiece without the character): its Mean
            tok = by_piece.get(s) or NewToken(id=-1, piece=s, text=s, partial_utf8=False)
            fallbacks.append("part_mean")
            return _mean_plan(ctx, tok), s
        (lp, lt), (rp, rt) = walk(node[0], fallbacks), walk(node[1], fallbacks)
        if lp is None or rp is None:
            return None, [lt, rt]
        plan: Plan = {}
        _scaled_add(plan, lp, 0.5)
        _scaled_add(plan, rp, 0.5)
        return plan, [lt, rt]

    out = []
    for tok in ctx.new_tokens:
        tree = merge_tree(tok.piece, ranks)
        if tree is None or isinstance(tree, str):
            plan = _mean_plan(ctx, tok)
            fallback = "no_merge_rule" if plan else "no_subwords"
            out.append(
                (plan, {"rule": "mean_of_source_subwords", "source_ids": ctx.subwords(tok)[0], "fallback": fallback})
            )
            continue
        fallbacks: list[str] = []
        plan, shape = walk(tree, fallbacks)
        fallback = None if plan else "no_subwords"
        if plan and fallbacks:
            fallback = "part_without_merge_rule"
        out.append((plan, {"rule": "hierarchical_mean", "merge_tree": shape, "fallback": fallback}))
    ctx.cache["Merge"] = out
    return out


@register_method("Merge")
def init_merge(source: Any, ctx: InitContext, role: str) -> InitResult:
    """Merge (paper 002 §4.3): hierarchical mean of source rows through T_t's merge rules; fallback Mean."""
    plans = merge_plans(ctx)
    return InitResult(rows=_rows_from_plans(source, ctx, [p for p, _ in plans]), records=[r for _, r in plans])


# ---- Align ----------------------------------------------------------------------------------------------------------


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
    edges) it is skipped and counted.
    """

    src_be, tgt_be = source_tokenizer.backend_tokenizer, target_tokenizer.backend_tokenizer
    src_len, tgt_len = _byte_lengths(source_tokenizer).tolist(), _byte_lengths(target_tokenizer).tolist()
    special = set(source_tokenizer.all_special_ids) | set(target_tokenizer.all_special_ids)
    special |= {int(i) for i in source_tokenizer.added_tokens_decoder}
    special |= {int(i) for i in target_tokenizer.added_tokens_decoder}
    new = set(new_ids)
    counts: dict[int, Counter] = {}
    stats = {"sentences": len(sentences), "char_offset_sentences": 0, "occurrences": 0, "skipped_occurrences": 0}
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
                else:
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


@register_method("Align")
def init_align(source: Any, ctx: InitContext, role: str) -> InitResult:
    """Align (paper 002 §4.3): frequency-weighted mean rows of the source spans aligned with each new token over D."""
    plans, _ = align_plans(ctx)
    return InitResult(rows=_rows_from_plans(source, ctx, [p for p, _ in plans]), records=[r for _, r in plans])


# ---- FOCUS ----------------------------------------------------------------------------------------------------------

# deepfocus's defaults for a fastText model trained on the target-tokenized corpus (FOCUS, Dobler & de Melo 2023).
FASTTEXT_DEFAULTS = {"dim": 100, "epoch": 3, "min_count": 10, "neg": 10}
_FASTTEXT_SPACE = set(" \n\t\v\f\r\0")


def sparsemax(z: Any) -> Any:
    """Sparsemax (Martins & Astudillo 2016) of a 1-D float64 tensor: the Euclidean projection onto the simplex."""
    import torch

    zs, _ = torch.sort(z, descending=True)
    k = torch.arange(1, z.numel() + 1, dtype=z.dtype)
    cum = zs.cumsum(0)
    support = 1 + k * zs > cum
    k_z = int(support.nonzero().max()) + 1
    tau = (cum[k_z - 1] - 1) / k_z
    return (z - tau).clamp(min=0)


def fasttext_word(piece: str) -> str:
    """A T_t piece as one fastText word: characters fastText splits on are written as \\xNN escapes."""
    if not _FASTTEXT_SPACE & set(piece):
        return piece
    return "".join(f"\\x{ord(c):02x}" if c in _FASTTEXT_SPACE else c for c in piece)


def _fasttext_cbow(path: str, seed: int, **options: Any) -> Any:
    """fastText CBOW on one thread with ``seed``: the wrapper of fasttext-wheel 0.9.2 accepts no seed for
    unsupervised training although the C++ trainer has one, so the arguments are built the way the wrapper does."""
    import fasttext
    from fasttext import FastText as ft

    kwargs = {"model": "cbow", "thread": 1, "verbose": 0, **options}
    try:
        return fasttext.train_unsupervised(path, seed=seed, **kwargs)
    except TypeError:
        pass
    args, manual = ft.read_args([path], {**kwargs, "seed": seed}, ["input", *kwargs, "seed"], ft.unsupervised_default)
    built = ft._build_args(args, manual)
    model = ft._FastText(args=built)
    ft.fasttext.train(model.f, built)
    model.set_args(model.f.getArgs())
    return model


def train_fasttext(target_tokenizer: Any, sentences: list[str], seed: int, **options: Any) -> dict[str, Any]:
    """fastText CBOW on D tokenized with T_t (paper 002 §4.2): {T_t piece: vector} for the words it kept.

    One thread so that the vectors depend only on the seed (fastText's multi-threaded SGD is not reproducible).
    """
    import tempfile

    import numpy as np

    opts = {**FASTTEXT_DEFAULTS, **options}
    encs = target_tokenizer.backend_tokenizer.encode_batch(sentences, add_special_tokens=False)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "d.tok.txt"
        with open(path, "w", encoding="utf-8") as f:
            for enc in encs:
                f.write(" ".join(fasttext_word(p) for p in enc.tokens) + "\n")
        model = _fasttext_cbow(
            str(path), seed, dim=opts["dim"], epoch=opts["epoch"], minCount=opts["min_count"], neg=opts["neg"]
        )
    words = model.get_words()
    by_word = {fasttext_word(p): p for p in target_tokenizer.backend_tokenizer.get_vocab(with_added_tokens=False)}
    return {by_word[w]: np.asarray(model.get_word_vector(w), dtype=np.float64) for w in words if w in by_word}


def focus_plans(ctx: InitContext) -> tuple[list[tuple[Plan | None, dict]], dict]:
    """FOCUS (Dobler & de Melo 2023; paper 002 §4.2): sparsemax over fastText cosine similarities to the overlapping
    tokens (V_s ∩ V_t with a fastText vector, special tokens excluded); weights applied to their source rows (cached).

    A new token without a fastText vector (rarer than min_count in T_t's tokenization of D) is drawn as Random, as
    deepfocus does (fallback "no_fasttext_vector").
    """
    import numpy as np
    import torch

    if "FOCUS" in ctx.cache:
        return ctx.cache["FOCUS"]
    t0 = time.perf_counter()
    vectors = ctx.resources.get("fasttext_vectors")  # tests may inject {piece: vector}
    if vectors is None:
        vectors = train_fasttext(
            ctx.target_tokenizer, ctx.corpus("FOCUS"), ctx.seed, **ctx.resources.get("fasttext_options", {})
        )
    t_train = time.perf_counter() - t0
    src_vocab = ctx.source_tokenizer.get_vocab()
    special = set(ctx.source_tokenizer.all_special_ids) | {int(i) for i in ctx.source_tokenizer.added_tokens_decoder}
    overlap = sorted((src_vocab[p], p) for p in vectors if p in src_vocab and src_vocab[p] not in special)
    if not overlap:
        raise ValueError("FOCUS: no source token has a fastText vector; the corpus D is too small for min_count")
    ov_ids = [i for i, _ in overlap]
    ov = torch.as_tensor(np.stack([vectors[p] for _, p in overlap]), dtype=torch.float64)
    ov = ov / ov.norm(dim=1, keepdim=True).clamp(min=1e-12)
    out = []
    for tok in ctx.new_tokens:
        vec = vectors.get(tok.piece)
        if vec is None:
            out.append((None, {"rule": "random", "fallback": "no_fasttext_vector"}))
            continue
        v = torch.as_tensor(vec, dtype=torch.float64)
        sim = ov @ (v / v.norm().clamp(min=1e-12))
        w = sparsemax(sim)
        nz = torch.nonzero(w).flatten().tolist()
        plan = {ov_ids[j]: float(w[j]) for j in nz}
        top = sorted(plan.items(), key=lambda kv: -kv[1])[:5]
        out.append(
            (
                plan,
                {
                    "rule": "sparsemax_fasttext",
                    "support": len(plan),
                    "top": [[i, round(x, 4)] for i, x in top],
                    "fallback": None,
                },
            )
        )
    stats = {
        "overlapping_tokens": len(ov_ids),
        "fasttext_words": len(vectors),
        "seconds_fasttext": round(t_train, 3),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    ctx.cache["FOCUS"] = (out, stats)
    return out, stats


@register_method("FOCUS")
def init_focus(source: Any, ctx: InitContext, role: str) -> InitResult:
    """FOCUS (paper 002 §4.2): sparsemax-weighted combination of overlapping tokens' rows by fastText similarity."""
    plans, _ = focus_plans(ctx)
    rows = _rows_from_plans(source, ctx, [p for p, _ in plans])
    missing = [k for k, (p, _) in enumerate(plans) if p is None]
    if missing:
        rows[missing] = init_random(source, ctx, role).rows[missing]
    return InitResult(rows=rows, records=[r for _, r in plans])


# ---- EEVE -----------------------------------------------------------------------------------------------------------


@register_method("EEVE")
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
    return InitResult(rows=_rows_from_plans(source, ctx, plans), records=records)


# --------------------------------------------------------------------------------------------------------------------
# Applying a method to a model.
# --------------------------------------------------------------------------------------------------------------------


def _output_matrix(model: Any) -> tuple[Any, Any]:
    """The LM head's weight [V, d] and bias [V] (or None)."""
    head = model.get_output_embeddings()
    if head is None:
        raise ValueError(f"{type(model).__name__} has no output embeddings (LM head); initialize needs a causal LM")
    return head.weight, getattr(head, "bias", None)


def is_tied(model: Any) -> bool:
    """Whether the input embeddings and the LM head are one tensor."""
    out_w, _ = _output_matrix(model)
    return out_w.data_ptr() == model.get_input_embeddings().weight.data_ptr()


def _norm_stats(matrix: Any, source_ids: list[int], new_ids: list[int]) -> dict:
    import torch

    src = matrix[torch.as_tensor(source_ids, dtype=torch.long)].to(torch.float64).norm(dim=1)
    new = matrix[torch.as_tensor(new_ids, dtype=torch.long)].to(torch.float64).norm(dim=1) if new_ids else None
    src_mean = float(src.mean())
    new_mean = float(new.mean()) if new is not None else None
    return {
        "mean_l2_norm_new": new_mean,
        "mean_l2_norm_source": src_mean,
        "new_over_source": (new_mean / src_mean) if new_mean is not None and src_mean else None,
        "std_l2_norm_new": float(new.std(correction=0)) if new is not None else None,
        "std_l2_norm_source": float(src.std(correction=0)),
    }


def padded_size(n: int, multiple: int) -> int:
    """``n`` rounded up to a multiple of ``multiple`` (1 = unchanged)."""
    if multiple < 1:
        raise ValueError(f"pad_to_multiple_of must be >= 1, got {multiple}")
    return math.ceil(n / multiple) * multiple


def mapping_diagnostics(source_tokenizer: Any, target_tokenizer: Any, tokens: list[NewToken], ctx: InitContext) -> dict:
    """How often the two wrong mappings (decode→encode; full tokenizer on the piece) disagree with the BPE-model one."""
    fffd = source_tokenizer.encode(REPLACEMENT_CHAR, add_special_tokens=False)
    fffd_single = fffd[0] if len(fffd) == 1 else None
    decode_diff, piece_diff, fffd_uses = [], [], []
    for tok in tokens:
        ids, _ = ctx.subwords(tok)
        if map_decode_encode(source_tokenizer, target_tokenizer, tok) != ids:
            decode_diff.append(tok.id)
        if map_full_tokenizer_on_piece(source_tokenizer, tok) != ids:
            piece_diff.append(tok.id)
        if fffd_single is not None and fffd_single in ids:
            fffd_uses.append(tok.id)
    return {
        "partial_utf8_tokens": sum(t.partial_utf8 for t in tokens),
        "decode_encode_differs": len(decode_diff),
        "decode_encode_differs_ids": decode_diff,
        "full_tokenizer_on_piece_differs": len(piece_diff),
        "replacement_char_token_id": fffd_single,
        "bpe_model_mapping_uses_replacement_char": fffd_uses,
    }


def method_stats(ctx: InitContext, method: str) -> dict:
    """Corpus statistics and timings of the corpus-based methods (Align, FOCUS), and EEVE's tied-model rule."""
    out: dict[str, Any] = {}
    if "Align" in ctx.cache:
        out["align"] = ctx.cache["Align"][1]
    if "FOCUS" in ctx.cache:
        out["focus"] = ctx.cache["FOCUS"][1]
    if method == "EEVE":
        out["eeve"] = (
            "tied: one matrix, initialized by the input rule (mean of subwords), i.e. as Mean"
            if ctx.tied
            else "untied: input rows mean of subwords, output rows the first subword's LM-head row"
        )
    return out


def initialize_model(
    model: Any,
    source_tokenizer: Any,
    target_tokenizer: Any,
    method: str,
    seed: int,
    pad_to_multiple_of: int = 1,
    resources: dict[str, Any] | None = None,
) -> dict:
    """Resize ``model`` in place to T_t's vocabulary (padded), set every non-source row explicitly; return the report.

    Source rows are copied unchanged; new rows come from ``INIT_METHODS[method]`` (input and untied output separately);
    padding rows are the source mean and are listed in generation_config.suppress_tokens.
    """
    import torch

    if method not in INIT_METHODS:
        raise ValueError(f"unknown initialization method {method!r}; registered: {sorted(INIT_METHODS)}")
    seed_everything(seed)
    tokens = find_new_tokens(source_tokenizer, target_tokenizer)
    source_ids = sorted(source_tokenizer.get_vocab().values())
    n_target = max(target_tokenizer.get_vocab().values()) + 1
    emb = model.get_input_embeddings().weight
    n_rows_src = emb.shape[0]
    if max(source_ids) >= n_rows_src:
        raise ValueError(
            f"source tokenizer has id {max(source_ids)} but the model has only {n_rows_src} embedding rows"
        )
    tied = is_tied(model)
    ctx = InitContext(source_tokenizer, target_tokenizer, source_ids, tokens, seed, tied, resources or {})
    fn = INIT_METHODS[method]

    # Compute every new row from the untouched source matrices before resizing.
    with torch.no_grad():
        matrices: dict[str, Any] = {"input": emb.detach()}
        out_w, out_b = _output_matrix(model)
        if not tied:
            # A head bias is one more dimension of each output row: the same rule covers it.
            matrices["output"] = out_w.detach() if out_b is None else torch.cat([out_w, out_b[:, None]], 1).detach()
        results = {role: fn(m, ctx, role) for role, m in matrices.items()}
        pad_rows = {role: ctx.row_stats(m)[0] for role, m in matrices.items()}

    n_rows = padded_size(max(n_target, n_rows_src), pad_to_multiple_of)
    # mean_resizing=False: the multivariate-normal draw would cost a d×d covariance for rows we overwrite anyway.
    model.resize_token_embeddings(n_rows, mean_resizing=False)
    if model.config.get_text_config().vocab_size != n_rows:
        raise RuntimeError(
            f"config.vocab_size is {model.config.get_text_config().vocab_size} after resizing to {n_rows}"
        )
    padding_ids = list(range(n_target, n_rows))
    new_ids = [t.id for t in tokens]
    # Rows past the source matrix that are neither new nor padding would keep resize's random init: there must be none.
    unset = set(range(n_rows_src, n_rows)) - set(new_ids) - set(padding_ids)
    if unset:
        raise RuntimeError(f"rows {sorted(unset)[:5]} would keep resize_token_embeddings' initialization")
    # Padding ids inside the source matrix (a source model that was padded already) keep their source rows.
    fresh_padding = [i for i in padding_ids if i >= n_rows_src]

    with torch.no_grad():
        targets = {"input": (model.get_input_embeddings().weight, None)}
        if not tied:
            targets["output"] = _output_matrix(model)
        for role, (weight, bias) in targets.items():
            d = weight.shape[1]
            rows = results[role].rows
            if new_ids:
                weight[new_ids] = rows[:, :d].to(weight.dtype)
                if bias is not None:
                    bias[new_ids] = rows[:, d].to(bias.dtype)
            if fresh_padding:
                weight[fresh_padding] = pad_rows[role][:d].to(weight.dtype)
                if bias is not None:
                    bias[fresh_padding] = pad_rows[role][d].to(bias.dtype)

    if padding_ids:
        gen_cfg = model.generation_config
        gen_cfg.suppress_tokens = sorted(set(gen_cfg.suppress_tokens or []) | set(padding_ids))
        # A config marked as derived from the model config may be rebuilt from it at generate() time, losing the list.
        gen_cfg._from_model_config = False

    records = []
    for k, tok in enumerate(tokens):
        rec: dict[str, Any] = {"id": tok.id, "piece": tok.piece, "text": tok.text, "partial_utf8": tok.partial_utf8}
        per_role = {role: r.records[k] for role, r in results.items()}
        if len(per_role) == 1 or per_role["input"] == per_role["output"]:
            rec.update(per_role["input"])
        else:
            rec.update(per_role)
        records.append(rec)
    fallbacks = {
        role: dict(Counter(r["fallback"] for r in res.records if r["fallback"])) for role, res in results.items()
    }
    final = {"input": model.get_input_embeddings().weight}
    if not tied:
        final["output"] = _output_matrix(model)[0]
    stats = {role: _norm_stats(w.detach(), source_ids, new_ids) for role, w in final.items()}
    if tied:
        stats["output"] = "tied: same matrix as input"
    return {
        "method": method,
        "seed": seed,
        "tied": tied,
        "byte_level": is_byte_level(source_tokenizer),
        "vocab": {
            "source": len(source_ids),
            "source_matrix_rows": n_rows_src,
            "target": n_target,
            "new": len(tokens),
            "rows": n_rows,
            "pad_to_multiple_of": pad_to_multiple_of,
            "padding_ids": padding_ids,
        },
        "stats": stats,
        "fallbacks": fallbacks,
        "mapping_diagnostics": mapping_diagnostics(source_tokenizer, target_tokenizer, tokens, ctx),
        "method_stats": method_stats(ctx, method),
        "tokens": records,
    }


def initialize(
    source_model: str | Path,
    target_tokenizer: str | Path,
    out: str | Path,
    method: str,
    seed: int,
    pad_to_multiple_of: int = 1,
    resources: dict[str, Any] | None = None,
) -> dict:
    """Load the source model and both tokenizers, initialize, and write the target model folder atomically."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    t0 = time.time()
    src_tok = AutoTokenizer.from_pretrained(source_model)
    tgt_tok = AutoTokenizer.from_pretrained(target_tokenizer)
    model = AutoModelForCausalLM.from_pretrained(source_model, dtype="auto")
    t_load = time.time()
    report = initialize_model(model, src_tok, tgt_tok, method, seed, pad_to_multiple_of, resources)
    t_init = time.time()
    with atomic_path(out) as tmp:
        model.save_pretrained(tmp)
        tgt_tok.save_pretrained(tmp)
    report["source_model"] = str(source_model)
    report["target_tokenizer"] = str(target_tokenizer)
    report["dtype"] = str(model.dtype).removeprefix("torch.")
    report["seconds"] = {
        "load": round(t_load - t0, 2),
        "initialize": round(t_init - t_load, 2),
        "save": round(time.time() - t_init, 2),
    }
    return report


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--source-model", required=True, help="source model folder (HF, safetensors, tokenizer inside)")
    p.add_argument("--target-tokenizer", required=True, help="expanded target tokenizer folder (BPE over V_s ∪ V_new)")
    p.add_argument("--method", required=True, choices=sorted(INIT_METHODS), help="initialization (paper names)")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--pad-to-multiple-of", type=int, default=1, help="pad the vocabulary rows to a multiple of N")
    p.add_argument("--corpus", help="adaptation corpus D, one sentence a line (required by Align and FOCUS)")
    p.add_argument("--fasttext-dim", type=int, default=FASTTEXT_DEFAULTS["dim"], help="FOCUS: fastText dimension")
    p.add_argument("--fasttext-epochs", type=int, default=FASTTEXT_DEFAULTS["epoch"], help="FOCUS: fastText epochs")
    p.add_argument(
        "--fasttext-min-count", type=int, default=FASTTEXT_DEFAULTS["min_count"], help="FOCUS: fastText minCount"
    )
    p.add_argument("--out", required=True, help="output target model folder")
    p.add_argument("--report", required=True, help="output JSON: per-token mapping, norms, fallbacks")
    p.add_argument("--threads", type=int)
    p.add_argument("--log")
    a = p.parse_args(argv)

    if a.method in CORPUS_METHODS and not a.corpus:
        p.error(f"--method {a.method} needs --corpus FILE (the adaptation corpus D, one sentence a line)")
    log = setup_logging(a.log)
    set_threads(a.threads)
    resources: dict[str, Any] = {}
    if a.corpus:
        resources["corpus"] = read_lines(a.corpus)
    resources["fasttext_options"] = {
        "dim": a.fasttext_dim,
        "epoch": a.fasttext_epochs,
        "min_count": a.fasttext_min_count,
    }
    report = initialize(a.source_model, a.target_tokenizer, a.out, a.method, a.seed, a.pad_to_multiple_of, resources)
    diag = report["mapping_diagnostics"]
    log.info(
        "%s: %d new tokens (%d partial UTF-8), %d rows, fallbacks %s, new/source norm %s, %s s",
        a.method,
        report["vocab"]["new"],
        diag["partial_utf8_tokens"],
        report["vocab"]["rows"],
        report["fallbacks"],
        {r: s["new_over_source"] for r, s in report["stats"].items() if isinstance(s, dict)},
        report["seconds"],
    )
    if report["method_stats"]:
        log.info("%s: %s", a.method, report["method_stats"])
    write_json(a.report, report)


if __name__ == "__main__":
    main()
