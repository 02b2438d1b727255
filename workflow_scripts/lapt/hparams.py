"""LAPT hyperparameters (paper 002 §6.6, Table 13) and the step schedule they imply: steps per epoch, stage ends."""

from __future__ import annotations

import math
from typing import Any

# Paper 002 §6.6 and Table 13 (LAPT). Warmup: Table 13's 100 steps per stage (the reference code used 5% of the steps);
# warmup_ratio is the alternative, used when warmup_steps is null or when a config sets warmup_ratio without
# warmup_steps (``resolve_hparams``). Adam β1/β2/ε, weight decay, dropout and attention dropout are Table 13's values.
DEFAULT_HPARAMS: dict[str, Any] = {
    "epochs": 2,
    "batch_size": 8,
    "lr": 1e-4,
    "scheduler": "cosine",
    "warmup_ratio": 0.05,
    "warmup_steps": 100,
    "weight_decay": 0.01,
    "adam_beta1": 0.9,
    "adam_beta2": 0.999,
    "adam_eps": 1e-8,
    "max_grad_norm": 1.0,  # our choice (HF Trainer's default); Table 13 does not list clipping
    # Table 13 "Dropout 0.05" and "Attention dropout 0.0", set on the model config's fields of those kinds where the
    # architecture has them (``dropout_overrides``). Llama and Gemma-2 in transformers have only attention_dropout,
    # so "Dropout 0.05" changes nothing there; GPT-2-style models get it on resid/embd dropout.
    "dropout": 0.05,
    "attention_dropout": 0.0,
    "seed": 42,
    "max_steps": None,
    "grad_accum": 1,
    # Blocks per forward/backward: null = batch_size (grad_accum micro-batches a step); an integer dividing
    # batch_size * grad_accum re-splits each optimizer step (the same step: every micro-batch's loss is normalized by
    # the whole step's token counts); "auto" = the largest divisor that workflow_scripts.gpu says fits the GPU the job
    # got (batch_size on the CPU).
    "micro_batch": None,
    "checkpoint_every": 50,
    # Also checkpoint once this much wall time has passed since the last checkpoint (null: by steps only; null
    # checkpoint_every: by time only). A 7B
    # checkpoint copies ~32 GB of trainable weights and Adam states: time, not steps, bounds what a kill loses.
    "checkpoint_minutes": 30,
    "log_every": 10,
    "lora_r": 8,
    "lora_alpha": 32,
    "lora_dropout": 0.05,
    "gradient_checkpointing": None,  # null: on with CUDA, off on CPU
    # Multi-stage procedures (2-stage, EEVE): fractions of the total steps per stage; null = equal shares.
    "stage_split": None,
    # fp32: every weight fp32 (bf16 autocast on CUDA). bf16: frozen weights bf16, trainable ones and Adam states fp32.
    # auto: bf16 on a CPU with native bf16 kernels, fp32 elsewhere (``weights_dtype_on``).
    "weights_dtype": "fp32",
    # EEVE stages 6-7 train the transformer layers fully ("full") or through rank-lora_r LoRA ("LoRA", as EEVE §2.3).
    "eeve_layers": "full",
}
# Changing these does not change the result, so a checkpoint written under other values may still be resumed.
RESUME_NEUTRAL = ("checkpoint_every", "checkpoint_minutes", "log_every", "gradient_checkpointing", "micro_batch")


WEIGHTS_DTYPES = ("fp32", "bf16", "auto")


def cpu_has_native_bf16() -> bool:
    """Whether this CPU multiplies bf16 matrices in hardware (AVX512-BF16 or AMX) and torch's oneDNN uses it.

    Where it does not (AVX2 only), torch emulates bf16: a LAPT step of SmolLM2-135M ran about 20x slower in bf16 than
    in fp32 with oneDNN held to AVX2 (docs/measurements.md); where it does, about 2.4x faster.
    """
    import torch

    try:
        native = torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
        return bool(native and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a torch build without these probes: assume emulation
        return False


def weights_dtype_on(configured: str, device_type: str) -> str:
    """The weights dtype (fp32 or bf16) a run of ``weights_dtype: configured`` uses on a device of ``device_type``.

    ``auto`` is bf16 on a CPU with native bf16 kernels (``cpu_has_native_bf16``) and fp32 elsewhere: on other CPUs
    bf16 is emulated and slow, and on a GPU fp32 weights already compute in bf16 autocast.
    """
    if configured != "auto":
        return configured
    return "bf16" if device_type == "cpu" and cpu_has_native_bf16() else "fp32"


def resolve_hparams(overrides: dict[str, Any] | None) -> dict[str, Any]:
    """The paper's defaults updated with ``overrides``; unknown keys are an error naming the allowed ones."""
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(DEFAULT_HPARAMS))
    if unknown:
        raise ValueError(f"unknown LAPT hparams {unknown}; allowed keys: {sorted(DEFAULT_HPARAMS)}")
    hp = {**DEFAULT_HPARAMS, **overrides}
    if "warmup_ratio" in overrides and "warmup_steps" not in overrides:
        hp["warmup_steps"] = None  # a config that asks for a ratio gets the ratio, not Table 13's fixed steps
    if hp["scheduler"] != "cosine":
        raise ValueError(f"hparams.scheduler={hp['scheduler']!r}: only 'cosine' (paper 002 Table 13) is implemented")
    if float(hp["epochs"]) <= 0:
        raise ValueError(f"hparams.epochs must be > 0, got {hp['epochs']!r}")
    for key in ("batch_size", "grad_accum", "checkpoint_every", "log_every"):
        if (hp[key] is not None or key != "checkpoint_every") and int(hp[key]) < 1:
            raise ValueError(f"hparams.{key} must be >= 1, got {hp[key]!r}")
    micro = hp["micro_batch"]
    if micro is not None and micro != "auto":
        effective = int(hp["batch_size"]) * int(hp["grad_accum"])
        if isinstance(micro, bool) or not isinstance(micro, int) or micro < 1 or effective % micro:
            raise ValueError(
                f"hparams.micro_batch must be null, 'auto' or a divisor of batch_size x grad_accum = {effective}, "
                f"got {micro!r}"
            )
    if hp["checkpoint_minutes"] is not None and float(hp["checkpoint_minutes"]) <= 0:
        raise ValueError(f"hparams.checkpoint_minutes must be null or > 0, got {hp['checkpoint_minutes']!r}")
    if hp["weights_dtype"] not in WEIGHTS_DTYPES:
        raise ValueError(f"hparams.weights_dtype must be one of {WEIGHTS_DTYPES}, got {hp['weights_dtype']!r}")
    if hp["eeve_layers"] not in ("full", "LoRA"):
        raise ValueError(f"hparams.eeve_layers must be 'full' or 'LoRA', got {hp['eeve_layers']!r}")
    if hp["stage_split"] is not None and (
        not isinstance(hp["stage_split"], list | tuple) or not all(float(f) > 0 for f in hp["stage_split"])
    ):
        raise ValueError(f"hparams.stage_split must be null or a list of positive numbers, got {hp['stage_split']!r}")
    if hp["max_steps"] is not None and int(hp["max_steps"]) < 1:
        raise ValueError(f"hparams.max_steps must be null or >= 1, got {hp['max_steps']!r}")
    return hp


