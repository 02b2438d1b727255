"""Micro-batches of a LAPT step: how many blocks go through one forward/backward (hparams ``micro_batch``)."""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

from workflow_scripts.gpu.estimate import fitting_micro_batch
from workflow_scripts.gpu.shape import GIB, shape_from_config
from workflow_scripts.lapt.hparams import weights_dtype_on

log = logging.getLogger("vocabexp.lapt")


def resolve_micro_batch(
    hp: dict[str, Any],
    device: Any,
    model_dir: str | Path,
    procedure: str,
    objective: str,
    seq_len: int,
    grad_ckpt: bool,
    shards: int = 1,
) -> int:
    """Blocks per forward/backward: hparams micro_batch, with "auto" the largest divisor of the step's blocks (of
    this process's share, sharded over ``shards`` GPUs) that workflow_scripts.gpu says fits this GPU's memory
    (batch_size on the CPU, where memory is not the limit)."""
    micro = hp["micro_batch"]
    effective = math.ceil(int(hp["batch_size"]) * int(hp["grad_accum"]) / shards)
    if micro is None:
        return int(hp["batch_size"])
    if micro != "auto":
        return int(micro)
    if device.type != "cuda":
        return int(hp["batch_size"])
    import torch
    from transformers import AutoConfig

    total = torch.cuda.get_device_properties(device).total_memory / GIB
    est = fitting_micro_batch(
        shape_from_config(AutoConfig.from_pretrained(model_dir)),
        procedure,
        seq_len,
        effective,
        objective=objective,
        weights_dtype=weights_dtype_on(hp["weights_dtype"], "cuda"),
        gradient_checkpointing=grad_ckpt,
        eeve_layers=hp["eeve_layers"],
        memory_gib=total,
        shards=shards,
    )
    log.info(
        "micro_batch auto: %d of %d blocks a step (estimated peak %.1f of %.1f GiB%s)",
        est["micro_batch"],
        effective,
        est["peak_gib"],
        total,
        "" if est["fits"] else "; does not fit even so",
    )
    return int(est["micro_batch"])


def split_micro(batches: list[Any], micro: int) -> list[Any]:
    """The step's blocks (``step_batches``) re-split into micro-batches of ``micro`` blocks (the last may be short)."""
    if all(b.shape[0] == micro for b in batches[:-1]) and batches and batches[-1].shape[0] <= micro:
        return batches
    import torch

    return list(torch.cat(batches).split(micro))
