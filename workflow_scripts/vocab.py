"""Auxiliary tokenizer and vocabulary expansion (paper 002 §3, §6.6).

An auxiliary BPE tokenizer T_aux is trained on the target-language corpus D with the source tokenizer's own normalizer
and pre-tokenizer; V_new is taken from its most frequent tokens that the source vocabulary V_s lacks; the target
tokenizer T_t is a real BPE over V_s ∪ V_new (vocabulary entries plus merge rules appended after the source merges),
never "added tokens", which are matched before BPE and garble byte-level decoding.

The route follows from the source tokenizer's tokenizer.json (``detect_family``), never from a flag:
- byte-level BPE (GPT-2, SmolLM2, Llama-3 converted from tiktoken): T_aux is trained with Hugging Face tokenizers'
  BPE trainer under the source's normalizer and pre-tokenizer; pieces are bytes in GPT-2's byte-to-unicode form.
- SentencePiece byte-fallback BPE (Llama-2, Mistral, Gemma): T_aux is trained with the ``sentencepiece`` library
  (BPE, byte fallback, the source's trainer and normalizer options: ``sentencepiece_options``) and converted to a
  tokenizer.json with the source's normalizer, pre-tokenizer and decoder; pieces are characters with "▁" for spaces.
  Here a character that V_s lacks (so far spelled by byte-fallback pieces <0xXX>) is a new token with no merge: BPE
  starts from the characters in the vocabulary, so adding one changes only text that contains it. (Reference practice
  appends SentencePiece pieces with score 0, the highest priority; appending merges after the source's instead is
  what guarantees that text without new strings keeps its tokenization, and it works on the tokenizer.json alone.)
Other models (WordPiece, Unigram, WordLevel) are rejected with a message naming the model.

Expansion algorithm. Appending a merge (l, r) -> l+r after every existing merge never changes how a pre-token is
split unless l+r occurs in it: the existing merges all run first (BPE applies the lowest-ranked applicable merge each
time), and no existing merge involves the new token. So a new token t is produced for its own string exactly when the
current T_t splits that string into two pieces (l, r) and the appended merge is (l, r), and later merges (ranked
lower) cannot undo it; a string split into three or more pieces cannot be produced by one merge. Candidates (V_aux
minus V_s) are ranked by frequency (aux tokenization of D; ties by aux id, i.e. the aux merge order) and taken in that
order: a candidate that T_t splits in two is added with that merge; otherwise its building blocks are added first,
following the aux tokenizer's own merge tree (c = a + b, recursively), each as soon as T_t splits it in two, and then
the candidate itself if T_t now splits it in two (a source merge can still cross the a|b boundary: the candidate is
then skipped and its blocks stay). Building blocks (for SentencePiece also single characters V_s lacks) are aux tokens
too and count toward k; a candidate whose blocks would exceed the budget is skipped for cheaper ones; passes repeat
until exactly k tokens are in. This keeps V_new inside V_aux minus V_s with exact reachability, and keeps more of the
plain top-k (and gives shorter target text) than merely skipping candidates until T_t splits them in two, which drops
frequent words whose blocks are rare as final aux tokens. The top-k candidates left out and the members ranked below k
are reported. New ids follow the frequency order, contiguous after every source id (model vocabulary and added/special
tokens: for Llama-3 after its 256 specials at 128000-128255, so that the model's existing embedding rows keep their
meaning and new rows are appended); merges follow the order of addition, which matters (an early block may cross a
character boundary that a later token claims), so ``expand_tokenizer`` takes them as given.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import shutil
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from workflow_scripts.io import atomic_path, read_lines, seed_everything, setup_logging, write_json

BYTE_LEVEL_BPE = "byte_level_bpe"
SENTENCEPIECE_BPE = "sentencepiece_bpe"
SUPPORTED_FAMILIES = (BYTE_LEVEL_BPE, SENTENCEPIECE_BPE)
METASPACE = "\u2581"  # "▁", SentencePiece's word-boundary marker

# Tokenizer files copied unchanged from the source folder (which may be a whole model folder: weights and config.json
# stay behind). tokenizer.json is rewritten; GPT-2-style vocab.json/merges.txt are regenerated from it.
_COPIED_FILES = (
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "chat_template.jinja",
    "chat_template.json",
)
_COPIED_FOLDERS = ("additional_chat_templates",)


# ---------------------------------------------------------------------------------------------------------------------
# Reading the source tokenizer and deciding the route
# ---------------------------------------------------------------------------------------------------------------------


def _tokenizer_json_path(source: str | Path) -> Path:
    """tokenizer.json of a tokenizer/model folder (or the file itself)."""
    path = Path(source)
    if path.is_dir():
        path = path / "tokenizer.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"no tokenizer.json at {path}: the source tokenizer must be a Hugging Face folder with a fast tokenizer"
        )
    return path


def _as_tokenizer(tok: Tokenizer | Any | str | Path) -> Tokenizer:
    """Accept a ``tokenizers.Tokenizer``, a transformers fast tokenizer, a tokenizer.json or a folder holding one."""
    if isinstance(tok, Tokenizer):
        return tok
    if isinstance(tok, (str, Path)):
        return Tokenizer.from_file(str(_tokenizer_json_path(tok)))
    backend = getattr(tok, "backend_tokenizer", None)
    if isinstance(backend, Tokenizer):
        return backend
    raise TypeError(f"expected a tokenizers.Tokenizer, a fast HF tokenizer or a path, got {type(tok).__name__}")


def _has_byte_level(component: dict | None) -> bool:
    """Whether a pre-tokenizer (possibly a Sequence) contains a ByteLevel step."""
    if not component:
        return False
    if component.get("type") == "ByteLevel":
        return True
    if component.get("type") == "Sequence":
        return any(_has_byte_level(c) for c in component.get("pretokenizers", []))
    return False


def detect_family(tokenizer_json: dict, where: str | Path = "<tokenizer>") -> str:
    """The expansion route for a tokenizer.json: ``byte_level_bpe`` or ``sentencepiece_bpe`` (paper 002 §6.6)."""
    model = tokenizer_json.get("model") or {}
    kind = model.get("type")
    if kind != "BPE":
        raise ValueError(
            f"unsupported tokenizer kind {kind} for {where}: vocabulary expansion needs a BPE model "
            "(byte-level BPE like GPT-2/SmolLM2/Llama-3, or SentencePiece byte-fallback BPE like Llama-2/Gemma)"
        )
    if model.get("byte_fallback"):
        return SENTENCEPIECE_BPE
    if _has_byte_level(tokenizer_json.get("pre_tokenizer")):
        return BYTE_LEVEL_BPE
    raise ValueError(
        f"unsupported tokenizer kind BPE without byte-level pre-tokenizer or byte fallback for {where}: new tokens "
        "could produce characters the model cannot represent"
    )


def _require_supported(family: str, where: str | Path) -> None:
    if family not in SUPPORTED_FAMILIES:
        raise NotImplementedError(
            f"tokenizer family {family} ({where}) is not yet supported: vocabulary expansion currently handles "
            f"{', '.join(SUPPORTED_FAMILIES)} only"
        )


def load_source(source_tokenizer_dir: str | Path) -> tuple[dict, str]:
    """The source tokenizer.json as a dict and its family; raises for families that are not supported yet."""
    path = _tokenizer_json_path(source_tokenizer_dir)
    tj = json.loads(path.read_text(encoding="utf-8"))
    family = detect_family(tj, source_tokenizer_dir)
    _require_supported(family, source_tokenizer_dir)
    return tj, family


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map used by byte-level BPE pieces."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs, strict=True)}


_BYTE_TO_UNICODE = bytes_to_unicode()
_UNICODE_TO_BYTE = {c: b for b, c in _BYTE_TO_UNICODE.items()}


def piece_bytes(piece: str) -> bytes:
    """The raw bytes a byte-level BPE piece stands for."""
    try:
        return bytes(_UNICODE_TO_BYTE[c] for c in piece)
    except KeyError as e:
        raise ValueError(f"{piece!r} is not a byte-level BPE piece ({e.args[0]!r} is not a byte symbol)") from e


def piece_text(piece: str, family: str = BYTE_LEVEL_BPE) -> str:
    """A piece as text: byte-level pieces as their bytes (partial UTF-8 sequences stay visible as backslash escapes),
    SentencePiece pieces with "▁" shown as a space."""
    if family == SENTENCEPIECE_BPE:
        return piece.replace(METASPACE, " ")
    return piece_bytes(piece).decode("utf-8", errors="backslashreplace")


def pre_tokens(tok: Tokenizer | Any | str | Path, text: str) -> list[str]:
    """The strings the BPE model sees for ``text``: normalized, pre-tokenized (byte-level or "▁" form)."""
    tok = _as_tokenizer(tok)
    if tok.normalizer is not None:
        text = tok.normalizer.normalize_str(text)
    if tok.pre_tokenizer is None:
        return [text] if text else []
    return [p for p, _ in tok.pre_tokenizer.pre_tokenize_str(text)]


def byte_level_form(text: str) -> str:
    """``text`` in the byte-level alphabet, so that piece strings can be searched in it."""
    return "".join(_BYTE_TO_UNICODE[b] for b in text.encode("utf-8"))


# ---------------------------------------------------------------------------------------------------------------------
# 1. The auxiliary tokenizer
# ---------------------------------------------------------------------------------------------------------------------


def train_aux_tokenizer(
    lines: Iterable[str], source_tokenizer_dir: str | Path, vocab_size: int, seed: int = 42, threads: int = 1
) -> Tokenizer:
    """Train T_aux on D by the route the source's family requires, so that its pieces compare with V_s (paper 002 §3).

    Byte-level route: Hugging Face BPE trainer with the full byte-level initial alphabet and no special tokens. The
    trainer has no randomness (ties go to the lower pair ids); ``seed`` is applied anyway, for any library that uses it.
    SentencePiece route: ``train_sentencepiece_aux``.
    """
    seed_everything(seed)
    tj, family = load_source(source_tokenizer_dir)
    lines = [line for line in lines if line.strip()]
    if not lines:
        raise ValueError("the corpus D is empty: cannot train an auxiliary tokenizer")
    if family == SENTENCEPIECE_BPE:
        return train_sentencepiece_aux(lines, source_tokenizer_dir, vocab_size, seed, threads)
    return _train_byte_level_aux(lines, tj, vocab_size)


def _aux_shell(tj: dict, model: dict, added: list[dict] | None = None) -> dict:
    """An aux tokenizer.json: the source's normalizer, pre-tokenizer and decoder around the aux BPE model."""
    return {
        "version": tj.get("version", "1.0"),
        "truncation": None,
        "padding": None,
        "added_tokens": added or [],
        "normalizer": tj.get("normalizer"),
        "pre_tokenizer": tj.get("pre_tokenizer"),
        "post_processor": None,
        "decoder": tj.get("decoder"),
        "model": model,
    }