def schedule_lengths(n_blocks: int, hp: dict[str, Any]) -> dict[str, int]:
    """Micro-batches and optimizer steps per epoch, total steps (capped by max_steps) and warmup steps."""
    micro = math.ceil(n_blocks / int(hp["batch_size"]))
    per_epoch = math.ceil(micro / int(hp["grad_accum"]))
    total = max(1, math.ceil(per_epoch * float(hp["epochs"])))  # fractional epochs end mid-epoch
    if hp["max_steps"] is not None:
        total = min(total, int(hp["max_steps"]))
    warmup = stage_warmup(hp, total)
    return {"micro_per_epoch": micro, "steps_per_epoch": per_epoch, "total_steps": total, "warmup_steps": warmup}


def stage_ends(total_steps: int, n_stages: int, split: list[float] | None) -> list[int]:
    """The global step at which each stage ends: ``total_steps`` split by the fractions ``split`` (null: equally).

    Every stage gets at least one step; raises ValueError when there are fewer steps than stages.
    """
    fractions = [1.0] * n_stages if split is None else [float(f) for f in split]
    if len(fractions) != n_stages or any(f <= 0 for f in fractions):
        raise ValueError(f"hparams.stage_split must be null or {n_stages} positive numbers, got {split!r}")
    if total_steps < n_stages:
        raise ValueError(
            f"{total_steps} optimizer steps cannot be split into {n_stages} stages; raise max_steps/epochs"
        )
    ends, acc, total_f = [], 0.0, sum(fractions)
    for i, f in enumerate(fractions):
        acc += f
        end = round(total_steps * acc / total_f)
        low = (ends[-1] if ends else 0) + 1
        ends.append(min(max(end, low), total_steps - (n_stages - 1 - i)))
    return ends


def stage_at(ends: list[int], step: int) -> int:
    """The index of the stage that optimizer step ``step + 1`` belongs to (``step`` steps are done)."""
    return next(i for i, e in enumerate(ends) if step < e)


def stage_warmup(hp: dict[str, Any], n_steps: int) -> int:
    """Warmup steps of a stage of ``n_steps`` steps: ``warmup_steps`` if set, else ``warmup_ratio`` of the stage."""
    return int(hp["warmup_steps"]) if hp["warmup_steps"] is not None else math.ceil(hp["warmup_ratio"] * n_steps)


def warmup_note(warmup: int, n_steps: int) -> str | None:
    """A note for train_stats.json when a stage has no more steps than its warmup: the learning rate then rises
    linearly for the whole stage and never reaches its maximum (Table 13's 100 steps on a short run)."""
    if warmup < n_steps:
        return None
    return (
        f"warmup {warmup} steps >= the stage's {n_steps} steps: the learning rate rises linearly throughout and "
        f"peaks at {n_steps / max(warmup, 1):.2f} of lr"
    )


# Model-config fields that Table 13's "Dropout" and "Attention dropout" map onto, by architecture family.
DROPOUT_FIELDS = ("resid_pdrop", "embd_pdrop", "hidden_dropout", "hidden_dropout_prob", "dropout")
ATTENTION_DROPOUT_FIELDS = ("attention_dropout", "attn_pdrop", "attention_probs_dropout_prob")


def dropout_overrides(config: Any, hp: dict[str, Any]) -> dict[str, float]:
    """The model-config fields to set for LAPT: ``hp["dropout"]`` on the dropout fields the config has and
    ``hp["attention_dropout"]`` on its attention-dropout fields (Llama/Gemma-2: attention_dropout only)."""
    out = {}
    for fields, key in ((DROPOUT_FIELDS, "dropout"), (ATTENTION_DROPOUT_FIELDS, "attention_dropout")):
        for name in fields:
            if isinstance(getattr(config, name, None), int | float) and not isinstance(getattr(config, name), bool):
                out[name] = float(hp[key])
    return out
