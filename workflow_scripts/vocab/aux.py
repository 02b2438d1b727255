"""The auxiliary tokenizer T_aux, trained on D by the route the source tokenizer's family requires (paper 002 §3, §6.6).

- byte-level BPE (GPT-2, SmolLM2, Llama-3 converted from tiktoken): Hugging Face tokenizers' BPE trainer under the
  source's normalizer and pre-tokenizer; pieces are bytes in GPT-2's byte-to-unicode form.
- SentencePiece byte-fallback BPE (Llama-2, Mistral, Gemma): the ``sentencepiece`` library (BPE, byte fallback, the
  source's trainer and normalizer options: ``sentencepiece_options``), converted to a tokenizer.json with the source's
  normalizer, pre-tokenizer and decoder; pieces are characters with "▁" for spaces.
"""

from __future__ import annotations

import io
import itertools
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer, pre_tokenizers, trainers

from workflow_scripts.io import UserError, seed_everything
from workflow_scripts.pieces import METASPACE, SENTENCEPIECE_BPE, SP_CONTROL, SP_UNKNOWN
from workflow_scripts.tokenizer_assets import (
    load_sentencepiece_proto,
    sentencepiece_bpe_parts,
    sentencepiece_model_type,
)
from workflow_scripts.vocab.source import load_source, tokenizer_json_path


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
        raise UserError(
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
        return [
            s for c in component.get("normalizers", component.get("pretokenizers", [])) for s in _normalizer_steps(c)
        ]
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
    tj = tj if tj is not None else json.loads(tokenizer_json_path(src).read_text(encoding="utf-8"))
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
    return options, f"{tokenizer_json_path(src)} (inferred)"


def train_sentencepiece_aux(
    lines: Sequence[str], source_tokenizer_dir: str | Path, vocab_size: int, seed: int = 42, threads: int = 1
) -> Tokenizer:
    """T_aux for a SentencePiece-BPE source: ``sentencepiece`` BPE with byte fallback and the source's options
    (``sentencepiece_options``), converted to a tokenizer.json with the source's normalizer and decoder (§6.6)."""
    import sentencepiece as spm

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
        raise UserError(
            f"corpus too small for an aux vocabulary of {vocab_size}: SentencePiece BPE on {len(lines)} lines supports "
            f"at most {m.group(2)} pieces; use aux vocab size <= {m.group(2)} (config aux_vocab_size) or more text"
        ) from e
    proto = load_sentencepiece_proto(model.getvalue())
    vocab, merges = sentencepiece_bpe_parts(proto)
    # Control and unknown pieces are added tokens, so they are never candidates.
    added = [
        {
            "id": i,
            "content": p.piece,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for i, p in enumerate(proto.pieces)
        if p.type in (SP_UNKNOWN, SP_CONTROL)
    ]
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
