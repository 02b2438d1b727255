"""V_mono and forward maximum matching (MuMo §4.1, "Implementation of MuMo").

V_mono: the target-language words of a target tokenizer's vocabulary (ours: the auxiliary tokenizer trained on D) whose
text is in the target script and that the source vocabulary V_s does not hold as one token. Text is segmented into
V_mono words by forward maximum matching (the longest V_mono word starting at each position wins); characters no word
covers fall back to source tokens.

Every V_mono word has a *source spelling*: the source ids it is fed back as (§3.3.1), which are also the subwords whose
LM-head rows Multi-init averages. A word is spelled as it would be inside running text, not at the start of a text:
the source tokenizer's normalizer and pre-tokenizer are applied, the marker they add at the start of a text
(SentencePiece's dummy "▁" prefix) is taken off, and the source BPE model tokenizes each piece.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workflow_scripts.languages import all_in_script, script_name
from workflow_scripts.pieces import SENTENCEPIECE_BPE, detect_family, is_partial_utf8, piece_text


def _strip_start(pieces: list[str], prefix: str) -> list[str]:
    """``pieces`` with ``prefix`` removed from the start of their concatenation (pieces left empty are dropped)."""
    out = list(pieces)
    while prefix and out:
        first = out[0]
        n = min(len(first), len(prefix))
        if first[:n] != prefix[:n]:
            raise ValueError(f"pre-tokenized text {pieces!r} does not start with the expected marker {prefix!r}")
        prefix, out[0] = prefix[n:], first[n:]
        if not out[0]:
            out.pop(0)
    return out


class SourceSpeller:
    """Source ids of text spans as they appear inside running text (see the module docstring)."""

    def __init__(self, tokenizer: Any):
        from workflow_scripts.initialize.tokens import clean_bpe_model

        self.tokenizer = tokenizer
        self.backend = tokenizer.backend_tokenizer
        self.bpe = clean_bpe_model(tokenizer)
        joined = "".join(self._pieces("a"))
        self.lead = joined[: -len("a")]  # what a text start gets before a letter ("" byte-level, "▁" SentencePiece)
        self.lead_space = "".join(self._pieces(" a"))[: -len("a")]  # what a leading space becomes at a text start
        mid = "".join(self._pieces("b a"))
        self.mid_space = mid[len(self.lead) + 1 : -1]  # what a space inside text becomes ("Ġ", "▁")

    def _pieces(self, text: str) -> list[str]:
        if self.backend.normalizer is not None:
            text = self.backend.normalizer.normalize_str(text)
        if self.backend.pre_tokenizer is None:
            return [text] if text else []
        return [p for p, _ in self.backend.pre_tokenizer.pre_tokenize_str(text)]

    def pieces(self, span: str, initial: bool = False) -> list[str]:
        """The strings the source BPE model sees for ``span`` (at the start of a text when ``initial``)."""
        pieces = self._pieces(span)
        if initial or not span:
            return pieces
        if span.startswith(" "):
            rest = _strip_start(pieces, self.lead_space)
            return [self.mid_space + rest[0], *rest[1:]] if rest else [self.mid_space]
        return _strip_start(pieces, self.lead)

    def ids(self, span: str, initial: bool = False) -> list[int]:
        """Source ids of ``span``."""
        return [t.id for p in self.pieces(span, initial) for t in self.bpe.tokenize(p)]


@dataclass(frozen=True)
class VMono:
    """The target monolingual vocabulary: words (text) and their source spellings, in the target tokenizer's order."""

    words: tuple[str, ...]
    spellings: tuple[tuple[int, ...], ...]

    def __len__(self) -> int:
        return len(self.words)

    @functools.cached_property
    def index(self) -> dict[str, int]:
        return {w: i for i, w in enumerate(self.words)}

    @functools.cached_property
    def max_chars(self) -> int:
        return max((len(w) for w in self.words), default=0)

    def to_json(self) -> list[dict]:
        return [{"word": w, "source_ids": list(s)} for w, s in zip(self.words, self.spellings, strict=True)]

    @classmethod
    def from_json(cls, items: list[dict]) -> VMono:
        return cls(tuple(i["word"] for i in items), tuple(tuple(i["source_ids"]) for i in items))


