"""One home for the byte, piece and tokenizer.json helpers that vocab, initialize and tokenizer_assets share.

A BPE *piece* is a string of the tokenizer's BPE vocabulary. Its alphabet depends on the tokenizer family:
- byte-level BPE (GPT-2, SmolLM2, Llama-3): every character stands for one byte through GPT-2's reversible
  byte-to-unicode map (``bytes_to_unicode``); a piece may hold part of a UTF-8 character;
- SentencePiece byte-fallback BPE (Llama-2, Mistral, Gemma): characters, with "▁" (``METASPACE``) for a space and
  ``<0xXX>`` pieces for bytes of characters the vocabulary lacks.

The family is read from the tokenizer.json (``detect_family``), never set by hand. This module imports nothing of the
project, so any step can use it without an import cycle.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

BYTE_LEVEL_BPE = "byte_level_bpe"
SENTENCEPIECE_BPE = "sentencepiece_bpe"
SUPPORTED_FAMILIES = (BYTE_LEVEL_BPE, SENTENCEPIECE_BPE)

METASPACE = "\u2581"  # "▁", SentencePiece's word-boundary marker
REPLACEMENT_CHAR = "\ufffd"  # what a partial UTF-8 sequence decodes to

# SentencePiece's ModelProto.SentencePiece.Type values (sentencepiece_model.proto).
SP_NORMAL, SP_UNKNOWN, SP_CONTROL, SP_USER_DEFINED, SP_UNUSED, SP_BYTE = 1, 2, 3, 4, 5, 6


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


BYTE_TO_UNICODE = bytes_to_unicode()
UNICODE_TO_BYTE = {c: b for b, c in BYTE_TO_UNICODE.items()}


def piece_bytes(piece: str) -> bytes:
    """The raw bytes a byte-level BPE piece stands for; ValueError for a character outside the byte alphabet."""
    try:
        return bytes(UNICODE_TO_BYTE[c] for c in piece)
    except KeyError as e:
        raise ValueError(f"{piece!r} is not a byte-level BPE piece ({e.args[0]!r} is not a byte symbol)") from e


def byte_level_form(text: str) -> str:
    """``text`` in the byte-level alphabet, so that piece strings can be searched in it."""
    return "".join(BYTE_TO_UNICODE[b] for b in text.encode("utf-8"))


def piece_text(piece: str, family: str = BYTE_LEVEL_BPE) -> str:
    """A piece as readable text: byte-level pieces as their bytes (partial UTF-8 sequences stay visible as backslash
    escapes), SentencePiece pieces with "▁" shown as a space."""
    if family == SENTENCEPIECE_BPE:
        return piece.replace(METASPACE, " ")
    return piece_bytes(piece).decode("utf-8", errors="backslashreplace")


def is_partial_utf8(piece: str) -> bool:
    """Whether a byte-level piece's bytes are not valid UTF-8 on their own (it decodes to U+FFFD)."""
    try:
        piece_bytes(piece).decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def tokenizer_json(tokenizer: Any) -> dict:
    """The tokenizer.json of a ``tokenizers.Tokenizer``, a fast transformers tokenizer, a dict, a file or a folder."""
    if isinstance(tokenizer, dict):
        return tokenizer
    if isinstance(tokenizer, (str, Path)):
        path = Path(tokenizer)
        return json.loads((path / "tokenizer.json" if path.is_dir() else path).read_text(encoding="utf-8"))
    backend = backend_of(tokenizer)
    if backend is None:
        raise TypeError(f"{type(tokenizer).__name__} has no tokenizer.json: a fast (tokenizers) BPE is needed")
    return json.loads(backend.to_str())


def backend_of(tokenizer: Any) -> Any:
    """The ``tokenizers.Tokenizer`` behind ``tokenizer`` (itself or a fast transformers tokenizer's); None for a dict,
    a file, a folder or a slow tokenizer."""
    if isinstance(tokenizer, (dict, str, Path)):
        return None
    backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
    return backend if hasattr(backend, "to_str") else None


def component_json(tokenizer: Any, name: str) -> Any:
    """The ``normalizer`` or ``pre_tokenizer`` entry of a tokenizer's tokenizer.json. From a tokenizers backend it is
    read off that component alone (its pickled state is its tokenizer.json entry): ``tokenizer_json`` would serialize
    and parse the whole vocabulary and merges too, about 50 ms for SmolLM2's 49K tokens."""
    backend = backend_of(tokenizer)
    if backend is None:
        return tokenizer_json(tokenizer).get(name)
    part = getattr(backend, name)
    return None if part is None else json.loads(part.__getstate__())


def model_type(tokenizer: Any) -> str | None:
    """The tokenizer.json model's ``type`` ("BPE", "Unigram", ...), without serializing a backend's vocabulary."""
    backend = backend_of(tokenizer)
    if backend is None:
        return (tokenizer_json(tokenizer).get("model") or {}).get("type")
    return type(backend.model).__name__


def has_component(node: Any, kind: str) -> bool:
    """Whether a tokenizer.json component (possibly a Sequence, at any depth) contains one of type ``kind``."""
    if isinstance(node, dict):
        return node.get("type") == kind or any(has_component(v, kind) for v in node.values())
    if isinstance(node, list):
        return any(has_component(v, kind) for v in node)
    return False


def is_byte_level(tokenizer: Any) -> bool:
    """Whether the BPE pieces are byte-to-unicode strings: a ByteLevel step in the pre-tokenizer or the normalizer.

    The decoder is not asked: it only says how ids become text, not which alphabet the vocabulary is written in.
    """
    if backend_of(tokenizer) is None:
        tokenizer = tokenizer_json(tokenizer)  # a file or folder read once for both components
    return any(has_component(component_json(tokenizer, name), "ByteLevel") for name in ("pre_tokenizer", "normalizer"))


def detect_family(tokenizer: Any, where: str | Path = "<tokenizer>") -> str:
    """The expansion route for a tokenizer: ``byte_level_bpe`` or ``sentencepiece_bpe`` (paper 002 §6.6)."""
    spec = tokenizer_json(tokenizer)
    model = spec.get("model") or {}
    kind = model.get("type")
    if kind != "BPE":
        raise ValueError(
            f"unsupported tokenizer kind {kind} for {where}: vocabulary expansion needs a BPE model "
            "(byte-level BPE like GPT-2/SmolLM2/Llama-3, or SentencePiece byte-fallback BPE like Llama-2/Gemma)"
        )
    if model.get("byte_fallback"):
        return SENTENCEPIECE_BPE
    if is_byte_level(spec):
        return BYTE_LEVEL_BPE
    raise ValueError(
        f"unsupported tokenizer kind BPE without byte-level pre-tokenizer or byte fallback for {where}: new tokens "
        "could produce characters the model cannot represent"
    )


def piece_byte_length(piece: str, byte_level: bool) -> int:
    """Bytes of normalized text a BPE piece stands for: a byte-level piece its bytes; a SentencePiece byte-fallback
    piece ``<0xNN>`` one byte; any other SentencePiece piece its UTF-8 length ("▁" included: source and target
    tokenizers see the same "▁"-marked string). Raises ValueError for a string outside the byte-level alphabet."""
    if byte_level:
        return len(piece_bytes(piece))
    if len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
        return 1
    return len(piece.encode("utf-8"))
