"""Choosing V_new: candidates ranked by frequency, and a plan of exactly k reachable new tokens (paper 002 §3).

Appending a merge (l, r) -> l+r after every existing merge never changes how a pre-token is split unless l+r occurs in
it: the existing merges all run first (BPE applies the lowest-ranked applicable merge each time), and no existing merge
involves the new token. So a new token t is produced for its own string exactly when the current T_t splits that string
into two pieces (l, r) and the appended merge is (l, r), and later merges (ranked lower) cannot undo it; a string split
into three or more pieces cannot be produced by one merge. Candidates (V_aux minus V_s) are ranked by frequency (aux
tokenization of D; ties by aux id, i.e. the aux merge order) and taken in that order: a candidate that T_t splits in two
is added with that merge; otherwise its building blocks are added first, following the aux tokenizer's own merge tree
(c = a + b, recursively), each as soon as T_t splits it in two, and then the candidate itself if T_t now splits it in
two (a source merge can still cross the a|b boundary: the candidate is then skipped and its blocks stay). Building
blocks (for SentencePiece also single characters V_s lacks) are aux tokens too and count toward k; a candidate whose
blocks would exceed the budget is skipped for cheaper ones; passes repeat until exactly k tokens are in. This keeps
V_new inside V_aux minus V_s with exact reachability, and keeps more of the plain top-k (and gives shorter target text)
than merely skipping candidates until T_t splits them in two, which drops frequent words whose blocks are rare as final
aux tokens. The top-k candidates left out and the members ranked below k are reported.

``selection`` names the choice (config ``tokenizer.selection``): ``reachable`` (the default) is the plan above;
``topk`` is the paper's plain choice (§3: the k most frequent aux tokens not in V_s), ``plan_topk``: exactly the
first k candidates, each given the merge that produces it wherever T_t (with the other top-k tokens) splits it in two.
A top-k token whose building blocks are not in V_s ∪ V_new (T_t splits it into three or more pieces, or into byte
pieces) gets no merge: it is a vocabulary entry with an embedding row that T_t never produces (reported as
unreachable), as in the paper's SentencePiece route, where a piece without its intermediate pieces is never formed.
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from workflow_scripts.vocab.source import as_tokenizer


def rank_candidates(
    aux: Tokenizer | str | Path, source: Tokenizer | str | Path, lines: Sequence[str]
) -> list[tuple[str, int]]:
    """V_aux minus V_s with each token's frequency of use when D is tokenized by T_aux, most frequent first (§3).

    Ties are broken by the aux id (the aux merge order), so the ranking is deterministic. Tokens T_aux never outputs on
    D (intermediates of longer tokens) stay in, with frequency 0, at the end: after the used ones run out they are the
    building blocks that make long frequent tokens reachable.
    """
    aux, source = as_tokenizer(aux), as_tokenizer(source)
    encodings = aux.encode_batch([line for line in lines if line.strip()], add_special_tokens=False)
    ids = np.fromiter((i for e in encodings for i in e.ids), dtype=np.int64)
    counts = np.bincount(ids, minlength=aux.get_vocab_size(with_added_tokens=True))
    source_vocab = source.get_vocab(with_added_tokens=True)
    special = {t.content for t in aux.get_added_tokens_decoder().values()}
    ranked = [
        (idx, token, int(counts[idx]))
        for token, idx in aux.get_vocab(with_added_tokens=False).items()
        if token not in source_vocab and token not in special
    ]
    ranked.sort(key=lambda x: (-x[2], x[0]))
    return [(token, freq) for _, token, freq in ranked]


@dataclass
class ExpansionPlan:
    """V_new in frequency order, the merges that produce it (in the order they are appended), and how far V_new is
    from the plain top-k: top-k candidates left out, and members ranked below k (mostly their building blocks)."""

    selected: list[tuple[str, int]]
    merges: list[tuple[str, str]]
    passed_over: list[tuple[str, int]] = field(default_factory=list)
    outside_top_k: list[tuple[str, int]] = field(default_factory=list)
    unreachable: list[tuple[str, int]] = field(default_factory=list)  # topk: members no merge produces

    @property
    def top_k_in(self) -> int:
        """How many of the plain top-k candidates are in V_new."""
        return len(self.selected) - len(self.outside_top_k)


def _apply_merge(pieces: list[str], left: str, right: str) -> list[str]:
    """Apply one merge left to right without overlaps, as the BPE model does for a newly lowest-priority merge."""
    out, i = [], 0
    while i < len(pieces):
        if i + 1 < len(pieces) and pieces[i] == left and pieces[i + 1] == right:
            out.append(left + right)
            i += 2
        else:
            out.append(pieces[i])
            i += 1
    return out


def source_pieces(source: Tokenizer, token: str) -> list[str]:
    """How the source BPE model splits a piece string (no pre-tokenizer: the string is already a pre-token)."""
    return [t.value for t in source.model.tokenize(token)]


def _byte_pieces(char: str) -> list[str]:
    """The byte-fallback pieces <0xXX> that spell a character a SentencePiece-style vocabulary lacks."""
    return [f"<0x{b:02X}>" for b in char.encode("utf-8")]


def _replace_run(pieces: list[str], run: list[str], by: str) -> list[str]:
    """Replace every occurrence of the consecutive pieces ``run`` by the single piece ``by``."""
    out, i, n = [], 0, len(run)
    while i < len(pieces):
        if pieces[i : i + n] == run:
            out.append(by)
            i += n
        else:
            out.append(pieces[i])
            i += 1
    return out


class _GrowingVocabulary:
    """T_t while merges are appended: the current split of every candidate string, updated after each addition.

    Appending the merge (l, r) after all others changes a split only by joining adjacent (l, r) pairs, because every
    earlier merge has already run and none of them involves the new token; so splits are updated in place, without
    re-running BPE, and a two-piece split never changes again. With byte fallback, adding a character c to the
    vocabulary (no merge) turns c's byte pieces into the piece c, which no existing merge involves either.
    """

    def __init__(self, source: Tokenizer, tokens: Sequence[str], aux_merges: dict[str, tuple[str, str]]):
        self.source_vocab = source.get_vocab(with_added_tokens=True)
        self.byte_fallback = bool(getattr(source.model, "byte_fallback", False))
        self.aux_merges = aux_merges
        self.pieces = {t: source_pieces(source, t) for t in tokens}
        self.pair_index: dict[tuple[str, str], set[str]] = defaultdict(set)
        # Candidates spelled with byte pieces, by the missing character (UTF-8 keeps each run aligned to its character).
        self.char_index: dict[str, set[str]] = defaultdict(set)
        for t, p in self.pieces.items():
            self._index(t, p)
            if self.byte_fallback:
                for c in set(t):
                    if c not in self.source_vocab:
                        self.char_index[c].add(t)
        self.added: list[str] = []
        self.added_set: set[str] = set()
        self.merges: list[tuple[str, str]] = []

    def _index(self, token: str, pieces: list[str]) -> None:
        if len(pieces) > 2:
            for pair in itertools.pairwise(pieces):
                self.pair_index[pair].add(token)

    def _update(self, token: str, new: list[str]) -> None:
        for pair in itertools.pairwise(self.pieces[token]):
            self.pair_index[pair].discard(token)
        self.pieces[token] = new
        self._index(token, new)

    def known(self, token: str) -> bool:
        return token in self.source_vocab or token in self.added_set

    def _new_char(self, token: str) -> bool:
        """A single character V_s lacks (byte fallback): added as a vocabulary entry, with no merge."""
        return self.byte_fallback and len(token) == 1 and token in self.pieces

    def _in_two(self, token: str) -> bool:
        """Whether T_t splits ``token`` into two pieces that spell it (byte pieces do not)."""
        p = self.pieces[token]
        return len(p) == 2 and p[0] + p[1] == token

    def add(self, token: str) -> None:
        self.added.append(token)
        self.added_set.add(token)
        if self._new_char(token):
            run = _byte_pieces(token)
            for other in self.char_index.pop(token, set()):
                if other != token:
                    self._update(other, _replace_run(self.pieces[other], run, token))
            self.pieces[token] = [token]
            return
        left, right = self.pieces[token]
        self.merges.append((left, right))
        for other in self.pair_index.pop((left, right), set()):
            self._update(other, _apply_merge(self.pieces[other], left, right))

    def needed(self, token: str, acc: set[str]) -> bool:
        """Collect the tokens that ``ensure`` would add for ``token`` (an upper bound); False when it cannot work."""
        if self.known(token) or token in acc:
            return True
        if token not in self.pieces:
            return False
        if self._new_char(token) or self._in_two(token):
            acc.add(token)
            return True
        parts = self.aux_merges.get(token)
        if parts is None or not (self.needed(parts[0], acc) and self.needed(parts[1], acc)):
            return False
        acc.add(token)
        return True

    def ensure(self, token: str) -> bool:
        """Make ``token`` reachable: directly if T_t splits it in two, else first its aux parts (recursively)."""
        if self.known(token):
            return True
        if token not in self.pieces:
            return False
        if self._new_char(token) or self._in_two(token):
            self.add(token)
            return True
        parts = self.aux_merges.get(token)
        if parts is None or not (self.ensure(parts[0]) and self.ensure(parts[1])):
            return False
        if self._in_two(token):  # a source merge may still cross the boundary between the two parts
            self.add(token)
            return True
        return False


def aux_merge_parts(aux: Tokenizer | str | Path) -> dict[str, tuple[str, str]]:
    """For each aux token built by a merge, its two parts (the aux tokenizer's own merge tree)."""
    tj = json.loads(as_tokenizer(aux).to_str())
    out: dict[str, tuple[str, str]] = {}
    for m in tj["model"]["merges"]:
        left, right = m.split(" ", 1) if isinstance(m, str) else m
        out.setdefault(left + right, (left, right))
    return out


def plan_expansion(
    source: Tokenizer | str | Path,
    ranked: Sequence[tuple[str, int]],
    k: int,
    aux_merges: dict[str, tuple[str, str]] | None = None,
) -> ExpansionPlan:
    """Choose exactly k reachable new tokens from the ranked candidates and the merges to append (module docstring).

    Without ``aux_merges`` no building blocks are added: a candidate waits until T_t splits it in two.
    """
    source = as_tokenizer(source)
    if k < 1:
        raise ValueError(f"k (the number of new tokens) must be positive, got {k}")
    tokens = [t for t, _ in ranked]
    if len(set(tokens)) != len(tokens):
        raise ValueError("candidate tokens must be unique")
    source_vocab = source.get_vocab(with_added_tokens=True)
    in_vs = [t for t in tokens if t in source_vocab]
    if in_vs:
        raise ValueError(f"{len(in_vs)} candidate tokens are already in the source vocabulary, e.g. {in_vs[:5]}")
    state = _GrowingVocabulary(source, tokens, aux_merges or {})
    progress = True
    # Passes in rank order; a later pass retries candidates that earlier additions have made reachable.
    while len(state.added) < k and progress:
        progress = False
        for token in tokens:
            if len(state.added) >= k:
                break
            if state.known(token):
                continue
            need: set[str] = set()
            if not state.needed(token, need) or len(need) > k - len(state.added):
                continue
            before = len(state.added)
            state.ensure(token)
            progress = progress or len(state.added) > before
    if len(state.added) < k:
        raise ValueError(
            f"only {len(state.added)} of {len(tokens)} candidate tokens can be made reachable by appended merges, "
            f"fewer than k={k}: lower k or train the aux tokenizer on more text / with a larger vocabulary"
        )
    rank = {t: i for i, t in enumerate(tokens)}
    selected = [(t, int(f)) for t, f in ranked if t in state.added_set]
    return ExpansionPlan(
        selected=selected,
        merges=state.merges,
        passed_over=[(t, int(f)) for t, f in ranked[:k] if t not in state.added_set],
        outside_top_k=[(t, f) for t, f in selected if rank[t] >= k],
    )


SELECTIONS = ("reachable", "topk")


def plan_topk(source: Tokenizer | str | Path, ranked: Sequence[tuple[str, int]], k: int) -> ExpansionPlan:
    """The paper's plain V_new: exactly the first k candidates, in rank order (module docstring, ``topk``).

    Merges are appended in passes over the k tokens in rank order: a token gets the merge (l, r) once T_t splits it
    into the two pieces l, r (a later pass may find it so after another top-k token was added); a single character
    V_s lacks (byte fallback) is a vocabulary entry without a merge. Tokens still split otherwise after a pass that
    adds nothing are kept without a merge and listed in ``unreachable``.
    """
    source = as_tokenizer(source)
    if k < 1:
        raise ValueError(f"k (the number of new tokens) must be positive, got {k}")
    if len(ranked) < k:
        raise ValueError(f"only {len(ranked)} candidate tokens, fewer than k={k}")
    top = [(t, int(f)) for t, f in ranked[:k]]
    tokens = [t for t, _ in top]
    if len(set(tokens)) != k:
        raise ValueError("candidate tokens must be unique")
    source_vocab = source.get_vocab(with_added_tokens=True)
    in_vs = [t for t in tokens if t in source_vocab]
    if in_vs:
        raise ValueError(f"{len(in_vs)} candidate tokens are already in the source vocabulary, e.g. {in_vs[:5]}")
    state = _GrowingVocabulary(source, tokens, {})
    progress = True
    while progress:
        progress = False
        for token in tokens:
            if not state.known(token) and (state._new_char(token) or state._in_two(token)):
                state.add(token)
                progress = True
    return ExpansionPlan(
        selected=top,
        merges=state.merges,
        unreachable=[(t, f) for t, f in top if t not in state.added_set],
    )


def select_new_tokens(
    aux: Tokenizer | str | Path, source: Tokenizer | str | Path, lines: Sequence[str], k: int
) -> list[tuple[str, int]]:
    """V_new: k aux tokens not in V_s, taken in frequency order and made reachable with their aux parts (§3).

    Most frequent first; ties by aux id. See the module docstring for how reachability shapes the choice.
    """
    aux = as_tokenizer(aux)
    ranked = rank_candidates(aux, source, lines)
    if len(ranked) < k:
        raise ValueError(
            f"the aux tokenizer yields only {len(ranked)} tokens absent from V_s, fewer than k={k}: "
            "lower k or train the aux tokenizer with a larger vocabulary"
        )
    return plan_expansion(source, ranked, k, aux_merge_parts(aux)).selected
