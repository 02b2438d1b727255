"""The configured models as planning sees them: each ``models.<m>`` entry's shape, read from the model's own
config.json, and its parameter count, from which the GPU fit (checks.gpu_fit), the speed plan (plan.speed) and
every job's memory, time limit and CPUs (resources) follow.

Where the shape comes from, by kind (no transformers import: config.json is read as plain JSON):

- ``local``: the folder's config.json;
- ``hub``: config.json in the Hugging Face cache (``HF_HOME``; `snakemake download_all` fetches it with the weights,
  `hf download <id> config.json` alone), else the committed copy of a well-known model's public config.json in
  ``resources/model_configs/<org>/<name>/config.json``;
- ``gguf_package``: the GGUF header (dimensions, vocabulary, whether an output matrix is stored);
- ``random_llama``: its ``random:`` dimensions and the vocabulary of its package's GGUF tokenizer.

A hub model found in neither place plans with the shape its ``size`` label stands for (``STAND_INS``: 7B is
Llama-2-7B) and a warning; without such a label planning stops, naming ``models.<m>``. ``size`` is otherwise a label
for people: nothing is planned from it.
"""

from __future__ import annotations

import functools
import json
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workflow_scripts.gpu.shape import MODELS, ModelShape, shape_from_config, total_parameters

# A model from this many parameters needs a GPU: training and evaluating it on CPUs takes days (below it, the GPU
# rules still ask for a GPU on a cluster, and a local run uses the CPU).
GPU_PARAMETERS = 1_000_000_000
# Models below this many parameters are the tests' random Llamas (configs/test.yaml: 3.4M), whose runs read corpora of
# a few hundred sentences: their jobs ask for the cost table's test resources (workflow_scripts/plan/resources.py).
TEST_PARAMETERS = 10_000_000
LIBRARY = Path(__file__).resolve().parents[2] / "resources" / "model_configs"
# The shape a size label stands for where a hub model's config.json cannot be found: the paper grid's models.
STAND_INS = {"7B": "llama2-7b", "8B": "llama3-8b", "9B": "gemma2-9b", "135M": "smollm2-135m"}
STAND_IN_IDS = {
    "llama2-7b": "meta-llama/Llama-2-7b-hf",
    "llama3-8b": "meta-llama/Meta-Llama-3-8B",
    "gemma2-9b": "google/gemma-2-9b",
    "smollm2-135m": "HuggingFaceTB/SmolLM2-135M",
}
_UNITS = {"K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}


class ModelError(ValueError):
    """A model whose shape planning cannot find; the message names ``models.<m>`` and what to do."""


@dataclass(frozen=True)
class Model:
    """One ``models`` entry as planned: its shape, its parameter count, where the shape was read, its ``size`` label
    (None when not given) and a warning when the shape is a stand-in."""

    name: str
    shape: ModelShape
    parameters: int
    source: str
    label: str | None = None
    warning: str | None = None

    @property
    def needs_gpu(self) -> bool:
        """Whether the model is too large to train and evaluate on CPUs (``GPU_PARAMETERS``)."""
        return self.parameters >= GPU_PARAMETERS

    @property
    def size(self) -> str:
        """The ``size`` label, else the parameter count in words (``7.6B``)."""
        return self.label or in_words(self.parameters)


def in_words(parameters: int) -> str:
    """A parameter count as people write it: 135M, 7.6B, 3.4M."""
    for unit in ("T", "B", "M", "K"):
        if parameters >= _UNITS[unit]:
            value = parameters / _UNITS[unit]
            return f"{value:.1f}".rstrip("0").rstrip(".") + unit if value < 100 else f"{value:.0f}{unit}"
    return str(parameters)


def label_parameters(label: str) -> int:
    """The parameter count a size label stands for: the stand-in's exact count (``STAND_INS``), else the number it
    writes (``3B``, ``1.5B``, ``360M``). Raises KeyError for a label that writes no number."""
    if label in STAND_INS:
        return total_parameters(MODELS[STAND_INS[label]])
    found = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMBT])", label.strip(), re.IGNORECASE)
    if not found:
        raise KeyError(f"model size {label!r} is not a parameter count (such as 135M, 3B or 7.6B)")
    return round(float(found[1]) * _UNITS[found[2].upper()])


def _json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def hub_config(repo_id: str, revision: str | None = None) -> tuple[dict[str, Any], str] | None:
    """A hub model's config.json and where it was read: the Hugging Face cache (that revision), else the committed
    library (``LIBRARY``); None when neither has it. Reads no network."""
    from huggingface_hub import try_to_load_from_cache

    if "@" in repo_id:
        repo_id, revision = repo_id.split("@", 1)
    try:
        cached = try_to_load_from_cache(repo_id, "config.json", revision=revision)
    except ValueError:  # not a valid repository id: left to the model checks
        cached = None
    if isinstance(cached, str):
        return _json(Path(cached)), f"{cached} (Hugging Face cache)"
    library = LIBRARY / repo_id / "config.json"
    if library.is_file():
        return _json(library), str(library.relative_to(LIBRARY.parents[1]))
    return None


