"""Reading the source tokenizer and deciding the expansion route (``detect_family``, from workflow_scripts.pieces)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from workflow_scripts.pieces import SUPPORTED_FAMILIES, detect_family


def tokenizer_json_path(source: str | Path) -> Path:
    """tokenizer.json of a tokenizer/model folder (or the file itself)."""
    path = Path(source)
    if path.is_dir():
        path = path / "tokenizer.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"no tokenizer.json at {path}: the source tokenizer must be a Hugging Face folder with a fast tokenizer"
        )
    return path


def as_tokenizer(tok: Tokenizer | Any | str | Path) -> Tokenizer:
    """Accept a ``tokenizers.Tokenizer``, a transformers fast tokenizer, a tokenizer.json or a folder holding one."""
    if isinstance(tok, Tokenizer):
        return tok
    if isinstance(tok, (str, Path)):
        return Tokenizer.from_file(str(tokenizer_json_path(tok)))
    backend = getattr(tok, "backend_tokenizer", None)
    if isinstance(backend, Tokenizer):
        return backend
    raise TypeError(f"expected a tokenizers.Tokenizer, a fast HF tokenizer or a path, got {type(tok).__name__}")


def _require_supported(family: str, where: str | Path) -> None:
    if family not in SUPPORTED_FAMILIES:
        raise NotImplementedError(
            f"tokenizer family {family} ({where}) is not yet supported: vocabulary expansion currently handles "
            f"{', '.join(SUPPORTED_FAMILIES)} only"
        )


def load_source(source_tokenizer_dir: str | Path) -> tuple[dict, str]:
    """The source tokenizer.json as a dict and its family; raises for families that are not supported yet."""
    path = tokenizer_json_path(source_tokenizer_dir)
    tj = json.loads(path.read_text(encoding="utf-8"))
    family = detect_family(tj, source_tokenizer_dir)
    _require_supported(family, source_tokenizer_dir)
    return tj, family


def pre_tokens(tok: Tokenizer | Any | str | Path, text: str) -> list[str]:
    """The strings the BPE model sees for ``text``: normalized, pre-tokenized (byte-level or "▁" form)."""
    tok = as_tokenizer(tok)
    if tok.normalizer is not None:
        text = tok.normalizer.normalize_str(text)
    if tok.pre_tokenizer is None:
        return [text] if text else []
    return [p for p, _ in tok.pre_tokenizer.pre_tokenize_str(text)]
