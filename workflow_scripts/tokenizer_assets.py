"""Hugging Face tokenizer folders from the real tokenizer files of the paper's model families (paper 002 §6.6).

The paper's sources come from the model hub with a tokenizer.json. Offline, the same tokenizers ship inside PyPI
packages in their native formats (`make setup` installs them): Llama-3's tiktoken BPE ranks (``llama-models``) and
Mistral-7B v0.1's SentencePiece byte-fallback BPE model, the Llama-2 kind (``mistral-common``). This module converts
both to a tokenizer.json that encodes exactly as the native library does, so the expansion routes can be tested on
them.

- tiktoken: the vocabulary is the rank table in GPT-2's byte-to-unicode form; merges are recovered from the ranks as
  every split (l, r) of a token t with l, r, t in the table, ordered by the rank of t (what tiktoken merges first),
  with ``ignore_merges`` (a whole pre-token in the table is one token, as in tiktoken). Pre-tokenizer: the model's
  regex, then ByteLevel without its own regex. Llama-3's 256 special tokens take ids 128000-128255 as added tokens.
- SentencePiece BPE: pieces keep their ids; merges are every split of a normal piece into two pieces, ordered by the
  merged piece's score (what SentencePiece merges first); byte pieces <0xXX> serve HF's byte fallback. Normalization
  mirrors the model's normalizer spec like transformers' (legacy) Llama converter: "▁" for spaces, a "▁" prefix when
  ``add_dummy_prefix``, NFKC only when the spec says nmt_nfkc; ``remove_extra_whitespaces`` is not mirrored (false
  for Llama-2 and Mistral). Unigram models are refused: expansion needs BPE.
"""

from __future__ import annotations

import argparse
import base64
import json
from pathlib import Path

from workflow_scripts.io import atomic_path, setup_logging
from workflow_scripts.pieces import SP_CONTROL, SP_NORMAL, SP_UNKNOWN, SP_USER_DEFINED, bytes_to_unicode

# Llama-3's pre-tokenizer regex (llama_models/llama3/tokenizer.py, ``pat_str``).
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# Llama-3.1+'s named special tokens (llama_models/llama3/tokenizer.py); the rest of the 256 are reserved tokens.
LLAMA3_SPECIALS = (
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|reserved_special_token_0|>",
    "<|reserved_special_token_1|>",
    "<|finetune_right_pad_id|>",
    "<|step_id|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eom_id|>",
    "<|eot_id|>",
    "<|python_tag|>",
    "<|image|>",
)
LLAMA3_NUM_SPECIAL = 256

# Where the real files live inside PyPI packages (installed with --no-deps, never imported).
ASSETS = {
    "llama3": ("llama-models", "llama_models/llama3/tokenizer.model"),
    "mistral": ("mistral-common", "mistral_common/data/tokenizer.model.v1"),
}


def locate_asset(name: str) -> Path:
    """Path of a known real tokenizer file (``llama3`` or ``mistral``) inside its installed PyPI package."""
    import importlib.metadata

    package, relpath = ASSETS[name]
    try:
        path = Path(importlib.metadata.distribution(package).locate_file(relpath))
    except importlib.metadata.PackageNotFoundError as e:
        raise FileNotFoundError(f"PyPI package {package} is not installed: pip install --no-deps {package}") from e
    if not path.is_file():
        raise FileNotFoundError(f"{relpath} not found in the installed {package} ({path})")
    return path


def _added(content: str, idx: int) -> dict:
    return {
        "id": idx,
        "content": content,
        "single_word": False,
        "lstrip": False,
        "rstrip": False,
        "normalized": False,
        "special": True,
    }


# ---------------------------------------------------------------------------------------------------------------------
# tiktoken (Llama-3)
# ---------------------------------------------------------------------------------------------------------------------