@functools.lru_cache(maxsize=16)
def _gguf(path: str, mtime_ns: int) -> tuple[dict[str, object], tuple[str, ...]]:
    from workflow_scripts.source_model import gguf_header

    metadata, tensors = gguf_header(Path(path))
    return metadata, tuple(tensors)


def gguf_config(path: Path) -> dict[str, Any]:
    """The config.json keys of a GGUF model, from its header (llama.cpp's ``<arch>.*`` fields; tied when the file
    stores no ``output.weight``)."""
    metadata, tensors = _gguf(str(path), path.stat().st_mtime_ns)
    arch = str(metadata.get("general.architecture", "llama"))

    def field(key: str) -> Any:
        return metadata.get(f"{arch}.{key}")

    return {
        "model_type": arch,
        "num_hidden_layers": field("block_count"),
        "hidden_size": field("embedding_length"),
        "intermediate_size": field("feed_forward_length"),
        "num_attention_heads": field("attention.head_count"),
        "num_key_value_heads": field("attention.head_count_kv"),
        "head_dim": field("attention.key_length"),
        "vocab_size": field("vocab_size") or metadata.get("tokenizer.ggml.tokens"),
        "tie_word_embeddings": "output.weight" not in tensors,
        "final_logit_softcapping": field("final_logit_softcapping"),
    }


def random_config(spec: Mapping[str, Any], tokenizer_gguf: Path) -> dict[str, Any]:
    """The config.json keys of a ``random_llama`` model as source_model.random_llama builds it: its ``random:``
    dimensions (defaults: source_model.RANDOM_DEFAULTS), tied, sized to its package's GGUF tokenizer."""
    from workflow_scripts.source_model import RANDOM_DEFAULTS

    r = {**RANDOM_DEFAULTS, **(spec.get("random") or {})}
    metadata, _ = _gguf(str(tokenizer_gguf), tokenizer_gguf.stat().st_mtime_ns)
    return {
        "model_type": "llama",
        "num_hidden_layers": r["num_layers"],
        "hidden_size": r["hidden_size"],
        "intermediate_size": r["intermediate_size"],
        "num_attention_heads": r["num_heads"],
        "num_key_value_heads": r["num_heads"],
        "vocab_size": metadata.get("tokenizer.ggml.tokens"),
        "tie_word_embeddings": True,
    }


def _no_config(name: str, spec: Mapping[str, Any]) -> Model:
    """A hub model without a config.json in reach: the stand-in of its size label with a warning, else ModelError."""
    path, label = spec["path"], spec.get("size")
    fetch = (
        f"`snakemake download_all` on a machine that reaches the hub fetches it into the Hugging Face cache with the "
        f"weights (`hf download {path} config.json` alone), or commit its public config.json as "
        f"resources/model_configs/{path}/config.json"
    )
    if label in STAND_INS:
        key = STAND_INS[label]
        warning = (
            f"models.{name}: no config.json of {path} in the Hugging Face cache or resources/model_configs/: planned "
            f"with the shape of {STAND_IN_IDS[key]}, which size {label} stands for (GPU fit, resources); {fetch}"
        )
        shape = MODELS[key]
        return Model(name, shape, total_parameters(shape), f"stand-in for size {label}", label, warning)
    labels = ", ".join(f"{size} ({STAND_IN_IDS[key]})" for size, key in STAND_INS.items())
    raise ModelError(
        f"models.{name}: no config.json of hub model {path!r} in the Hugging Face cache or resources/model_configs/, "
        f"so planning cannot size its jobs; {fetch}; or give a size whose stand-in shape it may plan with: {labels}"
    )


def describe(name: str, spec: Mapping[str, Any], workdir: str | Path = ".") -> Model:
    """The planned description of config ``models.<name>``; a local path resolves against ``workdir``. Raises
    ModelError naming the key when no shape can be read."""
    from workflow_scripts.source_model import locate_package_file

    kind, label = spec["kind"], spec.get("size")
    try:
        if kind == "local":
            path = Path(workdir) / spec["path"] / "config.json"
            config, source = _json(path), str(path)
        elif kind == "hub":
            found = hub_config(spec["path"], spec.get("revision"))
            if found is None:
                return _no_config(name, spec)
            config, source = found
        elif kind == "gguf_package":
            path = locate_package_file(spec["package"], spec["file"])
            config, source = gguf_config(path), f"{path} (GGUF header)"
        elif kind == "random_llama":
            path = locate_package_file(spec["package"], spec["file"])
            config, source = random_config(spec, path), f"models.{name}.random and the tokenizer of {path}"
        else:
            raise ModelError(f"models.{name}.kind: unknown kind {kind!r}")
        shape = shape_from_config(config)
    except (OSError, ValueError, KeyError, struct.error) as e:
        if isinstance(e, ModelError):
            raise
        why = e.args[0] if isinstance(e, KeyError) and e.args else e
        raise ModelError(f"models.{name}: cannot read the model's shape: {why}") from None
    return Model(name, shape, total_parameters(shape), source, label)


def describe_models(config: Mapping[str, Any], workdir: str | Path = ".") -> dict[str, Model]:
    """Every ``models`` entry of ``config`` described (``describe``), by name."""
    return {name: describe(name, spec, workdir) for name, spec in (config.get("models") or {}).items()}