def _train_byte_level_aux(lines: list[str], tj: dict, vocab_size: int) -> Tokenizer:
    from tokenizers import pre_tokenizers, trainers

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    if vocab_size <= len(alphabet):
        raise ValueError(f"aux vocab_size={vocab_size} must exceed the byte-level alphabet ({len(alphabet)} symbols)")
    src_model = tj["model"]
    aux = Tokenizer.from_str(json.dumps(_aux_shell(tj, {"type": "BPE", "vocab": {}, "merges": []})))
    options = {k: src_model[k] for k in ("continuing_subword_prefix", "end_of_word_suffix") if src_model.get(k)}
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, show_progress=False, special_tokens=[], initial_alphabet=alphabet, **options
    )
    aux.train_from_iterator(lines, trainer=trainer, length=len(lines))
    reached = aux.get_vocab_size()
    if reached < vocab_size:
        raise ValueError(
            f"corpus too small for an aux vocabulary of {vocab_size}: BPE training on {len(lines)} lines stopped at "
            f"{reached} tokens (no pair left to merge); use aux vocab size <= {reached} (config aux_vocab_size) "
            "or more text"
        )
    # Same model options as the source (e.g. Llama-3's ignore_merges), so that aux pieces behave like source pieces.
    out = json.loads(aux.to_str())
    for key in ("continuing_subword_prefix", "end_of_word_suffix", "fuse_unk", "byte_fallback", "ignore_merges"):
        if key in src_model:
            out["model"][key] = src_model[key]
    return Tokenizer.from_str(json.dumps(out))


