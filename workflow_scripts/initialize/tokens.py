"""Which ids of T_t are new, what their BPE-model strings are, and how they map onto the source BPE
(docs/initialization.md, "A new token's source subwords").

The right mapping (``source_subwords``) applies the SOURCE BPE model to the new token's own BPE string. The two wrong
mappings (``map_full_tokenizer_on_piece``, ``map_decode_encode``) are kept only so that the report can count how often
they would disagree.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from workflow_scripts.pieces import (
    SENTENCEPIECE_BPE,
    is_byte_level,
    is_partial_utf8,
    model_type,
    piece_text,
    tokenizer_json,
)


@dataclass(frozen=True)
class NewToken:
    """One token of V_new: its id in T_t, its BPE-model string and a readable rendering."""

    id: int
    piece: str  # the BPE vocabulary string: byte-to-unicode form (byte-level) or "▁"-marked characters
    text: str  # readable: bytes decoded with \\x escapes for partial UTF-8; "▁" shown as a space
    partial_utf8: bool  # byte-level piece whose bytes are not valid UTF-8 (decodes to U+FFFD)


def _check_expansion(source_tokenizer: Any, target_tokenizer: Any) -> list[int]:
    """The new ids, after checking that T_t is a BPE that keeps every source token at its source id."""
    for name, tok in (("source", source_tokenizer), ("target", target_tokenizer)):
        if (kind := model_type(tok)) != "BPE":
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
        # Added tokens are matched before BPE and are reachable by no merge (docs/initialization.md "Tokenizers"): not a
        # real BPE.
        raise ValueError(
            f"{len(added)} new target ids are added tokens, not BPE vocabulary entries (e.g. {added[:5]}); the target "
            "tokenizer must extend the BPE model itself (vocab + merges)"
        )
    return new_ids


def find_new_tokens(source_tokenizer: Any, target_tokenizer: Any) -> list[NewToken]:
    """V_new as T_t's ids above the source ids, after checking that T_t keeps every source token at its source id."""
    new_ids = _check_expansion(source_tokenizer, target_tokenizer)
    model = target_tokenizer.backend_tokenizer.model
    byte_level = is_byte_level(target_tokenizer)
    tokens = []
    for i in new_ids:
        piece = model.id_to_token(i)
        if byte_level:
            text, partial = piece_text(piece), is_partial_utf8(piece)
        else:
            text, partial = piece_text(piece, SENTENCEPIECE_BPE), False
        tokens.append(NewToken(id=i, piece=piece, text=text, partial_utf8=partial))
    return tokens


def clean_bpe_model(tokenizer: Any) -> Any:
    """The tokenizer's BPE model, rebuilt without dropout if it has any (dropout would make the mapping random)."""
    from tokenizers import Tokenizer

    if not tokenizer.backend_tokenizer.model.dropout:
        return tokenizer.backend_tokenizer.model
    spec = tokenizer_json(tokenizer)
    spec["model"]["dropout"] = None
    return Tokenizer.from_str(json.dumps(spec)).model


def source_subwords(source_bpe: Any, piece: str) -> tuple[list[int], str | None]:
    """Source ids spelling ``piece``: the SOURCE BPE model applied to the new token's own BPE string
    (docs/initialization.md, "A new token's source subwords").

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
