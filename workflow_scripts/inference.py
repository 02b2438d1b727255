"""What every model-running evaluation step shares (perplexity, harness, speed, MuMo): loading a model for inference,
the decoding table, the grid cell and the command-line arguments. The task list and each task's files and arguments
are workflow_scripts/plan/steps.py."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import Any

from workflow_scripts.io import read_corpus

log = logging.getLogger("vocabexp")

# Table 13 (b): beam sampling. "greedy" is the deterministic default for cheap runs and the speed measurement.
DECODING: dict[str, dict[str, Any]] = {
    "greedy": {"do_sample": False, "num_beams": 1},
    "paper": {
        "do_sample": True,
        "num_beams": 5,
        "temperature": 0.8,
        "top_k": 40,
        "top_p": 0.9,
        "repetition_penalty": 1.1,
        "early_stopping": True,
    },
}


def read_cell(arg: str) -> dict:
    """The grid cell from ``--cell``: inline JSON, or the path of a JSON file."""
    text = arg if arg.lstrip().startswith("{") else Path(arg).read_text(encoding="utf-8")
    cell = json.loads(text)
    if not isinstance(cell, dict):
        raise ValueError(f"--cell must be a JSON object, got {type(cell).__name__}")
    return cell


def load_model(model_dir: str | Path, dtype: str = "auto", device: str | None = None):
    """Load a causal LM and its tokenizer for inference: eval mode, left padding, a pad token (EOS when missing).

    ``dtype`` "auto" is bfloat16 on a GPU and float32 on CPU.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if dtype == "auto":
        torch_dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    else:
        torch_dtype = getattr(torch, dtype)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    # Decoder-only generation appends to the right end of each row: pads must be on the left.
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch_dtype).to(device).eval()
    return model, tokenizer


# The config keys LightEval 0.13.0's TransformersModel reads, in its order, for a model's maximum sequence length when
# it is given no max_length (``_init_max_length``).
SEQUENCE_LENGTH_KEYS = ("n_positions", "max_position_embeddings", "n_ctx")


def model_max_length(config) -> int:
    """A model's own maximum sequence length (prompt and continuation together): the first of
    ``SEQUENCE_LENGTH_KEYS`` in its (text) config, as LightEval reads it: 4,096 for Llama-2, 8,192 for Llama-3,
    Gemma-2 and SmolLM2. The harness scores and the speed step times every prompt within it (docs/evaluation.md)."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    for key in SEQUENCE_LENGTH_KEYS:
        value = getattr(text, key, None)
        if value:
            return int(value)
    where = getattr(config, "_name_or_path", "") or "the model folder"
    raise ValueError(
        f"{where}: its config.json has none of {', '.join(SEQUENCE_LENGTH_KEYS)}; add the model's maximum sequence "
        "length there (or pass --max-length to the harness)"
    )


def items_used(task: str, requested: int | None, used: int, source: str | Path) -> dict[str, int | None]:
    """``n_requested`` / ``n_used`` for a step's details, with a warning when ``source`` held fewer items than
    ``--n`` asked for (planning warns where the data sizes are known; here the data step's output is read)."""
    if requested is not None and used < requested:
        log.warning(
            "%s: evaluation.%s.n asks for %d items, %s holds %d: %d used", task, task, requested, source, used, used
        )
    return {"n_requested": requested, "n_used": used}


def read_sentences(path: str | Path, n: int | None = None) -> list[str]:
    """The first ``n`` usable lines of a one-sentence-per-line file (``io.read_corpus``: an empty file is refused)."""
    sentences = read_corpus(path, what="held-out text")
    return sentences[:n] if n is not None else sentences


def add_common_args(p: argparse.ArgumentParser, batch_size: int = 8) -> None:
    """The arguments every model-running result CLI shares (perplexity, harness, speed)."""
    p.add_argument("--model", required=True, help="HF model folder")
    p.add_argument("--n", type=int, default=None, help="first n items (default: all)")
    p.add_argument("--batch-size", type=int, default=batch_size)
    p.add_argument("--cell", required=True, help="grid cell as JSON, or a JSON file")
    p.add_argument("--out", required=True, help="result JSON")
    p.add_argument("--data-label", default=None, help="copied into details.data_label (e.g. the stand-in data note)")
    p.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"])
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--log")