# SentencePiece trainer options copied from the source model's trainer spec when it ships a tokenizer.model: they
# decide which pieces can exist (digits, scripts, whitespace), so the aux pieces are of the same kind as V_s.
_MIRRORED_TRAINER_OPTIONS = (
    "split_digits",
    "split_by_unicode_script",
    "split_by_number",
    "split_by_whitespace",
    "treat_whitespace_as_suffix",
    "allow_whitespace_only_pieces",
    "max_sentencepiece_length",
    "character_coverage",
)


_BYTE_PIECE = re.compile(r"<0x[0-9A-Fa-f]{2}>")


def _normalizer_steps(component: dict | None) -> list[dict]:
    if not component:
        return []
    if component.get("type") == "Sequence":
        return [s for c in component.get("normalizers", component.get("pretokenizers", [])) for s in
                _normalizer_steps(c)]  # fmt: skip
    return [component]


def sentencepiece_options(source_tokenizer_dir: str | Path, tj: dict | None = None) -> tuple[dict, str]:
    """SentencePiece trainer options for T_aux that mirror the source model, and where they were read from.

    From the source's tokenizer.model when the folder has one (hub Llama-2, Mistral and Gemma folders do): its trainer
    spec (``_MIRRORED_TRAINER_OPTIONS``) and normalizer spec (rule name, e.g. identity = no NFKC for Llama-2;
    add_dummy_prefix; remove_extra_whitespaces). Otherwise inferred from tokenizer.json: add_dummy_prefix from a
    Prepend("▁") normalizer or a Metaspace pre-tokenizer that prepends, NFKC from the normalizer, split_digits when
    no source piece holds two digits in a row; the rest are SentencePiece's defaults. Always BPE with byte fallback,
    no user-defined symbols (the source's are in V_s anyway), and an unknown piece only (no BOS/EOS pieces: the aux
    tokenizer never adds them).
    """
    src = Path(source_tokenizer_dir)
    tj = tj if tj is not None else json.loads(_tokenizer_json_path(src).read_text(encoding="utf-8"))
    unk = tj["model"].get("unk_token") or "<unk>"
    options: dict[str, Any] = {
        "model_type": "bpe",
        "byte_fallback": True,
        "unk_id": 0,
        "bos_id": -1,
        "eos_id": -1,
        "pad_id": -1,
        "unk_piece": unk,
    }
    model_file = src / "tokenizer.model" if src.is_dir() else None
    if model_file is not None and model_file.is_file():
        from workflow_scripts.tokenizer_assets import load_sentencepiece_proto, sentencepiece_model_type

        proto = load_sentencepiece_proto(model_file)
        kind = sentencepiece_model_type(proto)
        if kind != "bpe":
            raise ValueError(
                f"unsupported tokenizer kind SentencePiece {kind} for {src}: vocabulary expansion needs a BPE model"
            )
        for key in _MIRRORED_TRAINER_OPTIONS:
            options[key] = getattr(proto.trainer_spec, key)
        norm = proto.normalizer_spec
        options["normalization_rule_name"] = norm.name or "identity"
        options["add_dummy_prefix"] = norm.add_dummy_prefix
        options["remove_extra_whitespaces"] = norm.remove_extra_whitespaces
        return options, str(model_file)
    steps = _normalizer_steps(tj.get("normalizer"))
    pre = _normalizer_steps(tj.get("pre_tokenizer"))
    prepend = any(s.get("type") == "Prepend" and s.get("prepend") == METASPACE for s in steps) or any(
        s.get("type") == "Metaspace" and s.get("prepend_scheme", "always") != "never" for s in pre
    )
    options["add_dummy_prefix"] = prepend
    options["normalization_rule_name"] = "nfkc" if any(s.get("type") == "NFKC" for s in steps) else "identity"
    # The HF JSON cannot say so; the vocabulary can: SentencePiece with split_digits never learns "12".
    specials = {t["content"] for t in tj.get("added_tokens", [])}
    options["split_digits"] = not any(
        a.isdigit() and b.isdigit()
        for piece in tj["model"]["vocab"]
        if piece not in specials and not _BYTE_PIECE.fullmatch(piece)
        for a, b in itertools.pairwise(piece)
    )
    options["remove_extra_whitespaces"] = False
    options["allow_whitespace_only_pieces"] = True
    return options, f"{_tokenizer_json_path(src)} (inferred)"


