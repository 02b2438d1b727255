"""The GPUs a LAPT job is planned on: its estimate at the micro-batch lapt will take (``planned``), on the fewest GPUs
of a node that hold it (``planned_gpus``), and, where none does, which config key to change (``fit_problem``)."""

from __future__ import annotations

import json
import math
from typing import Any

from workflow_scripts.gpu.estimate import CLASSES, GPUS, estimate, fitting_micro_batch, weights_dtype_on_gpu
from workflow_scripts.gpu.shape import ModelShape
from workflow_scripts.procedure_stages import adds_lora

# GPUs of one node a LAPT job may be sharded over (FSDP), fewest first.
SHARD_COUNTS = (1, 2, 4, 8)


def planned(
    shape: str | ModelShape, procedure: str, objective: str, seq_len: int, hp: dict[str, Any], gpu: str, **kw
) -> dict[str, Any]:
    """The estimate a LAPT job runs with on ``gpu``, from its resolved hparams (workflow_scripts.lapt.resolve_hparams):
    micro-batch ``micro_batch`` (null: batch_size; "auto": the largest divisor of the step's blocks that fits, as
    lapt picks it on the device) with the accumulation that makes up batch_size x grad_accum blocks a step. Sharded
    over ``shards`` processes, each takes 1/N of the step's blocks (workflow_scripts.lapt.shard.micro_share)."""
    effective = math.ceil(int(hp["batch_size"]) * int(hp["grad_accum"]) / kw.get("shards", 1))
    weights_dtype = weights_dtype_on_gpu(hp["weights_dtype"])
    common = dict(
        objective=objective,
        weights_dtype=weights_dtype,
        gpu=gpu,
        eeve_layers=hp["eeve_layers"],
        gradient_checkpointing=hp["gradient_checkpointing"] is not False,
        epochs=float(hp["epochs"]),
        stage_split=hp["stage_split"],
        **kw,
    )
    if hp["micro_batch"] == "auto":
        return fitting_micro_batch(shape, procedure, seq_len, effective, **common)
    micro = min(int(hp["batch_size"] if hp["micro_batch"] is None else hp["micro_batch"]), effective)
    return estimate(shape, procedure, seq_len, micro, grad_accum=math.ceil(effective / micro), **common)


def planned_gpus(
    shape: str | ModelShape,
    procedure: str,
    objective: str,
    seq_len: int,
    hp: dict[str, Any],
    gpu: str,
    max_gpus: int = 1,
    **kw,
) -> dict[str, Any]:
    """``planned`` on the fewest GPUs of one node (SHARD_COUNTS, at most ``max_gpus``) on which the job fits: one
    process, else FSDP over N. Only jobs that one GPU cannot hold at any micro-batch are sharded (a micro-batch
    setting that is merely too large is the config's to change); procedures that add LoRA between stages run as one
    process (they fit one GPU)."""
    one = planned(shape, procedure, objective, seq_len, hp, gpu, **kw)
    if one["fits"] or adds_lora(procedure, hp["eeve_layers"]):
        return one
    if planned(shape, procedure, objective, seq_len, {**hp, "micro_batch": "auto"}, gpu, **kw)["fits"]:
        return one
    est = one
    for n in [n for n in SHARD_COUNTS if 1 < n <= max_gpus]:
        est = planned(shape, procedure, objective, seq_len, hp, gpu, shards=n, **kw)
        if est["fits"]:
            return est
    return est  # does not fit even on the most GPUs allowed: returned with fits=False


def larger_gpus(gpu: str) -> list[str]:
    """The GPUs standing for the memory classes above ``gpu``'s (``CLASSES``), smallest first."""
    memory = GPUS[gpu]["memory_gib"]
    larger = [g for g in CLASSES.values() if GPUS[g]["memory_gib"] > memory]
    return sorted(larger, key=lambda g: GPUS[g]["memory_gib"])


def fit_problem(
    shape: str | ModelShape,
    procedure: str,
    objective: str,
    seq_len: int,
    hp: dict[str, Any],
    gpu: str,
    keys: dict[str, str],
    what: str,
    max_gpus: int = 1,
) -> str | None:
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
    if weights_dtype_on_gpu(hp["weights_dtype"]) == "fp32":
        tries.append(("weights_dtype", "bf16"))
    bigger = next(
        (
            g.lower()
            for g in larger_gpus(gpu)
            if planned_gpus(shape, procedure, objective, seq_len, hp, g, max_gpus)["fits"]
        ),
        None,
    )
    changed = dict(hp)
    for key, value in tries:
        changed[key] = value
        alt = planned_gpus(shape, procedure, objective, seq_len, changed, gpu, max_gpus)
        if alt["fits"]:
            more = planned_gpus(shape, procedure, objective, seq_len, hp, gpu, SHARD_COUNTS[-1])
            return (
                f"{keys[key]}: {json.dumps(hp[key])} does not fit: {need}; {have}. Set {key}: {value} "
                f"({alt['peak_gib']:.0f} GiB at micro-batch {alt['micro_batch']})"
                + (f", or ask for a larger GPU (set-resources lapt: {{gpu_model: {bigger}}})" if bigger else "")
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
                f"{need}; {have}: it fits when sharded over {more['gpus']} GPUs of a node "
                f"(set-resources lapt: {{node_gpus: {more['gpus']}}} where the nodes have them)"
                + (f", or on a larger GPU (set-resources lapt: {{gpu_model: {bigger}}})" if bigger else "")
            )
    for gpu_larger in larger_gpus(gpu):
        if planned_gpus(shape, procedure, objective, seq_len, changed, gpu_larger, max_gpus)["fits"]:
            return f"{need}; {have}: ask for a larger GPU (set-resources lapt: {{gpu_model: {gpu_larger.lower()}}})"
    return (
        f"{keys.get('procedure', 'procedure')}: {need}; {have}, even with "
        f"{', '.join(f'{k}: {v}' for k, v in tries) or 'these settings'}: choose a procedure that trains less or a "
        "shorter seq_len"
    )
