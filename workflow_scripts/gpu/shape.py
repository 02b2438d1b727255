"""Model shapes: the numbers of a model's config.json that the training estimate (``estimate``), the speed plan
(``workflow_scripts.plan.speed``) and the job resources (``workflow_scripts.plan.resources``) need, read from any
config.json (``shape_from_config``); which config.json a configured model has: ``workflow_scripts.plan.models``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

GIB = 1024**3


@dataclass(frozen=True)
class ModelShape:
    """The shape numbers of one model (from its config.json)."""

    layers: int
    hidden: int
    ffn: int
    vocab: int
    heads: int
    kv_heads: int
    head_dim: int
    tied: bool
    norms_per_layer: int = 2
    logit_softcap: bool = False  # Gemma-2's final soft-capping: two more tensors of the logits' size
    eager_attention: bool = False  # attention scores materialised (Gemma-2: soft-capping needs the eager kernel)


# The estimator's named shapes: the Hugging Face config.json of each (resources/model_configs/ holds the hub models',
# tests/test_models.py checks that they agree).
MODELS: dict[str, ModelShape] = {
    "llama2-7b": ModelShape(32, 4096, 11008, 32000, 32, 32, 128, tied=False),  # meta-llama/Llama-2-7b-hf
    "llama3-8b": ModelShape(32, 4096, 14336, 128256, 32, 8, 128, tied=False),  # meta-llama/Meta-Llama-3-8B
    "gemma2-9b": ModelShape(
        42, 3584, 14336, 256000, 16, 8, 256, tied=True, norms_per_layer=4, logit_softcap=True, eager_attention=True
    ),  # google/gemma-2-9b
    "smollm2-135m": ModelShape(30, 576, 1536, 49152, 9, 3, 64, tied=True),  # HuggingFaceTB/SmolLM2-135M
}
# The paper config's model keys (configs/paper.yaml) name the same shapes.
ALIASES = {"llama2": "llama2-7b", "llama3": "llama3-8b", "gemma2": "gemma2-9b", "smollm2": "smollm2-135m"}
# The keys of config.json a shape is read from (beside the optional num_key_value_heads, head_dim, tie_word_embeddings,
# final_logit_softcapping and model_type).
CONFIG_KEYS = ("num_hidden_layers", "hidden_size", "intermediate_size", "vocab_size", "num_attention_heads")
# model_type values whose layers hold four norms (pre- and post-norm around attention and MLP), and Gemma-2, whose
# final logit soft-capping needs the eager attention kernel (scores materialised).
FOUR_NORMS = ("gemma2", "gemma3", "gemma3_text")
EAGER = ("gemma2",)


def shape_from_config(config: Mapping[str, Any] | Any) -> ModelShape:
    """A ModelShape from a model's config.json as a plain dict (Llama, Mistral, Qwen2, Gemma-2 and alike), or from a
    transformers config object (read through its ``to_dict()``).

    ``vocab_size`` is the embedding's rows, which may exceed the tokenizer's (Qwen2.5 pads 151,665 tokens to 152,064).
    A missing ``tie_word_embeddings`` means tied, as transformers writes a config.json (it leaves out values equal to
    the default of ``PretrainedConfig``, which ties). A multimodal config's ``text_config`` is read in its place.
    Raises KeyError naming a missing key.
    """
    if not isinstance(config, Mapping):
        text = config.get_text_config() if hasattr(config, "get_text_config") else config
        config = text.to_dict()
    if isinstance(config.get("text_config"), Mapping):
        config = {"model_type": config.get("model_type"), **config["text_config"]}
    missing = [k for k in CONFIG_KEYS if not isinstance(config.get(k), int)]
    if missing:
        raise KeyError(f"config.json has no integer {', '.join(missing)}")
    heads, hidden = config["num_attention_heads"], config["hidden_size"]
    model_type = str(config.get("model_type") or "")
    return ModelShape(
        layers=config["num_hidden_layers"],
        hidden=hidden,
        ffn=config["intermediate_size"],
        vocab=config["vocab_size"],
        heads=heads,
        kv_heads=config.get("num_key_value_heads") or heads,
        head_dim=config.get("head_dim") or hidden // heads,
        tied=bool(config.get("tie_word_embeddings", True)),
        norms_per_layer=4 if model_type in FOUR_NORMS else 2,
        logit_softcap=bool(config.get("final_logit_softcapping")),
        eager_attention=model_type in EAGER,
    )


def named_shape(model: str | ModelShape) -> tuple[str, ModelShape]:
    """(name, shape) of a model named in MODELS or ALIASES, or ("custom", shape) of a ModelShape."""
    if not isinstance(model, str):
        return "custom", model
    key = ALIASES.get(model, model)
    if key not in MODELS:
        raise ValueError(f"unknown model {model!r}; known: {sorted(MODELS) + sorted(ALIASES)} or a ModelShape")
    return key, MODELS[key]


def _linear_shapes(m: ModelShape) -> dict[str, tuple[int, int]]:
    q, kv = m.heads * m.head_dim, m.kv_heads * m.head_dim
    h, f = m.hidden, m.ffn
    return {"q": (h, q), "k": (h, kv), "v": (h, kv), "o": (q, h), "gate": (h, f), "up": (h, f), "down": (f, h)}


def parameter_counts(m: ModelShape, lora_r: int = 8) -> dict[str, int]:
    """Parameters of one layer (matrices, norms), the embedding, the (untied) head, the final norm, LoRA per layer."""
    shapes = _linear_shapes(m)
    return {
        "layer_matrices": sum(i * o for i, o in shapes.values()),
        "layer_norms": m.norms_per_layer * m.hidden,
        "embedding": m.vocab * m.hidden,
        "head": 0 if m.tied else m.vocab * m.hidden,
        "final_norm": m.hidden,
        "lora_per_layer": sum(lora_r * (i + o) for i, o in shapes.values()),
    }


def total_parameters(m: ModelShape) -> int:
    """Parameters of the whole model: every layer, the embedding, the untied head and the final norm."""
    pc = parameter_counts(m)
    return m.layers * (pc["layer_matrices"] + pc["layer_norms"]) + pc["embedding"] + pc["head"] + pc["final_norm"]
