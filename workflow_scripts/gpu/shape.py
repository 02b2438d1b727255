"""Model shapes: the numbers of a model's config.json that the training estimate (``estimate``) and the speed plan
(``workflow_scripts.speed.plan``) need, for the paper grid's models and for any transformers config."""

from __future__ import annotations

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


# Real configs (Hugging Face config.json of each model).
MODELS: dict[str, ModelShape] = {
    "llama2-7b": ModelShape(32, 4096, 11008, 32000, 32, 32, 128, tied=False),  # meta-llama/Llama-2-7b-hf
    "llama3-8b": ModelShape(32, 4096, 14336, 128256, 32, 8, 128, tied=False),  # meta-llama/Meta-Llama-3-8B
    "gemma2-9b": ModelShape(
        42, 3584, 14336, 256000, 16, 8, 256, tied=True, norms_per_layer=4, logit_softcap=True, eager_attention=True
    ),
    "smollm2-135m": ModelShape(30, 576, 1536, 49152, 9, 3, 64, tied=True),  # HuggingFaceTB/SmolLM2-135M
}
# The config's size classes (config.yaml ``models.<key>.size``), by the model whose shape stands for them.
SIZE_MODELS = {"7B": "llama2-7b", "8B": "llama3-8b", "9B": "gemma2-9b", "135M": "smollm2-135m"}
# The size classes that need a GPU.
SIZE_SHAPES = {size: SIZE_MODELS[size] for size in ("7B", "8B", "9B")}
# The config's model keys and sizes name the same shapes.
ALIASES = {
    "llama2": "llama2-7b",
    "llama3": "llama3-8b",
    "gemma2": "gemma2-9b",
    "smollm2": "smollm2-135m",
    **SIZE_MODELS,
}


def shape_from_config(config: Any) -> ModelShape:
    """A ModelShape from a transformers config (Llama, Mistral, Gemma2 and alike)."""
    c = config.get_text_config() if hasattr(config, "get_text_config") else config
    heads = c.num_attention_heads
    gemma2 = "gemma2" in str(getattr(c, "model_type", ""))
    return ModelShape(
        layers=c.num_hidden_layers,
        hidden=c.hidden_size,
        ffn=c.intermediate_size,
        vocab=c.vocab_size,
        heads=heads,
        kv_heads=getattr(c, "num_key_value_heads", None) or heads,
        head_dim=getattr(c, "head_dim", None) or c.hidden_size // heads,
        tied=bool(getattr(c, "tie_word_embeddings", False)),
        norms_per_layer=4 if gemma2 else 2,
        logit_softcap=bool(getattr(c, "final_logit_softcapping", None)),
        eager_attention=gemma2,
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