def word_text(piece: str, family: str) -> str | None:
    """A target-vocabulary piece as text, or None for byte pieces and partial UTF-8 sequences."""
    if family == SENTENCEPIECE_BPE:
        if piece.startswith("<0x") and piece.endswith(">") and len(piece) == 6:
            return None
        return piece_text(piece, family)
    try:
        if is_partial_utf8(piece):
            return None
    except ValueError:  # not a byte-level piece (an added token)
        return None
    return piece_text(piece, family)


def target_words(target_tokenizer_json: str | Path, lang: str) -> list[str]:
    """Candidate words of a target tokenizer (a tokenizer.json or a folder holding one), in id order: the text of each
    vocabulary piece that is, after at most one leading space, entirely in ``lang``'s script (Unicode's Script
    property: workflow_scripts.languages)."""
    import json

    path = Path(target_tokenizer_json)
    path = path / "tokenizer.json" if path.is_dir() else path
    if not path.is_file():
        raise FileNotFoundError(f"target tokenizer {str(path)!r} does not exist (a tokenizer.json or its folder)")
    script_name(lang)  # an unknown language is an error before the tokenizer is read
    tj = json.loads(path.read_text(encoding="utf-8"))
    family = detect_family(tj, path)
    specials = {t["content"] for t in tj.get("added_tokens", [])}
    words = []
    for piece, _ in sorted(tj["model"]["vocab"].items(), key=lambda kv: kv[1]):
        text = None if piece in specials else word_text(piece, family)
        if text is not None and all_in_script(text.removeprefix(" "), lang):
            words.append(text)
    return list(dict.fromkeys(words))


def build_v_mono(words: list[str], speller: SourceSpeller, max_size: int | None = None) -> VMono:
    """V_mono from candidate words: those that V_s does not spell as one token, the first ``max_size`` kept."""
    kept, spellings = [], []
    for w in words:
        ids = speller.ids(w)
        if len(ids) > 1:
            kept.append(w)
            spellings.append(tuple(ids))
        if max_size is not None and len(kept) >= max_size:
            break
    return VMono(tuple(kept), tuple(spellings))


@dataclass(frozen=True)
class Unit:
    """One FMM unit: a V_mono word (``word`` its index) or a fallback span of source tokens (``word`` None)."""

    text: str
    word: int | None
    source_ids: tuple[int, ...]


def fmm_segment(text: str, v_mono: VMono, speller: SourceSpeller, initial: bool = True) -> list[Unit]:
    """Forward maximum matching: at each position the longest V_mono word wins; runs of characters no word starts
    with become one fallback span of source tokens. ``initial``: ``text`` starts a text (False: it continues one, as
    generated text continues its prompt)."""
    index, longest = v_mono.index, v_mono.max_chars
    units: list[Unit] = []
    i, span_start = 0, 0

    def flush(end: int) -> None:
        if end > span_start:
            span = text[span_start:end]
            units.append(Unit(span, None, tuple(speller.ids(span, initial=initial and span_start == 0))))

    while i < len(text):
        match = next(
            (n for n in range(min(longest, len(text) - i), 0, -1) if text[i : i + n] in index),
            0,
        )
        if match:
            flush(i)
            word = text[i : i + match]
            units.append(Unit(word, index[word], v_mono.spellings[index[word]]))
            i += match
            span_start = i
        else:
            i += 1
    flush(len(text))
    return units


def training_example(units: list[Unit], n_multi: int, bos_id: int | None) -> tuple[list[int], list[int]]:
    """Input ids (source ids, as the frozen model sees the text) and MuMo labels of one segmented text.

    The label of a position is the unit that comes next: a V_mono word gets ``n_multi + index`` at the position
    before its first source token, and the positions inside the word are ignored (-100): at inference the model never
    predicts there, the word is fed back whole. Fallback tokens are labelled with themselves.
    """
    ids: list[int] = [bos_id] if bos_id is not None else []
    labels: list[int] = []
    for unit in units:
        first = True
        for sid in unit.source_ids:
            if ids:
                if unit.word is None:
                    labels.append(sid)
                else:
                    labels.append(n_multi + unit.word if first else -100)
            first = False
            ids.append(sid)
    labels.append(-100)  # the last position predicts nothing
    return ids, labels
