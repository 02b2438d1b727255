"""One LAPT run over the GPUs of one node: one process per GPU, parameters, gradients and Adam states sharded by
PyTorch FSDP (``torch.distributed.fsdp.fully_shard``, the FSDP2 API PyTorch recommends).

The loop (``loop.py``) is the same for one process and for N: ``Ranks`` says which process this is; with one process
every function here is the identity, so a one-process run computes exactly what it computed before. Launched by
``torchrun --standalone --nproc-per-node N`` (rule lapt, rules/lapt.smk), which sets RANK, LOCAL_RANK and WORLD_SIZE;
the backend is NCCL on GPUs and gloo on the CPU (the tests). Any torchrun launch takes the FSDP path, also with one
process (the GPU check on a single GPU, tools/gpu_fsdp_check.py); a plain ``python -m`` launch never does.

Sharding follows FSDP2's layout: every transformer layer is its own FSDP unit, the root (embeddings, final norm, LM
head, tied or not) another, the mtp head a third; each parameter is split along dim 0 in ``torch.chunk`` pieces, rank r
holding rows [r * ceil(n / N), ...). Row masks (EEVE's frozen rows) act on the rows of the local piece. Gradients are
summed over the ranks, not averaged: every micro-batch's loss is already normalized by the whole step's token counts.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Ranks:
    """This process's place in the run: rank, number of processes, local rank (its GPU on the node), and whether
    the run is sharded (launched by torchrun: a process group exists)."""

    rank: int = 0
    world: int = 1
    local: int = 0
    sharded: bool = False

    @property
    def main(self) -> bool:
        """Whether this process writes the files (checkpoint, model, loss curve, stats)."""
        return self.rank == 0


def init_ranks() -> Ranks:
    """The process group of a torchrun launch (it sets WORLD_SIZE and LOCAL_RANK), started once; a plain launch is
    one unsharded process."""
    if "WORLD_SIZE" not in os.environ or "LOCAL_RANK" not in os.environ:
        return Ranks()
    import torch
    import torch.distributed as dist

    local = int(os.environ["LOCAL_RANK"])
    if not dist.is_initialized():
        if torch.cuda.is_available():
            torch.cuda.set_device(local)
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    return Ranks(dist.get_rank(), dist.get_world_size(), local, sharded=True)


def device(ranks: Ranks):
    """This process's device: its node-local GPU, or the CPU."""
    import torch

    return torch.device("cuda", ranks.local) if torch.cuda.is_available() else torch.device("cpu")


def shard_model(model, extra_head, layers) -> None:
    """Shard ``model`` (each of ``layers``, then the root) and the mtp ``extra_head`` over the ranks, in place."""
    from torch.distributed.fsdp import FSDPModule, fully_shard

    for layer in layers:
        fully_shard(layer)
    fully_shard(model)
    if extra_head is not None:
        fully_shard(extra_head)
    for m in [*model.modules(), *([] if extra_head is None else [extra_head])]:
        if isinstance(m, FSDPModule):
            m.set_gradient_divide_factor(1.0)  # a sum over the ranks: the losses are normalized by the whole step
            m.set_force_sum_reduction_for_comms(True)  # plain SUM collectives (gloo has no PREMUL_SUM)


def local(t):
    """The part of ``t`` this process holds (the tensor itself when not sharded)."""
    return t.to_local() if hasattr(t, "to_local") else t


def frozen_rows_held(n_rows: int, first: int, ranks: Ranks) -> int:
    """How many of the global rows [0, first) of an ``n_rows``-row tensor this rank's piece holds, at its start:
    FSDP2 gives rank r the rows from r * ceil(n_rows / world) (torch.chunk along dim 0)."""
    chunk = math.ceil(n_rows / ranks.world)
    offset = ranks.rank * chunk
    return min(max(first - offset, 0), max(0, min(chunk, n_rows - offset)))


def local_rows(p, first: int, ranks: Ranks) -> tuple[Any, int]:
    """The local piece of parameter (or gradient) ``p`` and how many of its leading rows lie in the global rows
    [0, first)."""
    if not ranks.sharded:
        return p, first
    return local(p), frozen_rows_held(p.shape[0], first, ranks)


def full(t):
    """The whole tensor on every rank (a collective when sharded), on the CPU."""
    return (t.full_tensor() if hasattr(t, "full_tensor") else t).detach().cpu()


def place(full_tensor, like):
    """``full_tensor`` laid out as ``like`` (a parameter or optimizer state): sharded the same way when ``like`` is a
    DTensor, else on its device and in its dtype."""
    t = full_tensor.to(device=local(like).device, dtype=like.dtype)
    if hasattr(like, "device_mesh"):
        from torch.distributed.tensor import distribute_tensor

        return distribute_tensor(t, like.device_mesh, like.placements)
    return t


def full_optimizer_state(optimizer) -> dict[str, Any]:
    """The optimizer's state_dict with whole tensors: the same checkpoint whatever the number of processes."""
    sd = optimizer.state_dict()
    sd["state"] = {i: {k: full(v) for k, v in st.items()} for i, st in sd["state"].items()}
    return sd


def load_optimizer_state(optimizer, sd: dict[str, Any]) -> None:
    """Load a ``full_optimizer_state`` into ``optimizer``, each state sharded like its parameter."""
    params = [p for g in optimizer.param_groups for p in g["params"]]
    state = {
        int(i): {k: (v if k == "step" else place(v, params[int(i)])) for k, v in st.items()}
        for i, st in sd["state"].items()
    }
    optimizer.load_state_dict({**sd, "state": state})


def micro_share(batches: list[Any], micro: int, ranks: Ranks) -> Iterator[tuple[Any, float]]:
    """This process's micro-batches of one step, with the weight of each loss: the step's blocks cut into ``world``
    contiguous parts, each into pieces of at most ``micro``. Every rank takes the same number of forward/backward
    passes (FSDP's collectives pair them up): a rank with fewer blocks repeats a block with weight 0."""
    if not ranks.sharded:
        yield from ((b, 1.0) for b in batches)
        return
    import torch

    blocks = torch.cat(batches)
    parts = blocks.tensor_split(ranks.world)
    n_micro = math.ceil(max(len(p) for p in parts) / micro)
    mine = list(parts[ranks.rank].split(micro))
    yield from ((b, 1.0) for b in mine)
    for _ in range(n_micro - len(mine)):
        yield blocks[:1], 0.0


def sum_over_ranks(t, ranks: Ranks):
    """``t`` summed over the ranks (asynchronously on the device with NCCL: no host sync)."""
    if ranks.sharded and t is not None:
        import torch.distributed as dist

        t = t.clone()
        dist.all_reduce(t)
    return t


def any_rank(flags: list[bool], ranks: Ranks) -> list[bool]:
    """Each flag true on any rank: every rank takes the same decision (stop, checkpoint) at the same step."""
    if not ranks.sharded:
        return flags
    import torch
    import torch.distributed as dist

    t = torch.tensor([int(f) for f in flags], device=device(ranks))
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return [bool(v) for v in t.tolist()]


def barrier(ranks: Ranks) -> None:
    """Wait for every rank (after rank 0 wrote a file the others must not outrun)."""
    if ranks.sharded:
        import torch.distributed as dist

        dist.barrier()


def full_model_state(model) -> dict[str, Any]:
    """The model's whole state dict on the CPU of rank 0 (empty on the others), gathered unit by unit."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))


def close() -> None:
    """End the process group of a sharded run, if one was started."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