def train_sentencepiece_aux(
    lines: Sequence[str], source_tokenizer_dir: str | Path, vocab_size: int, seed: int = 42, threads: int = 1
) -> Tokenizer:
    """T_aux for a SentencePiece-BPE source: ``sentencepiece`` BPE with byte fallback and the source's options
    (``sentencepiece_options``), converted to a tokenizer.json with the source's normalizer and decoder (§6.6)."""
    import io

    import sentencepiece as spm

    from workflow_scripts.tokenizer_assets import load_sentencepiece_proto, sentencepiece_bpe_parts

    tj, _ = load_source(source_tokenizer_dir)
    options, _ = sentencepiece_options(source_tokenizer_dir, tj)
    spm.set_random_generator_seed(seed)
    model = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(lines),
            model_writer=model,
            vocab_size=vocab_size,
            num_threads=max(1, threads),
            input_sentence_size=0,
            shuffle_input_sentence=False,
            minloglevel=2,
            **options,
        )
    except RuntimeError as e:
        m = re.search(r"Vocabulary size too high \((\d+)\)\. Please set it to a value <= (\d+)", str(e))
        if m is None:
            raise
        raise ValueError(
            f"corpus too small for an aux vocabulary of {vocab_size}: SentencePiece BPE on {len(lines)} lines supports "
            f"at most {m.group(2)} pieces; use aux vocab size <= {m.group(2)} (config aux_vocab_size) or more text"
        ) from e
    proto = load_sentencepiece_proto(model.getvalue())
    vocab, merges = sentencepiece_bpe_parts(proto)
    # Control and unknown pieces are added tokens, so they are never candidates.
    added = [
        {"id": i, "content": p.piece, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
         "special": True}
        for i, p in enumerate(proto.pieces)
        if p.type in (2, 3)  # unknown, control
    ]  # fmt: skip
    src_model = tj["model"]
    aux_model = {
        "type": "BPE",
        "dropout": None,
        "unk_token": options["unk_piece"],
        "continuing_subword_prefix": None,
        "end_of_word_suffix": None,
        "fuse_unk": src_model.get("fuse_unk", True),
        "byte_fallback": True,
        "ignore_merges": src_model.get("ignore_merges", False),
        "vocab": vocab,
        "merges": merges,
    }
    return Tokenizer.from_str(json.dumps(_aux_shell(tj, aux_model, added)))