def load_tiktoken_ranks(model_file: str | Path) -> dict[bytes, int]:
    """A tiktoken BPE file (one ``base64 rank`` line per token) as bytes -> rank."""
    ranks: dict[bytes, int] = {}
    for line in Path(model_file).read_bytes().splitlines():
        if line.strip():
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def tiktoken_to_tokenizer_json(
    model_file: str | Path, pattern: str, special_tokens: list[str], bos_token: str | None = None
) -> dict:
    """A byte-level BPE tokenizer.json equivalent to a tiktoken encoding (module docstring); specials follow the
    ranks."""
    b2u = bytes_to_unicode()
    ranks = load_tiktoken_ranks(model_file)

    def form(b: bytes) -> str:
        return "".join(b2u[x] for x in b)

    vocab = {form(t): r for t, r in ranks.items()}
    splits = []
    for token, rank in ranks.items():
        for i in range(1, len(token)):
            left, right = token[:i], token[i:]
            if left in ranks and right in ranks:
                splits.append((rank, ranks[left], ranks[right], left, right))
    splits.sort()
    merges = [[form(left), form(right)] for _, _, _, left, right in splits]
    start = max(ranks.values()) + 1
    added = [_added(t, start + i) for i, t in enumerate(special_tokens)]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}
    post: dict = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True}
    if bos_token is not None:
        bos = {"id": bos_token, "type_id": 0}
        template = {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": bos}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [
                {"SpecialToken": bos},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": bos_token, "type_id": 1}},
                {"Sequence": {"id": "B", "type_id": 1}},
            ],
            "special_tokens": {
                bos_token: {"id": bos_token, "ids": [start + special_tokens.index(bos_token)], "tokens": [bos_token]}
            },
        }
        post = {"type": "Sequence", "processors": [post, template]}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
                byte_level,
            ],
        },
        "post_processor": post,
        "decoder": {**byte_level, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": True,
            "vocab": vocab,
            "merges": merges,
        },
    }


def llama3_special_tokens() -> list[str]:
    """Llama-3's 256 special tokens in id order (ids 128000-128255)."""
    n_reserved = LLAMA3_NUM_SPECIAL - len(LLAMA3_SPECIALS)
    return [*LLAMA3_SPECIALS, *(f"<|reserved_special_token_{2 + i}|>" for i in range(n_reserved))]


def llama3_tokenizer_json(model_file: str | Path) -> dict:
    """Llama-3's tiktoken model as a tokenizer.json (BOS prepended like the hub's Meta-Llama-3 tokenizer)."""
    return tiktoken_to_tokenizer_json(model_file, LLAMA3_PATTERN, llama3_special_tokens(), "<|begin_of_text|>")


# ---------------------------------------------------------------------------------------------------------------------
# SentencePiece BPE (Llama-2, Mistral, Gemma)
# ---------------------------------------------------------------------------------------------------------------------


def load_sentencepiece_proto(model: str | Path | bytes):
    """The ModelProto of a SentencePiece model file (or its bytes)."""
    from sentencepiece import sentencepiece_model_pb2 as pb

    proto = pb.ModelProto()
    proto.ParseFromString(model if isinstance(model, bytes) else Path(model).read_bytes())
    return proto


def sentencepiece_model_type(proto) -> str:
    """``bpe``, ``unigram``, ``word`` or ``char``."""
    from sentencepiece import sentencepiece_model_pb2 as pb

    return pb.TrainerSpec.ModelType.Name(proto.trainer_spec.model_type).lower()


def sentencepiece_normalizer(add_dummy_prefix: bool, nfkc: bool = False) -> dict:
    """The tokenizer.json normalizer of transformers' legacy Llama converter: spaces to "▁", optional "▁" prefix."""
    steps = [{"type": "NFKC"}] if nfkc else []
    if add_dummy_prefix:
        steps.append({"type": "Prepend", "prepend": "▁"})
    steps.append({"type": "Replace", "pattern": {"String": " "}, "content": "▁"})
    return {"type": "Sequence", "normalizers": steps}


