"""GPU memory and time estimate of one LAPT run (workflow_scripts.lapt) per model, procedure and sequence length.

Arithmetic on parameter counts and tensor shapes, not a measurement; it follows what workflow_scripts/lapt/ allocates:

- Weights: ``weights_dtype="fp32"`` (lapt's default) keeps every weight in fp32 and runs the forward in bf16 autocast;
  ``"bf16"`` keeps frozen weights in bf16 and trainable ones in fp32. Gradients are fp32 for trainable parameters,
  AdamW holds two fp32 moments per trainable parameter. Autocast caches a bf16 copy of each trainable weight for the
  whole forward/backward (frozen weights are cast on the fly and freed).
- Activations with gradient checkpointing: each layer's input is kept, and one layer is recomputed at a time
  (its activations and their gradients). Attention is assumed fused (SDPA/flash): no s x s score matrix is kept.
  The residual stream is fp32 whenever the input embedding weight is fp32 (``weights_dtype="fp32"``, or a trained
  embedding under ``"bf16"``): autocast does not cast an embedding lookup, and fp32 + bf16 sums stay fp32, so the
  kept layer inputs and the residual sums of the recomputed layer take 4 bytes, not 2.
- Logits (``logit_bytes``): per (token, vocabulary entry), every head keeps its fp32 log-softmax for backward
  (4 bytes) and, with Gemma2's soft-capping, the bf16 tanh output (2); on top, backward's fp32 gradients of the
  log-softmax and its input (8), or for mtp the second head's forward (its bf16 logits and fp32 copy, and the first
  head's bf16 logits: 8): 12 / 16 bytes for clm / mtp, 14 / 20 with soft-capping. tests/test_gpu_fit.py measures
  these bytes on the CPU (tensors autograd keeps, and the peak of live tensors through forward and backward).
  At 128K-256K vocabularies this is the largest activation term; micro-batches (``grad_accum``) divide it, and
  ``tools/gpu_bench.py`` measures it on a GPU.
- Multi-stage procedures (2-stage, EEVE): the memory of the largest stage, the time of every stage by its share.
- Sharded over ``shards`` GPUs of a node (FSDP, workflow_scripts/lapt/shard.py): every weight fp32 and split N ways,
  as are gradients, Adam states and frozen-row snapshots; on top, the units FSDP gathers whole at a time (the root,
  embeddings and head, kept through forward and backward; the mtp head; the current and the prefetched layer) and
  their gradients before the reduce-scatter. Each process runs 1/N of the step's tokens (activations stay those of
  one micro-batch); communication time is not counted.
- Time: model FLOPs (2 per multiply-add; forward, the input gradient where a trainable parameter lies below, the
  weight gradient of trainable matrices, the recomputed forward under checkpointing) divided by an assumed
  sustained throughput: ``mfu`` (default 0.35) of the GPU's dense bf16 peak (H100 SXM 989, A100 312 TFLOP/s),
  plus AdamW's memory-bound update at the GPU's HBM bandwidth (H100 3.35, A100 2.0 TB/s).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workflow_scripts.io import setup_logging, write_text
from workflow_scripts.lapt import PROCEDURES as LAPT_PROCEDURES
from workflow_scripts.lapt.hparams import weights_dtype_on

GIB = 1024**3


@dataclass(frozen=True)
class ModelShape:
    """The shape numbers the estimate needs (from the model's config.json)."""

    layers: int
    hidden: int
    ffn: int
    vocab: int
    heads: int
    kv_heads: int
    head_dim: int
    tied: bool
    norms_per_layer: int = 2
    logit_softcap: bool = False


# Real configs (Hugging Face config.json of each model).
MODELS: dict[str, ModelShape] = {
    "llama2-7b": ModelShape(32, 4096, 11008, 32000, 32, 32, 128, tied=False),
    "llama3-8b": ModelShape(32, 4096, 14336, 128256, 32, 8, 128, tied=False),
    "gemma2-9b": ModelShape(42, 3584, 14336, 256000, 16, 8, 256, tied=True, norms_per_layer=4, logit_softcap=True),
    "smollm2-135m": ModelShape(30, 576, 1536, 49152, 9, 3, 64, tied=True),
}
# The config's model keys and sizes (config.yaml ``models.<key>.size``) name the same shapes.
ALIASES = {
    "llama2": "llama2-7b",
    "7B": "llama2-7b",
    "llama3": "llama3-8b",
    "8B": "llama3-8b",
    "gemma2": "gemma2-9b",
    "9B": "gemma2-9b",
    "smollm2": "smollm2-135m",
    "135M": "smollm2-135m",
}
GPUS: dict[str, dict[str, float]] = {
    # memory_gib: what the driver reports as total (81,559 MiB on an 80 GB card; about 139 GiB on an H200).
    "H100": {"bf16_tflops": 989.0, "hbm_tbps": 3.35, "memory_gib": 79.6},
    "A100": {"bf16_tflops": 312.0, "hbm_tbps": 2.0, "memory_gib": 79.6},
    "H200": {"bf16_tflops": 989.0, "hbm_tbps": 4.8, "memory_gib": 139.0},  # H100 compute, 141 GB HBM3e
}
PROCEDURES = tuple(LAPT_PROCEDURES)  # the training registry is the list; STAGES must describe each of them
LINEARS = ("q", "k", "v", "o", "gate", "up", "down")


def shape_from_config(config: Any) -> ModelShape:
    """A ModelShape from a transformers config (Llama, Mistral, Gemma2 and alike)."""
    c = config.get_text_config() if hasattr(config, "get_text_config") else config
    heads = c.num_attention_heads
    return ModelShape(
        layers=c.num_hidden_layers,
        hidden=c.hidden_size,
        ffn=c.intermediate_size,
        vocab=c.vocab_size,
        heads=heads,
        kv_heads=getattr(c, "num_key_value_heads", None) or heads,
        head_dim=getattr(c, "head_dim", None) or c.hidden_size // heads,
        tied=bool(getattr(c, "tie_word_embeddings", False)),
        norms_per_layer=4 if "gemma2" in str(getattr(c, "model_type", "")) else 2,
        logit_softcap=bool(getattr(c, "final_logit_softcapping", None)),
    )


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


@dataclass(frozen=True)
class StageSpec:
    """What one stage trains: transformer layers ("all", "2x2", "lora", "none"), embedding/head rows, final norm."""

    layers: str
    embedding: bool
    head: bool
    final_norm: bool = False
    new_rows_only: bool = False  # EEVE stages 1-3, 5: a frozen-row snapshot of the matrix is kept


# The stage with the largest trainable set decides memory; time sums the stages by their share of the steps.
STAGES: dict[str, tuple[StageSpec, ...]] = {
    "full": (StageSpec("all", True, True, True),),
    "LoRA": (StageSpec("lora", True, True),),
    "2-stage": (StageSpec("none", True, True), StageSpec("lora", True, True)),
    "2x2LS": (StageSpec("2x2", True, True, True),),
    "EEVE": (
        StageSpec("none", True, False, new_rows_only=True),
        StageSpec("none", False, True, new_rows_only=True),
        StageSpec("none", True, True, new_rows_only=True),
        StageSpec("none", False, True),
        StageSpec("none", True, True, new_rows_only=True),
        StageSpec("all", True, True, True),
        StageSpec("all", False, False, True),
    ),
}
# lapt's hparam eeve_layers="LoRA": stages 6-7 train the layers through LoRA (EEVE §2.3 used QLoRA there).
EEVE_LORA = (*STAGES["EEVE"][:5], StageSpec("lora", True, True), StageSpec("lora", False, False))


def logit_bytes(objective: str, softcap: bool) -> dict[str, int]:
    """Bytes per (token, vocabulary entry) of the logits at the loss's peak: ``kept`` for backward by all heads, and
    ``transient`` (the last head's bf16 logits and fp32 copy, the backward's fp32 gradients, mtp's first logits)."""
    heads = 2 if objective == "mtp" else 1
    kept = heads * (4 + (2 if softcap else 0))
    # clm: backward's two fp32 gradients (8); mtp peaks in the second head's forward: the first head's bf16 logits
    # (2), the second's bf16 logits and fp32 copy (6). Measured on the CPU in tests/test_gpu_fit.py.
    return {"kept": kept, "transient": 8}


def residual_bytes(s: StageSpec, tied: bool, weights_dtype: str) -> int:
    """Bytes per element of the residual stream: 4 when the input embedding weight is fp32, else 2 (bf16)."""
    embedding_trained = s.embedding or (tied and s.head)
    return 4 if weights_dtype == "fp32" or embedding_trained else 2


def _fp32_under_bf16(m: ModelShape, stages: list[StageSpec], objective: str) -> int:
    """Parameters held in fp32 under ``weights_dtype="bf16"`` once ``stages`` have run: lapt converts a parameter to
    fp32 when a stage first trains it and never back, so a later stage keeps the earlier stages' trained ones fp32."""
    pc = parameter_counts(m)
    n_layer = pc["layer_matrices"] + pc["layer_norms"]
    layers = max({"all": m.layers, "2x2": 4, "lora": 0, "none": 0}[st.layers] for st in stages)
    emb = any(st.embedding or (m.tied and st.head) for st in stages)
    head = any(st.head for st in stages) and not m.tied
    return (
        layers * n_layer
        + (m.layers * pc["lora_per_layer"] if any(st.layers == "lora" for st in stages) else 0)
        + (pc["embedding"] if emb else 0)
        + (pc["head"] if head else 0)
        + (pc["final_norm"] if any(st.final_norm for st in stages) else 0)
        + (pc["embedding"] if objective == "mtp" else 0)
    )


def _stage_memory_and_flops(
    m: ModelShape, s: StageSpec, objective: str, seq_len: int, micro_batch: int, weights_dtype: str, grad_ckpt: bool,
    earlier: tuple[StageSpec, ...] = (), shards: int = 1,
) -> dict[str, float]:  # fmt: skip
    pc = parameter_counts(m)
    if shards > 1:
        weights_dtype = "fp32"  # a sharded run keeps every weight fp32 (one dtype per FSDP unit)
    n_layer = pc["layer_matrices"] + pc["layer_norms"]
    n_heads_out = 2 if objective == "mtp" else 1
    head_rows = pc["embedding"]  # one LM head's size, tied or not
    mtp = head_rows if objective == "mtp" else 0
    base = m.layers * n_layer + pc["embedding"] + pc["head"] + pc["final_norm"]
    lora = m.layers * pc["lora_per_layer"] if s.layers == "lora" else 0
    trained_layers = {"all": m.layers, "2x2": 4, "lora": 0, "none": 0}[s.layers]
    # Tied: the one shared matrix is trained when either side is.
    emb_head = (pc["embedding"] if (s.embedding or (m.tied and s.head)) else 0) + (
        pc["head"] if s.head and not m.tied else 0
    )
    trainable = trained_layers * n_layer + lora + emb_head + (pc["final_norm"] if s.final_norm else 0) + mtp
    total = base + lora + mtp
    trainable_matrices = trained_layers * pc["layer_matrices"] + lora + emb_head + mtp
    if weights_dtype == "bf16":
        fp32 = _fp32_under_bf16(m, [*earlier, s], objective)
        w_bytes = 4 * fp32 + 2 * (total - fp32)
    else:
        w_bytes = 4 * total
    snapshot = 4 * pc["embedding"] if s.new_rows_only else 0
    unsharded = 0
    if shards > 1:
        root = pc["embedding"] + pc["head"] + pc["final_norm"]
        root_trained = emb_head + (pc["final_norm"] if s.final_norm else 0)
        unsharded = 4 * (2 * n_layer + root + mtp) + 4 * (min(trained_layers, 1) * n_layer + root_trained + mtp)

    tokens = micro_batch * seq_len
    h, f = m.hidden, m.ffn
    q, kv = m.heads * m.head_dim, m.kv_heads * m.head_dim
    stream = residual_bytes(s, m.tied, weights_dtype)
    # One layer's saved activations (bf16) in forward order, plus the fp32 RMSNorm inputs, plus two residual sums
    # at fp32 width when the stream is fp32.
    per_layer = tokens * (2 * (4 * h + 3 * q + 2 * kv + 4 * f) + 4 * m.norms_per_layer * h + 2 * (stream - 2) * h)
    needs_backward = s.embedding or s.layers != "none" or (m.tied and s.head)  # gradients flow through the layers
    if not needs_backward:
        acts = 0.0  # autograd keeps nothing of layers that no gradient reaches
    elif grad_ckpt:
        acts = m.layers * tokens * h * stream + 2 * per_layer  # checkpoints + one recomputed layer and its gradients
    else:
        acts = m.layers * per_layer
    lb = logit_bytes(objective, m.logit_softcap)
    logits = tokens * m.vocab * (lb["kept"] + lb["transient"])

    # FLOPs per step (2 per multiply-add), causal fused attention (half the score matrix).
    layer_fwd = 2 * pc["layer_matrices"] + 2 * seq_len * q  # QK^T and AV over s/2 keys on average
    head_fwd = 2 * h * m.vocab * n_heads_out
    fwd = tokens * (m.layers * layer_fwd + head_fwd)
    bwd_input = tokens * m.layers * layer_fwd if needs_backward else 0.0
    recompute = tokens * m.layers * layer_fwd if needs_backward and grad_ckpt else 0.0
    head_bwd = tokens * head_fwd  # input gradient of the head(s) (always, the loss starts there)
    weight_grad = 2 * tokens * (trained_layers * pc["layer_matrices"] + lora)
    weight_grad += 2 * tokens * h * m.vocab * ((1 if (s.head or (m.tied and s.embedding)) else 0) + (n_heads_out - 1))
    flops = fwd + bwd_input + recompute + head_bwd + weight_grad
    return {
        "total_parameters": total,
        "trainable_parameters": trainable,
        "weights": w_bytes / shards,
        "gradients": 4 * trainable / shards,
        "optimizer": 8 * trainable / shards,
        "autocast_cache": 2 * trainable_matrices,
        "frozen_row_snapshot": snapshot / shards,
        "fsdp_unsharded": unsharded,
        "activations_layers": acts,
        "logits": logits,
        "flops": flops,
        "optimizer_bytes_moved": 28 * trainable / shards,  # AdamW reads p, g, m, v and writes p, m, v (fp32)
    }


MEMORY_TERMS = (
    "weights",
    "gradients",
    "optimizer",
    "autocast_cache",
    "frozen_row_snapshot",
    "fsdp_unsharded",
    "activations_layers",
    "logits",
)


def estimate(
    model_size: str | ModelShape,
    procedure: str,
    seq_len: int,
    batch_size: int = 8,
    *,
    objective: str = "clm",
    weights_dtype: str = "fp32",
    gradient_checkpointing: bool = True,
    grad_accum: int = 1,
    gpu: str = "H100",
    mfu: float = 0.35,
    corpus_tokens: int = 5_000_000,
    epochs: float = 2.0,
    stage_split: list[float] | None = None,
    overhead_gib: float = 3.0,
    startup_minutes: float = 10.0,
    eeve_layers: str = "full",
    memory_gib: float | None = None,
    headroom: float = 0.9,
    shards: int = 1,
) -> dict[str, Any]:
    """Peak GPU memory (GiB, by term, per GPU) and time of one LAPT run; ``batch_size`` is the micro-batch, as in lapt.

    ``model_size`` names one of MODELS or is a ModelShape. ``corpus_tokens`` (D tokenized with T_t; 30K sentences are
    some millions of tokens) sets the number of steps: ceil(blocks / (batch_size * grad_accum)) * epochs.
    ``memory_gib`` replaces the GPU's memory (a device's reported total); ``fits`` means the peak is within
    ``headroom`` of it (the rest: allocator fragmentation the terms do not model). ``shards``: GPUs of one node the
    run is sharded over (FSDP); memory is per GPU, ``train_hours`` wall time, ``gpu_hours`` both counted.
    """
    if isinstance(model_size, str):
        key = ALIASES.get(model_size, model_size)
        if key not in MODELS:
            raise ValueError(f"unknown model {model_size!r}; known: {sorted(MODELS) + sorted(ALIASES)} or a ModelShape")
        m = MODELS[key]
    else:
        key, m = "custom", model_size
    if procedure not in STAGES:
        raise ValueError(f"unknown procedure {procedure!r}; expected one of {PROCEDURES}")
    if weights_dtype not in ("fp32", "bf16"):
        raise ValueError(f"weights_dtype must be fp32 or bf16, got {weights_dtype!r}")
    g = GPUS[gpu]
    stages = EEVE_LORA if procedure == "EEVE" and eeve_layers == "LoRA" else STAGES[procedure]
    split = [1.0] * len(stages) if stage_split is None else list(stage_split)
    per_stage = [
        _stage_memory_and_flops(
            m, s, objective, seq_len, batch_size, weights_dtype, gradient_checkpointing, stages[:i], shards
        )
        for i, s in enumerate(stages)
    ]
    peaks = [sum(st[k] for k in MEMORY_TERMS) for st in per_stage]
    worst = per_stage[max(range(len(stages)), key=peaks.__getitem__)]
    memory = {k: worst[k] / GIB for k in MEMORY_TERMS}
    memory["cuda_overhead"] = overhead_gib  # CUDA context, allocator fragmentation, temporary buffers
    total_gib = sum(memory.values())

    blocks = corpus_tokens // seq_len
    # sharded: batch_size x grad_accum blocks per process, N processes per step
    steps = max(1, math.ceil(math.ceil(blocks / (batch_size * shards)) / grad_accum * epochs))
    step_seconds, per_stage_seconds = 0.0, []
    for st, share in zip(per_stage, split, strict=True):
        t = grad_accum * st["flops"] / (g["bf16_tflops"] * 1e12 * mfu) + st["optimizer_bytes_moved"] / (
            g["hbm_tbps"] * 1e12
        )
        per_stage_seconds.append(float(f"{t:.4g}"))
        step_seconds += t * share / sum(split)
    tokens_per_step = batch_size * grad_accum * seq_len * shards
    train_seconds = steps * step_seconds
    return {
        "model": key,
        "procedure": procedure,
        "objective": objective,
        "seq_len": seq_len,
        "micro_batch": batch_size,
        "grad_accum": grad_accum,
        "weights_dtype": weights_dtype,
        "gradient_checkpointing": gradient_checkpointing,
        "total_parameters": worst["total_parameters"],
        "trainable_parameters": worst["trainable_parameters"],
        "memory_gib": {k: round(v, 2) for k, v in memory.items()},
        "per_stage": [
            {k: st[k] for k in ("trainable_parameters", "total_parameters", *MEMORY_TERMS)} for st in per_stage
        ],
        "peak_gib": round(total_gib, 1),
        "fits": total_gib <= headroom * (memory_gib or g["memory_gib"]),
        "gpu_memory_gib": memory_gib or g["memory_gib"],
        "gpu": gpu,
        "assumption": f"{mfu:.0%} of {g['bf16_tflops']:.0f} TFLOP/s bf16 dense; AdamW at {g['hbm_tbps']} TB/s",
        "step_seconds": float(f"{step_seconds:.4g}"),
        "per_stage_step_seconds": per_stage_seconds,
        "mfu": mfu,
        "tokens_per_second": round(tokens_per_step / step_seconds, 1),
        "steps": steps,
        "train_hours": round(train_seconds / 3600, 2),
        "gpus": shards,
        "gpu_hours": round(shards * train_seconds / 3600, 2),
        # For a scheduler: GPU memory and host RAM (Slurm --mem) rounded up to whole GiB, runtime with start-up and
        # a 50% margin. Host RAM: lapt loads the whole model on the CPU before moving it, and a checkpoint copies the
        # trained parameters and Adam states to the CPU while saving; plus 8 GiB for Python, tokenizer and data.
        "gpu_mem_mb": int(math.ceil(total_gib) * 1024),
        "mem_mb": int(math.ceil((worst["weights"] + 3 * worst["gradients"]) / GIB + 8) * 1024),
        "runtime_minutes": math.ceil(startup_minutes + 1.5 * train_seconds / 60),
    }


def fitting_micro_batch(model_size: str | ModelShape, procedure: str, seq_len: int, batch: int = 8, **kw) -> dict:
    """The estimate at the largest micro-batch dividing ``batch`` that fits (grad_accum makes up the rest)."""
    options = [b for b in range(batch, 0, -1) if batch % b == 0]
    for b in options:
        est = estimate(model_size, procedure, seq_len, b, grad_accum=batch // b, **kw)
        if est["fits"]:
            return est
    return est  # micro-batch 1 does not fit either: returned with fits=False


# The config's size classes (config.yaml ``models.<key>.size``) that need a GPU, by the shape that stands for them.
SIZE_SHAPES = {"7B": "llama2-7b", "8B": "llama3-8b", "9B": "gemma2-9b"}


def planned(
    shape: str | ModelShape, procedure: str, objective: str, seq_len: int, hp: dict[str, Any], gpu: str, **kw
) -> dict[str, Any]:
    """The estimate a LAPT job runs with on ``gpu``, from its resolved hparams (workflow_scripts.lapt.resolve_hparams):
    micro-batch ``micro_batch`` (null: batch_size; "auto": the largest divisor of the step's blocks that fits, as
    lapt picks it on the device) with the accumulation that makes up batch_size x grad_accum blocks a step. Sharded
    over ``shards`` processes, each takes 1/N of the step's blocks (workflow_scripts.lapt.shard.micro_share)."""
    effective = math.ceil(int(hp["batch_size"]) * int(hp["grad_accum"]) / kw.get("shards", 1))
    weights_dtype = weights_dtype_on(hp["weights_dtype"], "cuda")
    common = dict(objective=objective, weights_dtype=weights_dtype, gpu=gpu, eeve_layers=hp["eeve_layers"],
                  gradient_checkpointing=hp["gradient_checkpointing"] is not False, epochs=float(hp["epochs"]),
                  stage_split=hp["stage_split"], **kw)  # fmt: skip
    if hp["micro_batch"] == "auto":
        return fitting_micro_batch(shape, procedure, seq_len, effective, **common)
    micro = min(int(hp["batch_size"] if hp["micro_batch"] is None else hp["micro_batch"]), effective)
    return estimate(shape, procedure, seq_len, micro, grad_accum=math.ceil(effective / micro), **common)


# GPUs of one node a LAPT job may be sharded over (FSDP), fewest first.
SHARD_COUNTS = (1, 2, 4, 8)


def planned_gpus(
    shape: str | ModelShape, procedure: str, objective: str, seq_len: int, hp: dict[str, Any], gpu: str,
    max_gpus: int = 1, **kw,
) -> dict[str, Any]:  # fmt: skip
    """``planned`` on the fewest GPUs of one node (SHARD_COUNTS, at most ``max_gpus``) on which the job fits: one
    process, else FSDP over N. Only jobs that one GPU cannot hold at any micro-batch are sharded (a micro-batch
    setting that is merely too large is the config's to change); procedures that add LoRA between stages run as one
    process (they fit one GPU)."""
    from workflow_scripts.lapt.procedures import adds_lora

    one = planned(shape, procedure, objective, seq_len, hp, gpu, **kw)
    if one["fits"] or adds_lora(procedure, hp):
        return one
    if planned(shape, procedure, objective, seq_len, {**hp, "micro_batch": "auto"}, gpu, **kw)["fits"]:
        return one
    est = one
    for n in [n for n in SHARD_COUNTS if 1 < n <= max_gpus]:
        est = planned(shape, procedure, objective, seq_len, hp, gpu, shards=n, **kw)
        if est["fits"]:
            return est
    return est  # does not fit even on the most GPUs allowed: returned with fits=False


def fit_problem(
    shape: str | ModelShape, procedure: str, objective: str, seq_len: int, hp: dict[str, Any], gpu: str,
    keys: dict[str, str], what: str, max_gpus: int = 1,
) -> str | None:  # fmt: skip
    """None when the job fits ``gpu`` by ``planned_gpus`` on at most ``max_gpus`` GPUs of a node; else a message
    naming the config key to change (``keys`` maps an hparam to the config key it comes from) and what it takes."""
    est = planned_gpus(shape, procedure, objective, seq_len, hp, gpu, max_gpus)
    if est["fits"]:
        return None
    on = f" on {est['gpus']} GPUs" if est["gpus"] > 1 else ""
    need = f"{what} needs {est['peak_gib']:.0f} GiB at micro-batch {est['micro_batch']}{on} by tools.gpu_estimate"
    memory = est["gpu_memory_gib"]
    have = f"a GPU of the {gpu} class ({memory:.0f} GiB, {0.9 * memory:.0f} usable) cannot hold it"
    # The key whose change makes it fit, tried in the order of least change to the method.
    tries = []
    if hp["micro_batch"] != "auto":
        tries.append(("micro_batch", "auto"))
    if procedure == "EEVE" and hp["eeve_layers"] == "full":
        tries.append(("eeve_layers", "LoRA"))
    if weights_dtype_on(hp["weights_dtype"], "cuda") == "fp32":
        tries.append(("weights_dtype", "bf16"))
    changed = dict(hp)
    for key, value in tries:
        changed[key] = value
        alt = planned_gpus(shape, procedure, objective, seq_len, changed, gpu, max_gpus)
        if alt["fits"]:
            more = planned_gpus(shape, procedure, objective, seq_len, hp, gpu, SHARD_COUNTS[-1])
            return (
                f"{keys[key]}: {json.dumps(hp[key])} does not fit: {need}; {have}. Set {key}: {value} "
                f"({alt['peak_gib']:.0f} GiB at micro-batch {alt['micro_batch']})"
                + (", or ask for an H200 (set-resources lapt: {gpu_model: h200})" if gpu != "H200" else "")
                + (
                    f", or allow {more['gpus']} GPUs of a node (set-resources lapt: {{node_gpus: {more['gpus']}}})"
                    if more["fits"] and more["gpus"] > max_gpus
                    else ""
                )
            )
    if max_gpus < SHARD_COUNTS[-1]:
        more = planned_gpus(shape, procedure, objective, seq_len, hp, gpu, SHARD_COUNTS[-1])
        if more["fits"]:
            return (
                f"{what}: {need}; {have}: it fits when sharded over {more['gpus']} GPUs of a node "
                f"(set-resources lapt: {{node_gpus: {more['gpus']}}} where the nodes have them)"
            )
    for gpu_larger in ("H200",):
        if (
            gpu_larger != gpu
            and planned_gpus(shape, procedure, objective, seq_len, changed, gpu_larger, max_gpus)["fits"]
        ):
            return f"{what}: {need}; {have}: ask for a larger GPU (set-resources lapt: {{gpu_model: h200}})"
    return (
        f"{keys.get('procedure', 'procedure')}: {need}; {have}, even with "
        f"{', '.join(f'{k}: {v}' for k, v in tries) or 'these settings'}: choose a procedure that trains less or a "
        "shorter seq_len"
    )


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """The estimates as a Markdown table (one row per model, procedure, objective, sequence length, weights dtype)."""
    head = (
        "| model | procedure | seq | weights | trainable | weights GiB | grads+Adam GiB | activ. GiB | logits GiB "
        "| peak GiB (batch 8) | fits 80 GB | micro-batch that fits | s/step | hours (5M tokens, 2 ep.) |"
    )
    lines = [head, "|" + "---|" * 14]
    for r in rows:
        full, fit = r["batch8"], r["fit"]
        mem = full["memory_gib"]
        fit_text = f"{fit['micro_batch']} ({fit['peak_gib']:.0f} GiB)" if fit["fits"] else "none"
        lines.append(
            f"| {r['model']} | {r['procedure']}{'+mtp' if full['objective'] == 'mtp' else ''} | {full['seq_len']} "
            f"| {full['weights_dtype']} | {full['trainable_parameters'] / 1e9:.2f}B | {mem['weights']:.1f} "
            f"| {mem['gradients'] + mem['optimizer']:.1f} | {mem['activations_layers']:.1f} | {mem['logits']:.1f} "
            f"| {full['peak_gib']:.0f} | {'yes' if full['fits'] else 'no'} "
            f"| {fit_text} "
            f"| {fit['step_seconds']:.2f} | {fit['train_hours']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def grid(
    models: list[str], procedures: list[str], seq_lens: list[int], weights_dtypes: list[str], **kw
) -> list[dict[str, Any]]:
    """Estimates for every combination, at micro-batch 8 and at the largest micro-batch that fits."""
    rows = []
    for model in models:
        for name in procedures:
            # "EEVE+LoRA" is EEVE with lapt's hparam eeve_layers="LoRA".
            proc, extra = ("EEVE", {"eeve_layers": "LoRA"}) if name == "EEVE+LoRA" else (name, {})
            for wd in weights_dtypes:
                for s in seq_lens:
                    rows.append(
                        {
                            "model": model,
                            "procedure": name,
                            "batch8": estimate(model, proc, s, 8, weights_dtype=wd, **extra, **kw),
                            "fit": fitting_micro_batch(model, proc, s, 8, weights_dtype=wd, **extra, **kw),
                        }
                    )
    return rows


def _fill_schema_defaults(config: dict) -> None:
    """The config schema's defaults, as Snakemake fills them; skipped where snakemake is not installed (a lent GPU
    machine), since the grid's own defaults (workflow_scripts.grid) cover what the LAPT jobs need."""
    try:
        from snakemake.utils import validate
    except ImportError:
        return
    validate(config, schema=str(Path(__file__).resolve().parents[1] / "schemas" / "config.schema.yaml"),
             set_default=True)  # fmt: skip


def plan_table(configfile: str, corpus_tokens: int = 5_000_000, node_gpus: int | None = None) -> str:
    """The LAPT job kinds of a config's grid as the workflow plans them on each GPU class (workflow_scripts.resources
    GPU_CLASSES) with at most ``node_gpus`` GPUs a job: GPUs, micro-batch, estimated peak per GPU, step time and
    GPU-hours (training hours x GPUs), and the time limit the job asks for."""
    import yaml

    from workflow_scripts.gpu_fit import lapt_jobs
    from workflow_scripts.resources import DEFAULT_NODE_GPUS, GPU_CLASSES, sized_resources

    config = yaml.safe_load(open(configfile, encoding="utf-8"))
    _fill_schema_defaults(config)
    kinds: dict[tuple, tuple] = {}
    for model, m, shape, hp, _ in lapt_jobs(config):
        key = (model, m.procedure, m.objective, m.seq_len, hp["eeve_layers"] if m.procedure == "EEVE" else "")
        kinds.setdefault(key, (model, m, shape, hp, []))[4].append(m.slug)
    head = ["model", "procedure", "objective", "seq", "methods"]
    for cls in GPU_CLASSES:
        head += [f"{cls} GPUs", f"{cls} micro-batch", f"{cls} peak GiB", f"{cls} s/step", f"{cls} GPU-hours"]
    lines = ["| " + " | ".join([*head, "time limit (min)"]) + " |", "|" + "---|" * (len(head) + 1)]
    for (model, proc, obj, seq, eeve), (_, _, shape, hp, slugs) in kinds.items():
        row = [model, proc + (f" ({eeve} layers)" if eeve else ""), obj, str(seq), str(len(slugs))]
        for gpu in GPU_CLASSES.values():
            est = planned_gpus(
                shape, proc, obj, seq, hp, gpu, node_gpus or DEFAULT_NODE_GPUS, corpus_tokens=corpus_tokens
            )
            fit = "" if est["fits"] else " (does not fit)"
            row += [str(est["gpus"]), f"{est['micro_batch']} x {est['grad_accum']}", f"{est['peak_gib']:.0f}{fit}",
                    f"{est['step_seconds']:.2f}", f"{est['gpu_hours']:.2f}"]  # fmt: skip
        row.append(str(sized_resources("lapt", config["models"][model]["size"])["runtime"]))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        prog="python -m tools.gpu_estimate", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--models", nargs="+", default=["llama2-7b", "llama3-8b", "gemma2-9b"], choices=list(MODELS))
    p.add_argument("--procedures", nargs="+", default=[*PROCEDURES, "EEVE+LoRA"], choices=[*PROCEDURES, "EEVE+LoRA"])
    p.add_argument("--seq-lens", nargs="+", type=int, default=[512, 2048])
    p.add_argument("--weights-dtypes", nargs="+", default=["fp32", "bf16"], choices=["fp32", "bf16"])
    p.add_argument("--objective", default="clm", choices=["clm", "mtp"])
    p.add_argument("--gpu", default="H100", choices=list(GPUS))
    p.add_argument("--mfu", type=float, default=0.35, help="assumed share of the GPU's bf16 dense peak")
    p.add_argument("--corpus-tokens", type=int, default=5_000_000, help="tokens of D under T_t (sets the steps)")
    p.add_argument(
        "--plan", metavar="CONFIG", help="print the LAPT job kinds of CONFIG's grid as planned per GPU class"
    )
    p.add_argument("--node-gpus", type=int, help="with --plan: GPUs a LAPT job may shard over (the workflow's default)")
    p.add_argument("--markdown", help="output Markdown table")
    p.add_argument("--json", help="output JSON with every estimate")
    p.add_argument("--log")
    a = p.parse_args(argv)
    setup_logging(a.log)
    if a.plan:
        sys.stdout.write(plan_table(a.plan, a.corpus_tokens, a.node_gpus))
        return
    kw = {"objective": a.objective, "gpu": a.gpu, "mfu": a.mfu, "corpus_tokens": a.corpus_tokens}
    rows = grid(a.models, a.procedures, a.seq_lens, a.weights_dtypes, **kw)
    table = markdown_table(rows)
    if a.markdown:
        write_text(a.markdown, table)
    if a.json:
        write_text(a.json, json.dumps(rows, indent=1) + "\n")
    if not a.markdown and not a.json:
        sys.stdout.write(table)


if __name__ == "__main__":
    sys.exit(main())