# ---------------------------------------------------------------------------------------------------------------------
# 2. Choosing V_new
# ---------------------------------------------------------------------------------------------------------------------


def rank_candidates(
    aux: Tokenizer | str | Path, source: Tokenizer | str | Path, lines: Sequence[str]
) -> list[tuple[str, int]]:
    """V_aux minus V_s with each token's frequency of use when D is tokenized by T_aux, most frequent first (§3).

    Ties are broken by the aux id (the aux merge order), so the ranking is deterministic. Tokens T_aux never outputs on
    D (intermediates of longer tokens) stay in, with frequency 0, at the end: after the used ones run out they are the
    building blocks that make long frequent tokens reachable.
    """
    aux, source = _as_tokenizer(aux), _as_tokenizer(source)
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


def _source_pieces(source: Tokenizer, token: str) -> list[str]:
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
        self.pieces = {t: _source_pieces(source, t) for t in tokens}
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
    tj = json.loads(_as_tokenizer(aux).to_str())
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
    source = _as_tokenizer(source)
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


def select_new_tokens(
    aux: Tokenizer | str | Path, source: Tokenizer | str | Path, lines: Sequence[str], k: int
) -> list[tuple[str, int]]:
    """V_new: k aux tokens not in V_s, taken in frequency order and made reachable with their aux parts (§3).

    Most frequent first; ties by aux id. See the module docstring for how reachability shapes the choice.
    """
    aux = _as_tokenizer(aux)
    ranked = rank_candidates(aux, source, lines)
    if len(ranked) < k:
        raise ValueError(
            f"the aux tokenizer yields only {len(ranked)} tokens absent from V_s, fewer than k={k}: "
            "lower k or train the aux tokenizer with a larger vocabulary"
        )
    return plan_expansion(source, ranked, k, aux_merge_parts(aux)).selected


