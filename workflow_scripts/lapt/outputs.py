"""The outputs of a LAPT run: the trained model folder, the loss curve, the stats and the tensor bytes it held."""

from __future__ import annotations

import resource
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workflow_scripts.io import atomic_path, write_text
from workflow_scripts.lapt import shard
from workflow_scripts.lapt.hparams import dropout_overrides
from workflow_scripts.lapt.objective import LossComputer

if TYPE_CHECKING:
    from workflow_scripts.lapt.run import Run, TrainState


def loss_curve_tsv(history: list[dict[str, Any]]) -> str:
    """The loss curve: one row per optimizer step with its epoch, learning rate, loss, tokens seen and stage."""
    rows = ["step\tepoch\tlr\tloss\ttokens_seen\tstage"]
    rows += [
        f"{h['step']}\t{h['epoch']}\t{h['lr']:.8e}\t{h['loss']:.6f}\t{h['tokens_seen']}\t{h.get('stage', 1)}"
        for h in history
    ]
    return "\n".join(rows) + "\n"


def write_outputs(run: Run, state: TrainState, out_dir: str | Path, loss_curve: str | Path | None) -> None:
    """Save the trained model (LoRA merged, the mtp head left out) with its tokenizer, and the loss curve.

    A sharded run gathers the whole state dict on rank 0's CPU, unit by unit, and saves it through a plain copy of
    the model (the same config, dropout fields included); the other ranks write nothing.
    """
    import torch

    state.loss_fn.attach(None)  # the saved model carries no hook, and the mtp head is freed with the loss
    model = run.proc.finalize(state.model)
    model.eval()
    if run.grad_ckpt:
        model.gradient_checkpointing_disable()
    if run.ranks.sharded:
        full_state = shard.full_model_state(model)
        if not run.ranks.main:
            return
        from transformers import AutoModelForCausalLM

        dropout = dropout_overrides(model.config, run.hp)
        model = AutoModelForCausalLM.from_pretrained(run.model_dir, dtype=torch.float32, **dropout)
        model.load_state_dict(full_state)
    if run.low_precision:
        model.to(torch.bfloat16)  # saved as it was loaded: the fp32 trainables rounded once, as inference would
    with atomic_path(out_dir) as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        run.tokenizer.save_pretrained(tmp)
    if not run.ranks.sharded:
        state.model = model
    if loss_curve:
        write_text(loss_curve, loss_curve_tsv(state.history))


def run_stats(run: Run, state: TrainState, wall_start: float) -> dict[str, Any]:
    """The stats JSON of a finished run: data and schedule, per-stage parameter counts, time, memory, precision."""
    import torch

    peak, peak_kind = _peak_memory(run.device)
    stages, n_blocks, seq_len = state.stage_info, run.n_blocks, run.seq_len
    return {
        "procedure": run.procedure,
        "objective": run.objective,
        "seq_len": seq_len,
        "hparams": run.hp,
        "steps": state.step,
        "steps_per_epoch": run.per_epoch,
        "warmup_steps": stages[0]["warmup_steps"] if len(stages) == 1 else None,
        "stages": stages,
        # Table 13 dropout as applied: the model-config fields set (empty: the architecture has no such field).
        "dropout_set": dropout_overrides(state.model.config, run.hp),
        "n_source_rows": run.ctx.n_source_rows,
        "blocks": n_blocks,
        "tokens_per_epoch": n_blocks * seq_len,
        "corpus_tokens": run.corpus_tokens,
        "dropped_tokens": run.corpus_tokens - n_blocks * seq_len,
        "tokens_seen": state.tokens_seen,
        # The largest trainable set of any stage (rows frozen by EEVE not counted): what sizes gradients and Adam.
        "trainable_parameters": max(s["trainable_parameters"] for s in stages),
        "total_parameters": stages[-1]["total_parameters"],
        "train_seconds": round(state.train_seconds, 3),
        "wall_seconds_this_run": round(time.time() - wall_start, 3),
        "tokens_per_second": round(state.tokens_seen / max(state.train_seconds, 1e-9), 2),
        "peak_memory_bytes": peak,
        "peak_memory_kind": peak_kind,
        "device": str(run.device),
        # a sharded run's processes, one per GPU; its peak memory and measured bytes are rank 0's
        "processes": run.ranks.world,
        "precision": (
            ("bf16 autocast, " if run.use_bf16 else "")
            + ("bf16 frozen weights, fp32 trainable weights and Adam states" if run.low_precision else "fp32 weights")
        ),
        "gradient_checkpointing": run.grad_ckpt,
        "micro_batch": run.micro,
        "threads": torch.get_num_threads(),
        "first_loss": state.history[0]["loss"],
        "final_loss": state.history[-1]["loss"],
        "resumed_from": state.resumed_from,
        "data_note": "sentences joined with one EOS between them, no BOS; last partial block dropped",
    }


def _peak_memory(device) -> tuple[int, str]:
    import torch

    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device)), "cuda_max_memory_allocated"
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024, "ru_maxrss"  # Linux reports KiB


def tensor_bytes(model, loss_fn: LossComputer, optimizer) -> dict[str, int]:
    """Bytes this process holds in weights, gradients and optimizer states now (its shards when sharded): what
    workflow_scripts.gpu's arithmetic must match."""
    import torch

    params = {id(p): shard.local(p) for p in model.parameters()}
    params |= {id(p): shard.local(p) for _, p in loss_fn.extra_parameters()}
    grads = [shard.local(p.grad) for p in [*model.parameters(), *(p for _, p in loss_fn.extra_parameters())]]
    grads = list({id(g): g for g in grads if g is not None}.values())
    states = [shard.local(t) for st in optimizer.state.values() for t in st.values() if torch.is_tensor(t) and t.ndim]
    return {
        "weights": sum(p.numel() * p.element_size() for p in params.values()),
        "gradients": sum(g.numel() * g.element_size() for g in grads),
        "optimizer": sum(t.numel() * t.element_size() for t in states),
    }
