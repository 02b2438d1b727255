"""llama.cpp's Hugging Face to GGUF converter (convert_hf_to_gguf.py, its ``conversion`` package and its own gguf-py),
as the llama-cpp-python source distribution ships them; ``make llama-cpp`` extracts them (docs/serving.md)."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType

from workflow_scripts.io import UserError

LLAMA_CPP_PYTHON = "0.3.36"  # the Makefile's LLAMA_CPP_VERSION
REPO = Path(__file__).resolve().parents[2]
DEFAULT_SRC = REPO / ".cache" / "llama-cpp" / f"llama.cpp-{LLAMA_CPP_PYTHON}"


def converter_dir() -> Path:
    """The folder holding convert_hf_to_gguf.py, conversion/ and gguf-py/ (LLAMA_CPP_CONVERTER overrides it)."""
    return Path(os.environ.get("LLAMA_CPP_CONVERTER", DEFAULT_SRC))


def load_converter(src: Path | None = None) -> ModuleType:
    """Import convert_hf_to_gguf.py with the gguf-py it ships (not the gguf on PyPI, which may lag its constants)."""
    src = src or converter_dir()
    script = src / "convert_hf_to_gguf.py"
    if not script.is_file() or not (src / "gguf-py" / "gguf").is_dir():
        raise UserError(
            f"llama.cpp's converter is missing at {src}: run `make llama-cpp` (it extracts convert_hf_to_gguf.py and "
            f"gguf-py from llama-cpp-python {LLAMA_CPP_PYTHON}'s source distribution), or set LLAMA_CPP_CONVERTER"
        )
    if "gguf" in sys.modules and not str(sys.modules["gguf"].__file__).startswith(str(src)):
        raise RuntimeError("gguf was imported before the converter: its gguf-py must come first on sys.path")
    for folder in (src / "gguf-py", src):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location("convert_hf_to_gguf", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_DETECT = {}  # the converter's own pre-tokenizer detection, kept before use_source_pre_tokenizer replaces it


def detected_pre_name(tokenizer) -> str:
    """The pre-tokenizer name the converter itself finds for a tokenizer (NotImplementedError: none)."""
    from conversion.base import TextModel

    return _DETECT.setdefault("pre", TextModel.get_vocab_base_pre)(None, tokenizer)


def pre_tokenizer_parts(model_dir: str | Path) -> dict:
    """The parts of tokenizer.json that llama.cpp's pre-tokenizer name stands for."""
    tj = json.loads((Path(model_dir) / "tokenizer.json").read_text(encoding="utf-8"))
    return {key: tj.get(key) for key in ("normalizer", "pre_tokenizer")}


def use_source_pre_tokenizer(model_dir: str | Path, source_dir: str | Path) -> None:
    """Name the expanded tokenizer's pre-tokenizer after the Source's.

    The converter recognizes a BPE pre-tokenizer by hashing the token ids of a fixed text; new merges can change those
    ids (its text has Khmer, Chinese, Cyrillic) although expansion keeps the normalizer and pre-tokenizer as they are.
    The name is therefore the one the converter finds for the Source tokenizer, once both are checked to be equal
    (when the converter asks for it).
    """
    from conversion.base import TextModel
    from transformers import AutoTokenizer

    model_dir, source_dir = Path(model_dir), Path(source_dir)
    _DETECT.setdefault("pre", TextModel.get_vocab_base_pre)  # the converter's own, before it is replaced

    def of_source(self, tokenizer) -> str:
        # asked for BPE vocabularies only (a SentencePiece model is converted without it)
        if pre_tokenizer_parts(model_dir) != pre_tokenizer_parts(source_dir):
            raise UserError(
                f"{model_dir}/tokenizer.json has another normalizer or pre-tokenizer than the source model's "
                f"({source_dir}): llama.cpp has no pre-tokenizer name for it"
            )
        return detected_pre_name(AutoTokenizer.from_pretrained(source_dir))

    TextModel.get_vocab_base_pre = of_source