# ---------------------------------------------------------------------------------------------------------------------
# 3. The target tokenizer T_t
# ---------------------------------------------------------------------------------------------------------------------


def next_free_id(tokenizer_json: dict) -> int:
    """The first id after every source id, model vocabulary and added/special tokens alike."""
    ids = list(tokenizer_json["model"]["vocab"].values()) + [t["id"] for t in tokenizer_json.get("added_tokens", [])]
    return max(ids) + 1


def build_expanded_json(tokenizer_json: dict, new_tokens: Sequence[str], merges: Sequence[tuple[str, str]]) -> dict:
    """A copy of the source tokenizer.json with ``new_tokens`` at contiguous ids and ``merges`` after its merges."""
    # Only the vocabulary and the merges change: copy those, share the rest (a deep copy of a 128K vocabulary is slow).
    model = {**tokenizer_json["model"], "vocab": dict(tokenizer_json["model"]["vocab"]),
             "merges": list(tokenizer_json["model"]["merges"])}  # fmt: skip
    out = {**tokenizer_json, "model": model}
    start = next_free_id(tokenizer_json)
    # tokenizers ignores the ids written for added tokens that are not in the model vocabulary and numbers them after
    # the vocabulary's size instead (Llama-3: the 256 specials at 128000-128255 follow the 128,000 BPE entries). New
    # entries after 128255 would move every special. So such tokens enter the BPE vocabulary with their ids; no merge
    # produces them and they stay added tokens, matched before BPE, so tokenization does not change.
    for added in out.get("added_tokens", []):
        if added["content"] not in model["vocab"]:
            model["vocab"][added["content"]] = added["id"]
    for offset, token in enumerate(new_tokens):
        if token in model["vocab"]:
            raise ValueError(f"new token {token!r} is already in the source vocabulary")
        model["vocab"][token] = start + offset
    string_merges = bool(model["merges"]) and isinstance(model["merges"][0], str)
    for left, right in merges:
        if left + right not in model["vocab"]:
            raise ValueError(f"merge ({left!r}, {right!r}) produces {left + right!r}, which has no id")
        if string_merges:
            if " " in left or " " in right:
                raise ValueError(f"merge ({left!r}, {right!r}) cannot be written in the 'left right' merge format")
            model["merges"].append(f"{left} {right}")
        else:
            model["merges"].append([left, right])
    return out


