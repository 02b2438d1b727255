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
- Stages (``StageSpec``, workflow_scripts/procedure_stages.py): multi-stage procedures (2-stage, EEVE) take the
  memory of the largest stage, the time of every stage by its share.
- Sharded over ``shards`` GPUs of a node (FSDP, workflow_scripts/lapt/shard.py): every weight fp32 and split N ways,
  as are gradients, Adam states and frozen-row snapshots; on top, the units FSDP gathers whole at a time (the root,
  embeddings and head, kept through forward and backward; the mtp head; the current and the prefetched layer) and
  their gradients before the reduce-scatter. Each process runs 1/N of the step's tokens (activations stay those of
  one micro-batch); communication time is not counted.
- Time: model FLOPs (2 per multiply-add; forward, the input gradient where a trainable parameter lies below, the
  weight gradient of trainable matrices, the recomputed forward under checkpointing) divided by an assumed
  sustained throughput: ``mfu`` (default 0.35) of the GPU's dense bf16 peak (H100 SXM 989, A100 312 TFLOP/s; ``GPUS``),
  plus AdamW's memory-bound update at the GPU's memory bandwidth (H100 3.35, A100 2.0 TB/s).
"""

from __future__ import annotations

import math
from typing import Any

from workflow_scripts.gpu.shape import GIB, ModelShape, named_shape, parameter_counts
from workflow_scripts.procedure_stages import StageSpec, stages_of

# Dense bf16 tensor peak (TFLOP/s, without sparsity: half the datasheets' "with sparsity" figure) and memory bandwidth
# (TB/s) from NVIDIA's public datasheets: A100 (40GB and 80GB SXM4), H100 SXM and H100 NVL, H200 SXM, L40S, RTX A6000.
# memory_gib: what the driver reports as total (81,559 MiB on an 80 GB card, 40,960 on an A100-40GB, 46,068 on an L40S,
# 49,140 on an RTX A6000, 95,830 on an H100 NVL, about 139 GiB on an H200). The keys, lower-cased, are GPU model names
# workflow_scripts.plan.resources.gpu_model_class knows.
GPUS: dict[str, dict[str, float]] = {
    "A100-40GB": {"bf16_tflops": 312.0, "hbm_tbps": 1.555, "memory_gib": 40.0},
    "L40S": {"bf16_tflops": 362.0, "hbm_tbps": 0.864, "memory_gib": 45.0},
    "A6000": {"bf16_tflops": 154.8, "hbm_tbps": 0.768, "memory_gib": 48.0},
    "A100": {"bf16_tflops": 312.0, "hbm_tbps": 2.0, "memory_gib": 79.6},
    "H100": {"bf16_tflops": 989.0, "hbm_tbps": 3.35, "memory_gib": 79.6},
    "H100-NVL": {"bf16_tflops": 835.0, "hbm_tbps": 3.9, "memory_gib": 93.6},
    "H200": {"bf16_tflops": 989.0, "hbm_tbps": 4.8, "memory_gib": 139.0},  # H100 compute, 141 GB HBM3e
}
# The GPU memory classes a job is planned for, each by the GPU whose memory and speed stand for it
# (workflow_scripts.plan.resources names a profile's GPU model's class).
CLASSES = {"40GB": "A100-40GB", "48GB": "L40S", "80GB": "H100", "94GB": "H100-NVL", "141GB": "H200"}


def weights_dtype_on_gpu(configured: str) -> str:
    """The weights dtype (fp32 or bf16) a LAPT run of ``weights_dtype: configured`` keeps on a GPU: ``auto`` is fp32
    there (workflow_scripts.lapt.hparams.weights_dtype_on)."""
    return "fp32" if configured == "auto" else configured


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


def _activation_bytes(m: ModelShape, s: StageSpec, tokens: int, weights_dtype: str, grad_ckpt: bool) -> float:
    """The layers' saved activations of a stage that back-propagates through them: one layer's (bf16) in forward
    order, plus the fp32 RMSNorm inputs, plus two residual sums at fp32 width when the stream is fp32; every layer's,
    or with gradient checkpointing the layer inputs and one recomputed layer with its gradients."""
    h, f = m.hidden, m.ffn
    q, kv = m.heads * m.head_dim, m.kv_heads * m.head_dim
    stream = residual_bytes(s, m.tied, weights_dtype)
    per_layer = tokens * (2 * (4 * h + 3 * q + 2 * kv + 4 * f) + 4 * m.norms_per_layer * h + 2 * (stream - 2) * h)
    if grad_ckpt:
        return m.layers * tokens * h * stream + 2 * per_layer
    return m.layers * per_layer


def _stage_memory_and_flops(
    m: ModelShape,
    s: StageSpec,
    objective: str,
    seq_len: int,
    micro_batch: int,
    weights_dtype: str,
    grad_ckpt: bool,
    earlier: tuple[StageSpec, ...] = (),
    shards: int = 1,
) -> dict[str, float]:
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

    tokens, h, q = micro_batch * seq_len, m.hidden, m.heads * m.head_dim
    needs_backward = s.embedding or s.layers != "none" or (m.tied and s.head)  # gradients flow through the layers
    acts = _activation_bytes(m, s, tokens, weights_dtype, grad_ckpt) if needs_backward else 0.0
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

    ``model_size`` names one of MODELS (or a paper config key, ALIASES) or is a ModelShape (any config.json:
    workflow_scripts.plan.models). ``corpus_tokens`` (D tokenized with T_t; 30K sentences are
    some millions of tokens) sets the number of steps: ceil(blocks / (batch_size * grad_accum)) * epochs.
    ``memory_gib`` replaces the GPU's memory (a device's reported total); ``fits`` means the peak is within
    ``headroom`` of it (the rest: allocator fragmentation the terms do not model). ``shards``: GPUs of one node the
    run is sharded over (FSDP); memory is per GPU, ``train_hours`` wall time, ``gpu_hours`` both counted.
    """
    key, m = named_shape(model_size)
    stages = stages_of(procedure, eeve_layers)
    if weights_dtype not in ("fp32", "bf16"):
        raise ValueError(f"weights_dtype must be fp32 or bf16, got {weights_dtype!r}")
    g = GPUS[gpu]
    per_stage = [
        _stage_memory_and_flops(
            m, s, objective, seq_len, batch_size, weights_dtype, gradient_checkpointing, stages[:i], shards
        )
        for i, s in enumerate(stages)
    ]
    worst, memory = _peak_memory(per_stage, overhead_gib)
    total_gib = sum(memory.values())
    # blocks of the corpus; sharded: batch_size x grad_accum blocks per process, N processes per step
    steps = max(1, math.ceil(math.ceil(corpus_tokens // seq_len / (batch_size * shards)) / grad_accum * epochs))
    split = [1.0] * len(stages) if stage_split is None else list(stage_split)
    step_seconds, per_stage_seconds = _step_seconds(per_stage, split, grad_accum, g, mfu)
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
        **_scheduler_request(total_gib, worst, train_seconds, startup_minutes),
    }


def _peak_memory(per_stage: list[dict[str, float]], overhead_gib: float) -> tuple[dict[str, float], dict[str, float]]:
    """The stage of the largest memory peak, and its memory terms in GiB with ``cuda_overhead`` (the CUDA context,
    allocator fragmentation, temporary buffers)."""
    peaks = [sum(st[k] for k in MEMORY_TERMS) for st in per_stage]
    worst = per_stage[max(range(len(per_stage)), key=peaks.__getitem__)]
    memory = {k: worst[k] / GIB for k in MEMORY_TERMS}
    memory["cuda_overhead"] = overhead_gib
    return worst, memory


def _step_seconds(
    per_stage: list[dict[str, float]], split: list[float], grad_accum: int, g: dict[str, float], mfu: float
) -> tuple[float, list[float]]:
    """Seconds of one optimizer step: each stage's FLOPs at ``mfu`` of the GPU's peak plus AdamW's memory-bound
    update, averaged over the stages by their share ``split`` of the steps; and each stage's (4 digits)."""
    step_seconds, per_stage_seconds = 0.0, []
    for st, share in zip(per_stage, split, strict=True):
        t = grad_accum * st["flops"] / (g["bf16_tflops"] * 1e12 * mfu) + st["optimizer_bytes_moved"] / (
            g["hbm_tbps"] * 1e12
        )
        per_stage_seconds.append(float(f"{t:.4g}"))
        step_seconds += t * share / sum(split)
    return step_seconds, per_stage_seconds


def _scheduler_request(
    total_gib: float, worst: dict[str, float], train_seconds: float, startup_minutes: float
) -> dict[str, int]:
    """For a scheduler: GPU memory and host RAM (Slurm --mem) rounded up to whole GiB, runtime with start-up and a
    50% margin. Host RAM: lapt loads the whole model on the CPU before moving it, and a checkpoint copies the trained
    parameters and Adam states to the CPU while saving; plus 8 GiB for Python, tokenizer and data."""
    return {
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
