"""Write a model folder as GGUF files, one per type (f16, q8_0, q4_0+emb_q8_0, ...), with llama.cpp's own converter and
quantizer (docs/serving.md).

The converter writes the types it has (f32, f16, bf16, q8_0); every other type, and any type whose token embeddings
and output layer are set apart (``+emb_<type>``), is quantized from the f16 file by llama.cpp's own quantizer
(``llama_model_quantize``, what its ``llama-quantize`` CLI runs) with ``token_embedding_type`` and
``output_tensor_type`` set. The folder is a plain transformers model: LAPT merges its LoRA adapters before saving
(workflow_scripts/lapt), and MuMo folders (a head beside the source model) have no single-model GGUF, so the rule is
not defined for them.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from workflow_scripts.io import UserError, atomic_path, cli_main, setup_logging
from workflow_scripts.serve.converter import load_converter, use_source_pre_tokenizer

CONVERTED = ("f32", "f16", "bf16", "q8_0")  # convert_hf_to_gguf.py --outtype
# llama.cpp's quantizer: the file types (llama_cpp.LLAMA_FTYPE_MOSTLY_<TYPE>); the K-quants need rows of a multiple of
# 256 values and fall back to a 32-block type on other widths (docs/serving.md)
QUANTIZED = ("q8_0", "q6_k", "q5_k_m", "q5_k_s", "q5_1", "q5_0", "q4_k_m", "q4_k_s", "q4_1", "q4_0", "q3_k_m", "q2_k")
# the tensor types the token embeddings and the output layer can be given (llama_cpp.GGML_TYPE_<TYPE>)
EMBEDDING_TYPES = ("f32", "f16", "q8_0", "q6_k", "q5_0", "q4_0")
SEPARATOR = "+emb_"


@dataclass(frozen=True)
class GgufType:
    """One GGUF file of a cell: the file type and, where set, the type of its token embeddings and output layer
    (config ``export.gguf``: ``q4_0`` or ``{type: q4_0, embeddings: q8_0}``; named ``q4_0+emb_q8_0``)."""

    type: str
    embeddings: str | None = None

    @property
    def name(self) -> str:
        """The name in file names, records and tables: ``q4_0``, ``q4_0+emb_q8_0``."""
        return self.type + (f"{SEPARATOR}{self.embeddings}" if self.embeddings else "")

    @property
    def converted(self) -> bool:
        """Written by the converter itself (else quantized from the f16 file)."""
        return self.embeddings is None and self.type in CONVERTED

    @classmethod
    def of(cls, entry: str | dict) -> GgufType:
        """An ``export.gguf`` entry of the config, or a name (``q4_0+emb_q8_0``), checked against the known types."""
        if isinstance(entry, dict):
            gtype = cls(entry["type"], entry.get("embeddings"))
        else:
            base, _, emb = str(entry).partition(SEPARATOR)
            gtype = cls(base, emb or None)
        if gtype.type not in (*CONVERTED, *QUANTIZED):
            raise UserError(f"export.gguf: unknown type {gtype.type!r}; choose from {sorted({*CONVERTED, *QUANTIZED})}")
        if gtype.embeddings is not None and gtype.embeddings not in EMBEDDING_TYPES:
            raise UserError(
                f"export.gguf {gtype.type}: unknown embeddings type {gtype.embeddings!r}; choose from "
                f"{list(EMBEDDING_TYPES)}"
            )
        if gtype.embeddings is not None and gtype.type not in QUANTIZED:
            raise UserError(f"export.gguf {gtype.type}: embeddings apply to the quantizer's types {list(QUANTIZED)}")
        return gtype


def quantize_params(gtype: GgufType, llama_cpp, threads: int = 1):
    """llama.cpp's default quantization parameters with the file type and, where set, the token embeddings' and the
    output layer's type (a tied head is the token embeddings: llama.cpp gives it the output layer's type)."""
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{gtype.type.upper()}")
    params.nthread = threads
    if gtype.embeddings:
        tensor_type = getattr(llama_cpp, f"GGML_TYPE_{gtype.embeddings.upper()}")
        params.token_embedding_type = tensor_type
        params.output_tensor_type = tensor_type
    return params


def quantize(f16: str | Path, out: str | Path, gtype: GgufType, threads: int = 1) -> Path:
    """Quantize an f16 GGUF file into ``out`` (atomically) with llama.cpp's own quantizer."""
    import ctypes

    from workflow_scripts.serve.fidelity import llama_cpp as load_llama_cpp

    llama_cpp = load_llama_cpp()
    from llama_cpp import _logger

    _logger.set_verbose(False)  # as Llama(verbose=False) does: not a line per tensor; the check records the types
    params = quantize_params(gtype, llama_cpp, threads)
    with atomic_path(out) as tmp:
        status = llama_cpp.llama_model_quantize(str(f16).encode(), str(tmp).encode(), ctypes.byref(params))
        if status != 0:
            raise RuntimeError(f"llama_model_quantize {f16} -> {gtype.name} failed (status {status})")
    return Path(out)


def _convert(converter, model_dir: Path, outtype: str, out: Path) -> None:
    with atomic_path(out) as tmp:
        sys.argv = ["convert_hf_to_gguf.py", str(model_dir), "--outfile", str(tmp), "--outtype", outtype]
        converter.main()


def export(
    model_dir: str | Path, source_dir: str | Path, types: list[str | GgufType], out_dir: str | Path, threads: int = 1
) -> list[Path]:
    """Write ``out_dir/model.<name>.gguf`` for each type; returns the files. Types the converter lacks are quantized
    from the f16 file (written for them when f16 is not among the types, and then removed)."""
    model_dir, out_dir = Path(model_dir), Path(out_dir)
    if (model_dir / "adapter_config.json").exists():
        raise UserError(f"{model_dir} holds a PEFT adapter: merge it into the model before the export")
    if not (model_dir / "config.json").is_file():
        raise UserError(f"{model_dir} has no config.json: the GGUF export needs a transformers model folder")
    gtypes = [t if isinstance(t, GgufType) else GgufType.of(t) for t in types]
    converter = load_converter()
    use_source_pre_tokenizer(model_dir, source_dir)
    written = {}
    for gtype in (t for t in gtypes if t.converted):
        written[gtype] = out_dir / f"model.{gtype.name}.gguf"
        _convert(converter, model_dir, gtype.type, written[gtype])
    quantized = [t for t in gtypes if not t.converted]
    if quantized:
        with tempfile.TemporaryDirectory(dir=out_dir, prefix=".f16.") as scratch:
            f16 = written.get(GgufType("f16"))
            if f16 is None:
                f16 = Path(scratch) / "model.f16.gguf"
                _convert(converter, model_dir, "f16", f16)
            for gtype in quantized:
                written[gtype] = quantize(f16, out_dir / f"model.{gtype.name}.gguf", gtype, threads)
    return [written[t] for t in gtypes]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", required=True, help="transformers model folder (tokenizer included)")
    ap.add_argument("--source", required=True, help="the source model's folder (its pre-tokenizer name)")
    types = f"{list(CONVERTED)} and {list(QUANTIZED)}, each of the latter optionally with {SEPARATOR}<type>"
    ap.add_argument("--types", nargs="+", default=["f16"], help=f"GGUF types among {types}")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--log")
    args = ap.parse_args(argv)
    log = setup_logging(args.log)
    from workflow_scripts.serve.fidelity import tensor_types

    for path in export(args.model, args.source, args.types, args.out_dir, args.threads):
        log.info("wrote %s (%.1f MB): %s", path, path.stat().st_size / 1e6, tensor_types(path))


if __name__ == "__main__":
    cli_main(main)