def _write_tokenizer_folder(source_dir: Path | None, tokenizer_json_text: str, out: Path) -> None:
    """Copy the source folder's configuration (chat template, special tokens) and write the expanded vocabulary."""
    out.mkdir(parents=True)
    if source_dir is not None:
        for name in _COPIED_FILES:
            if (source_dir / name).is_file():
                shutil.copy2(source_dir / name, out / name)
        for name in _COPIED_FOLDERS:
            if (source_dir / name).is_dir():
                shutil.copytree(source_dir / name, out / name)
    (out / "tokenizer.json").write_text(tokenizer_json_text, encoding="utf-8")
    if source_dir is not None and (source_dir / "vocab.json").exists():
        tj = json.loads(tokenizer_json_text)
        # GPT-2-style slow files must not disagree with tokenizer.json.
        vocab = dict(sorted(tj["model"]["vocab"].items(), key=lambda kv: kv[1]))
        (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
        merges = [m if isinstance(m, str) else " ".join(m) for m in tj["model"]["merges"]]
        (out / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")
    config = out / "tokenizer_config.json"
    if not config.exists():
        config.write_text(json.dumps({"tokenizer_class": "PreTrainedTokenizerFast"}, indent=2) + "\n", encoding="utf-8")
    stm = out / "special_tokens_map.json"
    if not stm.exists():
        # transformers 5 keeps special tokens in tokenizer_config.json; older readers look for this file.
        cfg = json.loads(config.read_text(encoding="utf-8"))
        names = ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token")
        special = {n: cfg[n] for n in names if cfg.get(n) is not None}
        if cfg.get("additional_special_tokens"):
            special["additional_special_tokens"] = cfg["additional_special_tokens"]
        stm.write_text(json.dumps(special, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def expand_tokenizer(
    source_tokenizer_dir: str | Path,
    new_tokens: Sequence[tuple[str, int]] | Sequence[str],
    out_dir: str | Path,
    merges: Sequence[tuple[str, str]] | None = None,
) -> Tokenizer:
    """Write T_t, a real BPE over V_s ∪ V_new (paper 002 §3, §6.6), as a tokenizer folder; return its backend.

    ``new_tokens`` (piece strings, optionally with frequencies) get contiguous ids in the given order. ``merges`` (one
    per new token, in the order to append them) come from ``plan_expansion``; the order matters when building blocks
    were added, so pass them. Without them the merges are re-derived by passes over the list (enough for a hand-written
    list whose tokens all become two-piece splits). Every new token is checked to be produced for its own string.
    """
    source_dir = Path(source_tokenizer_dir)
    tj, _ = load_source(source_dir)
    tokens = [t if isinstance(t, str) else t[0] for t in new_tokens]
    if not tokens:
        raise ValueError("no new tokens given")
    if merges is None:
        try:
            source = Tokenizer.from_str(json.dumps(tj))
            merges = plan_expansion(source, [(t, 0) for t in tokens], len(tokens)).merges
        except ValueError as e:
            raise ValueError(
                f"cannot make every new token reachable by appended merges in any pass order ({e}); pass the merges "
                "from plan_expansion (their order matters)"
            ) from e
    merges = [(str(left), str(right)) for left, right in merges]
    # Single characters (SentencePiece byte-fallback route) are vocabulary entries without a merge.
    if sorted(left + right for left, right in merges) != sorted(t for t in tokens if len(t) > 1):
        raise ValueError("merges must produce exactly the new tokens, one merge each (none for single characters)")
    text = json.dumps(build_expanded_json(tj, tokens, merges), ensure_ascii=False)
    target = Tokenizer.from_str(text)
    start = next_free_id(tj)
    for offset, token in enumerate(tokens):
        got = [(t.value, t.id) for t in target.model.tokenize(token)]
        if got != [(token, start + offset)]:
            raise ValueError(
                f"new token {token!r} (id {start + offset}) is not produced for its own string but split as {got}: "
                "the merges or their order do not make it reachable"
            )
    with atomic_path(out_dir) as tmp:
        _write_tokenizer_folder(source_dir if source_dir.is_dir() else None, text, tmp)
    return target


# ---------------------------------------------------------------------------------------------------------------------
# 4. The report
# ---------------------------------------------------------------------------------------------------------------------


def expansion_report(
    source: Tokenizer | str | Path,
    target: Tokenizer | str | Path,
    new_tokens: Sequence[tuple[str, int]],
    heldout_lines: Sequence[str],
) -> dict:
    """New tokens (piece, text, frequency, id) and fragmentation of held-out text before/after (paper 002 Fig. 2, 4)."""
    source, target = _as_tokenizer(source), _as_tokenizer(target)
    # Byte fallback marks the SentencePiece route (cheaper than serializing a 128K tokenizer to ask detect_family).
    family = SENTENCEPIECE_BPE if getattr(source.model, "byte_fallback", False) else BYTE_LEVEL_BPE
    lines = [line for line in heldout_lines if line]
    tokens = []
    new_ids = set()
    for token, freq in new_tokens:
        tid = target.token_to_id(token)
        new_ids.add(tid)
        tokens.append(
            {
                "id": tid,
                "piece": token,
                "text": piece_text(token, family),
                "frequency": int(freq),
                "source_pieces": len(_source_pieces(source, token)),
            }
        )
    before = [len(e.ids) for e in source.encode_batch(lines, add_special_tokens=False)]
    after_enc = target.encode_batch(lines, add_special_tokens=False)
    after = [len(e.ids) for e in after_enc]
    n_after = sum(after)
    n_new = sum(1 for e in after_enc for i in e.ids if i in new_ids)
    used = {i for e in after_enc for i in e.ids if i in new_ids}
    n_lines = max(1, len(lines))
    return {
        "k": len(tokens),
        "source_vocab_size": source.get_vocab_size(with_added_tokens=True),
        "target_vocab_size": target.get_vocab_size(with_added_tokens=True),
        "heldout_sentences": len(lines),
        "heldout_characters": sum(len(line) for line in lines),
        "tokens_per_sentence_source": sum(before) / n_lines,
        "tokens_per_sentence_target": n_after / n_lines,
        "token_ratio_target_over_source": (n_after / sum(before)) if sum(before) else None,
        "new_token_share": (n_new / n_after) if n_after else 0.0,
        "new_tokens_used_in_heldout": len(used),
        "new_tokens": tokens,
    }


# ---------------------------------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    a = sub.add_parser("aux", help="train the auxiliary tokenizer T_aux on D")
    a.add_argument("--source-tokenizer", required=True, help="HF model/tokenizer folder with tokenizer.json")
    a.add_argument("--corpus", required=True, help="D, one sentence a line")
    a.add_argument("--vocab-size", type=int, required=True)
    a.add_argument("--seed", type=int, default=42)
    a.add_argument("--threads", type=int, default=1, help="SentencePiece trainer threads")
    a.add_argument("--out", required=True, help="aux tokenizer.json")
    a.add_argument("--log")
    e = sub.add_parser("expand", help="choose V_new and write the target tokenizer T_t")
    e.add_argument("--source-tokenizer", required=True)
    e.add_argument("--aux", required=True, help="aux tokenizer.json")
    e.add_argument("--corpus", required=True, help="D, for token frequencies")
    e.add_argument("--heldout", required=True, help="held-out target text for the report")
    e.add_argument("--k", type=int, required=True)
    e.add_argument("--out", required=True, help="target tokenizer folder")
    e.add_argument("--report", required=True)
    e.add_argument("--log")
    args = p.parse_args(argv)
    log = setup_logging(args.log)
    if args.command == "aux":
        lines = read_lines(args.corpus)
        t0 = time.perf_counter()
        aux = train_aux_tokenizer(lines, args.source_tokenizer, args.vocab_size, args.seed, args.threads)
        log.info(
            "aux tokenizer: %d tokens from %d lines in %.1f s",
            aux.get_vocab_size(),
            len(lines),
            time.perf_counter() - t0,
        )
        with atomic_path(args.out) as tmp:
            aux.save(str(tmp))
        return
    lines = read_lines(args.corpus)
    t0 = time.perf_counter()
    source_json, family = load_source(args.source_tokenizer)
    source = Tokenizer.from_str(json.dumps(source_json))
    aux = _as_tokenizer(args.aux)
    ranked = rank_candidates(aux, source, lines)
    if len(ranked) < args.k:
        raise ValueError(f"{args.aux} yields only {len(ranked)} candidate tokens for k={args.k}; lower k")
    plan = plan_expansion(source, ranked, args.k, aux_merge_parts(aux))
    target = expand_tokenizer(args.source_tokenizer, plan.selected, args.out, plan.merges)
    seconds = time.perf_counter() - t0
    report = expansion_report(source, target, plan.selected, read_lines(args.heldout))
    report.update(
        {
            "aux_vocab_size": aux.get_vocab_size(),
            "candidates": len(ranked),
            "passed_over": [{"piece": t, "text": piece_text(t, family), "frequency": f} for t, f in plan.passed_over],
            "outside_top_k": [
                {"piece": t, "text": piece_text(t, family), "frequency": f} for t, f in plan.outside_top_k
            ],
            "merges": [list(m) for m in plan.merges],
            "seconds": seconds,
        }
    )
    write_json(args.report, report)
    log.info(
        "T_t: %d new tokens (%d of the top k passed over) in %.1f s; held-out tokens/sentence %.1f -> %.1f",
        args.k,
        len(plan.passed_over),
        seconds,
        report["tokens_per_sentence_source"],
        report["tokens_per_sentence_target"],
    )


if __name__ == "__main__":
    main()
