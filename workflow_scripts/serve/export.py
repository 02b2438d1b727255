"""Write a model folder as GGUF files, one per type (f16, q8_0, ...), with llama.cpp's own converter (docs/serving.md).

The folder is a plain transformers model: LAPT merges its LoRA adapters before saving (workflow_scripts/lapt), and
MuMo folders (a head beside the source model) have no single-model GGUF, so the rule is not defined for them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workflow_scripts.io import UserError, atomic_path, cli_main, setup_logging
from workflow_scripts.serve.converter import load_converter, use_source_pre_tokenizer

OUTTYPES = ("f32", "f16", "bf16", "q8_0")


def export(model_dir: str | Path, source_dir: str | Path, outtypes: list[str], out_dir: str | Path) -> list[Path]:
    """Convert ``model_dir`` into ``out_dir/model.<type>.gguf`` for each type; returns the files."""
    model_dir, out_dir = Path(model_dir), Path(out_dir)
    if (model_dir / "adapter_config.json").exists():
        raise UserError(f"{model_dir} holds a PEFT adapter: merge it into the model before the export")
    if not (model_dir / "config.json").is_file():
        raise UserError(f"{model_dir} has no config.json: the GGUF export needs a transformers model folder")
    unknown = sorted(set(outtypes) - set(OUTTYPES))
    if unknown:
        raise UserError(f"export.gguf: unknown type(s) {unknown}; choose from {list(OUTTYPES)}")
    converter = load_converter()
    use_source_pre_tokenizer(model_dir, source_dir)
    written = []
    for outtype in outtypes:
        out = out_dir / f"model.{outtype}.gguf"
        with atomic_path(out) as tmp:
            sys.argv = ["convert_hf_to_gguf.py", str(model_dir), "--outfile", str(tmp), "--outtype", outtype]
            converter.main()
        written.append(out)
    return written


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", required=True, help="transformers model folder (tokenizer included)")
    ap.add_argument("--source", required=True, help="the source model's folder (its pre-tokenizer name)")
    ap.add_argument("--types", nargs="+", default=["f16"], help=f"GGUF types among {list(OUTTYPES)}")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--log")
    args = ap.parse_args(argv)
    log = setup_logging(args.log)
    for path in export(args.model, args.source, args.types, args.out_dir):
        log.info("wrote %s (%.1f MB)", path, path.stat().st_size / 1e6)


if __name__ == "__main__":
    cli_main(main)