def sentencepiece_decoder(add_dummy_prefix: bool) -> dict:
    steps = [
        {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
        {"type": "ByteFallback"},
        {"type": "Fuse"},
    ]
    if add_dummy_prefix:
        steps.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
    return {"type": "Sequence", "decoders": steps}


def sentencepiece_bpe_parts(proto) -> tuple[dict[str, int], list[list[str]]]:
    """Vocabulary (piece -> id) and merges (every two-piece split of a normal piece, by the merged piece's score)."""
    vocab = {p.piece: i for i, p in enumerate(proto.pieces)}
    mergeable = {p.piece for p in proto.pieces if p.type in (SP_NORMAL, SP_USER_DEFINED)}
    splits = []
    for i, p in enumerate(proto.pieces):
        if p.type != SP_NORMAL or len(p.piece) < 2:
            continue
        for j in range(1, len(p.piece)):
            left, right = p.piece[:j], p.piece[j:]
            if left in mergeable and right in mergeable:
                splits.append((-p.score, i, vocab[left], vocab[right], left, right))
    splits.sort()
    return vocab, [[left, right] for *_, left, right in splits]


def sentencepiece_to_tokenizer_json(model: str | Path | bytes, where: str | Path = "<model>") -> dict:
    """A byte-fallback BPE tokenizer.json equivalent to a SentencePiece BPE model (module docstring)."""
    proto = load_sentencepiece_proto(model)
    kind = sentencepiece_model_type(proto)
    if kind != "bpe":
        raise ValueError(
            f"unsupported tokenizer kind SentencePiece {kind} for {where}: vocabulary expansion needs a BPE model"
        )
    vocab, merges = sentencepiece_bpe_parts(proto)
    spec = proto.trainer_spec
    norm = proto.normalizer_spec
    added = [_added(p.piece, i) for i, p in enumerate(proto.pieces) if p.type in (SP_UNKNOWN, SP_CONTROL)]
    post = None
    if spec.bos_id >= 0:
        bos = proto.pieces[spec.bos_id].piece
        post = {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [
                {"SpecialToken": {"id": bos, "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": bos, "type_id": 1}},
                {"Sequence": {"id": "B", "type_id": 1}},
            ],
            "special_tokens": {bos: {"id": bos, "ids": [spec.bos_id], "tokens": [bos]}},
        }
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": sentencepiece_normalizer(norm.add_dummy_prefix, nfkc="nfkc" in norm.name),
        "pre_tokenizer": None,
        "post_processor": post,
        "decoder": sentencepiece_decoder(norm.add_dummy_prefix),
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": proto.pieces[spec.unk_id].piece if spec.unk_id >= 0 else None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": True,
            "byte_fallback": bool(spec.byte_fallback),
            "ignore_merges": False,
            "vocab": vocab,
            "merges": merges,
        },
    }


def sentencepiece_special_config(proto) -> dict:
    """tokenizer_config.json entries for a SentencePiece model's unk/bos/eos/pad pieces."""
    spec = proto.trainer_spec
    out = {"tokenizer_class": "PreTrainedTokenizerFast"}
    for name, idx in (
        ("unk_token", spec.unk_id),
        ("bos_token", spec.bos_id),
        ("eos_token", spec.eos_id),
        ("pad_token", spec.pad_id),
    ):
        if idx >= 0:
            out[name] = proto.pieces[idx].piece
    return out


# ---------------------------------------------------------------------------------------------------------------------
# Folders
# ---------------------------------------------------------------------------------------------------------------------


def write_folder(name: str, out_dir: str | Path, model_file: str | Path | None = None) -> Path:
    """Write a tokenizer folder (tokenizer.json, tokenizer_config.json; tokenizer.model for SentencePiece) for a known
    real tokenizer, ``llama3`` or ``mistral``, read from ``model_file`` or its PyPI package."""
    model_file = Path(model_file) if model_file else locate_asset(name)
    if name == "llama3":
        tj = llama3_tokenizer_json(model_file)
        config = {
            "tokenizer_class": "PreTrainedTokenizerFast",
            "bos_token": "<|begin_of_text|>",
            "eos_token": "<|end_of_text|>",
            "model_max_length": 131072,
        }
    elif name == "mistral":
        proto = load_sentencepiece_proto(model_file)
        tj = sentencepiece_to_tokenizer_json(model_file, model_file)
        config = sentencepiece_special_config(proto)
    else:
        raise ValueError(f"unknown tokenizer asset {name!r}; known: {', '.join(ASSETS)}")
    with atomic_path(out_dir) as tmp:
        tmp.mkdir(parents=True)
        (tmp / "tokenizer.json").write_text(json.dumps(tj, ensure_ascii=False), encoding="utf-8")
        (tmp / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        if name == "mistral":
            # The SentencePiece model itself: the aux tokenizer mirrors its trainer and normalizer options.
            (tmp / "tokenizer.model").write_bytes(Path(model_file).read_bytes())
    return Path(out_dir)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--name", required=True, choices=sorted(ASSETS), help="which real tokenizer")
    p.add_argument("--model-file", help="the native file (default: from the installed PyPI package)")
    p.add_argument("--out", required=True, help="tokenizer folder to write")
    p.add_argument("--log")
    args = p.parse_args(argv)
    log = setup_logging(args.log)
    out = write_folder(args.name, args.out, args.model_file)
    log.info("wrote %s tokenizer folder %s", args.name, out)


if __name__ == "__main__":
    main()
