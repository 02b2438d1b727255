"""The LAPT training loop (paper 002 §5, §6.6): ``train`` reads as set up, resume, step until done, write the outputs.

``Run`` (what a run is fixed to) and ``TrainState`` (what the steps change and the checkpoint saves) are built by
``prepare_run`` and ``load_model`` (run.py). Every function here takes these two and does one thing: enter a stage,
take one optimizer step, save or resume the checkpoint; outputs.py writes the outputs and gathers the stats.
``StepHook``s passed to ``train`` are its one extension point.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack
from pathlib import Path
from typing import Any

from workflow_scripts.io import write_text
from workflow_scripts.lapt import shard
from workflow_scripts.lapt.checkpoint import load_checkpoint, rng_state, save_checkpoint, set_rng_state
from workflow_scripts.lapt.curve import CurveSpec, bits_per_char, curve_row, curve_tsv, timed
from workflow_scripts.lapt.data import epoch_order
from workflow_scripts.lapt.gate import InitGate
from workflow_scripts.lapt.hparams import stage_at, stage_warmup, warmup_note
from workflow_scripts.lapt.micro import split_micro
from workflow_scripts.lapt.outputs import run_stats, tensor_bytes, write_outputs
from workflow_scripts.lapt.run import Run, TrainState, load_model, prepare_run
from workflow_scripts.lapt.tracking import Tracking, TrackingSpec, curve_points, step_points
from workflow_scripts.lapt.tracking import start as start_tracking

log = logging.getLogger("vocabexp.lapt")

# Called with the optimizer step just taken and the checkpoint folder; the context it returns wraps that step's stop
# check and checkpoint (entered before the stop check, left once the checkpoint is written).
StepHook = Callable[[int, Path], AbstractContextManager[None]]


class TrainingInterrupted(RuntimeError):
    """Raised after a stop request (SIGTERM, SIGUSR1) once the checkpoint of the last finished step is written."""


def enter_stage(run: Run, state: TrainState, i: int) -> None:
    """Make stage ``i`` current: its trainable set (LoRA wrapping included), a fresh AdamW and warmup + cosine schedule.

    A fresh optimizer and schedule per stage, as if each stage were its own run (Cui et al. 2023; EEVE §3 warms up in
    every stage).
    """
    import torch
    from transformers import get_cosine_schedule_with_warmup

    model, limits = run.proc.stages[i].prepare(state.model, run.hp, run.ctx)
    if run.low_precision:  # trainable parameters are kept (and stepped) in fp32; only frozen weights are bf16
        for p in model.parameters():
            if p.requires_grad and p.dtype != torch.float32:
                p.data = p.data.float()
    if run.grad_ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    state.loss_fn.model = model
    state.loss_fn.attach(model.get_output_embeddings())
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad] + state.loss_fn.extra_parameters()
    state.touched.update((id(p), p) for _, p in named)
    n_steps = run.ends[i] - (run.ends[i - 1] if i else 0)
    warmup = stage_warmup(run.hp, n_steps)
    state.model, state.stage, state.named, state.limits = model, i, named, limits
    state.optimizer = _adamw(run.hp, named)
    state.scheduler = get_cosine_schedule_with_warmup(state.optimizer, warmup, n_steps)
    take_snapshots(run, state)
    info = _stage_record(run, state, warmup)
    state.stage_info[i:] = [info]
    log.info(
        "stage %d/%d %s: steps %d-%d, %d parameters trainable",
        i + 1,
        len(run.ends),
        info["name"],
        info["first_step"],
        info["last_step"],
        info["trainable_parameters"],
    )


def _adamw(hp: dict[str, Any], named: list[tuple[str, Any]]):
    """AdamW with weight decay on matrices only; biases and norm weights are exempt, as in HF Trainer."""
    import torch

    groups = [
        {"params": [p for _, p in named if p.ndim >= 2], "weight_decay": float(hp["weight_decay"])},
        {"params": [p for _, p in named if p.ndim < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(
        [g for g in groups if g["params"]],
        lr=float(hp["lr"]),
        betas=(float(hp["adam_beta1"]), float(hp["adam_beta2"])),
        eps=float(hp["adam_eps"]),
    )


def _stage_record(run: Run, state: TrainState, warmup: int) -> dict[str, Any]:
    """The stats entry of the current stage; ``measured_bytes`` is added at its last step."""
    i = state.stage
    frozen_rows = {id(p): first for p, first in state.limits}
    extra = state.loss_fn.extra_parameters()
    return {
        "stage": i + 1,
        "name": run.proc.stages[i].name,
        "first_step": (run.ends[i - 1] if i else 0) + 1,
        "last_step": run.ends[i],
        "warmup_steps": warmup,
        "warmup_note": warmup_note(warmup, run.ends[i] - (run.ends[i - 1] if i else 0)),
        "trainable_parameters": sum(
            p.numel() - frozen_rows.get(id(p), 0) * math.prod(p.shape[1:]) for _, p in state.named
        ),
        "total_parameters": sum(p.numel() for p in state.model.parameters()) + sum(p.numel() for _, p in extra),
        "row_limited": [[n, frozen_rows[id(p)]] for n, p in state.named if id(p) in frozen_rows],
    }


def take_snapshots(run: Run, state: TrainState) -> None:
    """Remember the frozen rows of the row-limited matrices (of this process's shard), to copy back after every
    optimizer step.

    Zeroing their gradient is not enough: AdamW's decoupled weight decay (and any momentum) would still move them.
    """
    pieces = [(p, shard.local_rows(p.detach(), first, run.ranks)) for p, first in state.limits]
    state.snapshots = [(p, n, piece[:n].clone()) for p, (piece, n) in pieces]


def touched_named(state: TrainState) -> list[tuple[str, Any]]:
    """The parameters trained in any stage so far, by their names in the current (possibly wrapped) model."""
    named_all = list(state.model.named_parameters()) + state.loss_fn.extra_parameters()
    return [(n, p) for n, p in named_all if id(p) in state.touched]


def step_batches(run: Run, step: int) -> list[Any]:
    """The micro-batches of the optimizer step after ``step`` steps: the next slice of its epoch's block order."""
    bs, ga = int(run.hp["batch_size"]), int(run.hp["grad_accum"])
    epoch, in_epoch = divmod(step, run.per_epoch)
    order = epoch_order(run.n_blocks, int(run.hp["seed"]), epoch)
    micro = range(in_epoch * ga, min((in_epoch + 1) * ga, run.lengths["micro_per_epoch"]))
    return [run.blocks[order[m * bs : (m + 1) * bs]] for m in micro]


def optimizer_step(run: Run, state: TrainState) -> None:
    """One optimizer step of the current stage over its micro-batches, then its row of the loss history.

    Frozen rows of row-limited matrices take no part in clipping or Adam's moments and are restored after the step.
    A sharded run's processes each take their share of the step's blocks (``shard.micro_share``).
    """
    import torch

    t0 = time.time()
    batches = split_micro(step_batches(run, state.step), run.micro)
    # Every micro-batch is normalized by the whole step's counts: each token weighs the same whatever the split.
    n1 = sum(b.shape[0] * (run.seq_len - 1) for b in batches)
    n2 = sum(b.shape[0] * (run.seq_len - 2) for b in batches)
    lr = state.scheduler.get_last_lr()[0]
    step_loss = None  # summed on the device: read back at log steps and checkpoints, not per micro-batch
    for batch, weight in shard.micro_share(batches, run.micro, run.ranks):
        ids = batch.to(run.device, non_blocking=True)
        with torch.autocast(device_type=run.device.type, dtype=torch.bfloat16, enabled=run.use_bf16):
            loss = state.loss_fn(ids, n1, n2)
        if weight != 1.0:  # a rank's filler pass: its collectives pair up with the others', its gradient is zero
            loss = loss * weight
        loss.backward()
        step_loss = loss.detach() if step_loss is None else step_loss + loss.detach()
    step_loss = shard.sum_over_ranks(step_loss, run.ranks)
    for p, first in state.limits:
        if p.grad is not None:
            grad, n = shard.local_rows(p.grad, first, run.ranks)
            grad[:n] = 0
    if run.hp["max_grad_norm"] is not None:
        torch.nn.utils.clip_grad_norm_([p for _, p in state.named], float(run.hp["max_grad_norm"]))
    state.optimizer.step()
    state.scheduler.step()
    if state.step + 1 == run.ends[state.stage]:  # the stage's last step: its gradients and Adam states all exist
        state.stage_info[state.stage]["measured_bytes"] = tensor_bytes(state.model, state.loss_fn, state.optimizer)
    state.optimizer.zero_grad(set_to_none=True)
    with torch.no_grad():
        for p, n, rows in state.snapshots:
            shard.local(p)[:n] = rows
    state.step += 1
    state.tokens_seen += sum(b.numel() for b in batches)
    state.train_seconds += time.time() - t0
    _record(run, state, lr, step_loss)


def _record(run: Run, state: TrainState, lr: float, loss: Any) -> None:
    step = state.step
    row = {
        "step": step,
        "epoch": round(step / run.per_epoch, 4),
        "lr": lr,
        "loss": None,
        "tokens_seen": state.tokens_seen,
        "stage": state.stage + 1,
    }
    state.history.append(row)
    state.pending.append((row, loss))
    if step % int(run.hp["log_every"]) == 0 or step == run.total_steps:
        flush_losses(state)
        log.info(
            "step %d/%d stage %d epoch %.3f lr %.3e loss %.4f (%.0f tokens/s)",
            step,
            run.total_steps,
            state.stage + 1,
            step / run.per_epoch,
            lr,
            row["loss"],
            state.tokens_seen / max(state.train_seconds, 1e-9),
        )


def flush_losses(state: TrainState) -> None:
    """Read the losses of the steps since the last read back from the device: one host sync for all of them."""
    if state.pending:
        import torch

        values = torch.stack([loss for _, loss in state.pending]).float().tolist()
        for (row, _), value in zip(state.pending, values, strict=True):
            row["loss"] = value
        if state.tracker:
            speed = state.tokens_seen / max(state.train_seconds, 1e-9)
            state.tracker.log(step_points([row for row, _ in state.pending], speed))
        state.pending = []


def measure_curve(run: Run, state: TrainState) -> None:
    """The held-out curve's point of the step just reached, when it is one of the curve's steps not yet measured.

    Every process of a sharded run measures (each FSDP forward needs all of them) and keeps the same rows; rank 0
    writes them. The mtp hook is off during the measurement, so that its forward passes leave no captured state.
    """
    plan = run.curve
    if plan is None or state.step not in plan.steps or any(r["step"] == state.step for r in state.curve):
        return
    state.loss_fn.attach(None)
    bpc, seconds = timed(
        bits_per_char,
        state.model,
        run.tokenizer,
        plan.sentences,
        batch_size=plan.spec.batch_size,
        device_type=run.device.type,
        bf16=run.use_bf16,
    )
    state.loss_fn.attach(state.model.get_output_embeddings())
    state.curve.append(curve_row(state.step, state.tokens_seen, bpc, len(plan.sentences), seconds))
    if state.tracker:
        state.tracker.log(curve_points(state.curve[-1]))
    log.info(
        "curve: step %d/%d held-out bits/char %.4f on %d sentences (%.1f s)",
        state.step,
        run.total_steps,
        bpc,
        len(plan.sentences),
        seconds,
    )


def checkpoint_due(run: Run, state: TrainState) -> bool:
    """Whether the step just taken is checkpointed: every ``checkpoint_every`` steps (null: never by steps), once
    ``checkpoint_minutes`` of wall time have passed since the last checkpoint, and at the end of every stage."""
    step, every, minutes = state.step, run.hp.get("checkpoint_every"), run.hp.get("checkpoint_minutes")
    if step == run.total_steps or step == run.ends[state.stage]:
        return True
    if every is not None and step % int(every) == 0:
        return True
    return minutes is not None and time.monotonic() - state.last_save >= 60 * float(minutes)


def save(run: Run, state: TrainState) -> None:
    """Replace the checkpoint: the parameters trained in any stage so far, the stage's optimizer and schedule, the
    counters, the loss history and the RNG states. Whole tensors, gathered from every rank and written by rank 0: one
    checkpoint that resumes on any number of processes."""
    flush_losses(state)
    trainable = {n: shard.full(p).clone() for n, p in touched_named(state)}
    optimizer = shard.full_optimizer_state(state.optimizer)
    if not run.ranks.main:
        shard.barrier(run.ranks)
        state.last_save = time.monotonic()
        return
    save_checkpoint(
        run.ckpt_path,
        {
            "fingerprint": run.fingerprint,
            "stage": state.stage,
            "trainable": trainable,
            "optimizer": optimizer,
            "scheduler": state.scheduler.state_dict(),
            "step": state.step,
            "history": state.history,
            "train_seconds": state.train_seconds,
            "tokens_seen": state.tokens_seen,
            "resumed_from": state.resumed_from,
            "rng": rng_state(),
            "curve": {"sha256": run.curve.sha256 if run.curve else None, "rows": state.curve},
            "tracker": state.tracker.ref if state.tracker else state.tracker_ref,
            "init_gate": state.init_gate,  # measured before step 1 only: a resumed run's stats keep it
        },
    )
    shard.barrier(run.ranks)  # no rank runs on (or is killed) before the checkpoint is on disk
    state.last_save = time.monotonic()


def resume(run: Run, state: TrainState) -> None:
    """Continue from the checkpoint: rebuild the stage it was written in (LoRA wrapping included) and restore the
    trained parameters, optimizer, schedule, counters and RNG states. Refuses a checkpoint of another run."""
    import torch

    ckpt, ckpt_dir = load_checkpoint(run.ckpt_path), run.ckpt_path.parent
    if ckpt["fingerprint"] != run.fingerprint:
        diff = sorted(k for k in run.fingerprint if ckpt["fingerprint"].get(k) != run.fingerprint[k])
        raise ValueError(
            f"checkpoint {run.ckpt_path} was written by a run with different {diff}; delete {ckpt_dir} to start over"
        )
    for i in range(ckpt["stage"] + 1):  # replayed in order: the same wrapping, the same draws from the RNG
        enter_stage(run, state, i)
    params = dict(touched_named(state))
    if sorted(params) != sorted(ckpt["trainable"]):
        raise ValueError(f"checkpoint {run.ckpt_path} holds other parameters than this run trains; delete {ckpt_dir}")
    with torch.no_grad():
        for name, tensor in ckpt["trainable"].items():
            params[name].copy_(shard.place(tensor, params[name]))
    take_snapshots(run, state)
    shard.load_optimizer_state(state.optimizer, ckpt["optimizer"])
    state.scheduler.load_state_dict(ckpt["scheduler"])
    state.step, state.history = ckpt["step"], ckpt["history"]
    state.train_seconds, state.tokens_seen = ckpt["train_seconds"], ckpt["tokens_seen"]
    state.resumed_from = [*ckpt["resumed_from"], state.step]
    set_rng_state(ckpt["rng"])
    if run.curve is not None:
        state.curve = run.curve.resumed_rows(ckpt.get("curve") or {}, state.step, run.ckpt_path.parent)
    state.tracker_ref = ckpt.get("tracker")
    state.init_gate = ckpt.get("init_gate")
    log.info(
        "resuming from %s at step %d of %d (stage %d)", run.ckpt_path, state.step, run.total_steps, state.stage + 1
    )


def train(
    model_dir: str | Path,
    train_file: str | Path,
    out_dir: str | Path,
    *,
    procedure: str,
    objective: str = "clm",
    seq_len: int,
    hparams: dict[str, Any] | None = None,
    checkpoint_dir: str | Path,
    loss_curve: str | Path | None = None,
    should_stop: Callable[[], bool] | None = None,
    n_source_rows: int | None = None,
    curve: CurveSpec | None = None,
    tracking: TrackingSpec | None = None,
    init_gate: InitGate | None = None,
    step_hooks: Sequence[StepHook] = (),
) -> dict[str, Any]:
    """Run LAPT (paper 002 §5, §6.6) from ``model_dir`` on ``train_file``, resuming from ``checkpoint_dir`` if present.

    Writes the trained HF model folder to ``out_dir`` (and the loss curve TSV, and with ``curve`` the held-out curve
    TSV: curve.py); returns the stats dictionary.
    ``n_source_rows`` (EEVE only) is the source vocabulary size: rows at or above it are the new tokens'.
    ``tracking`` sends the steps' and the curve's numbers to a tracker (tracking.py) from the main process.
    ``init_gate`` checks the initialization at step 0 before the first step of a fresh (not resumed) run (gate.py).
    Once ``should_stop()`` is true, the current step is finished and checkpointed and TrainingInterrupted is raised.
    Each of ``step_hooks`` wraps every step's stop check and checkpoint (``StepHook``); none by default.
    """
    wall_start = time.time()
    run = prepare_run(
        model_dir,
        train_file,
        procedure=procedure,
        objective=objective,
        seq_len=seq_len,
        hparams=hparams,
        checkpoint_dir=checkpoint_dir,
        n_source_rows=n_source_rows,
        curve=curve,
    )
    state = load_model(run, None if run.ckpt_path.exists() else init_gate)
    if run.ckpt_path.exists():
        resume(run, state)
    if tracking is not None and run.ranks.main:
        state.tracker = open_tracking(run, state, tracking)
    try:
        return _train_from(run, state, out_dir, loss_curve, should_stop, wall_start, step_hooks)
    finally:
        if state.tracker:
            state.tracker.close()


def open_tracking(run: Run, state: TrainState, spec: TrackingSpec) -> Tracking:
    """The tracker run of this job: the checkpoint's where it resumes (logging on from the step after it), else a
    new one from step 0; the run's settings are its parameters."""
    settings = {
        "procedure": run.procedure,
        "objective": run.objective,
        "seq_len": run.seq_len,
        "total_steps": run.total_steps,
        **run.hp,
    }
    return start_tracking(spec, state.tracker_ref, state.step + 1 if state.step else 0, settings)


def _train_from(
    run: Run,
    state: TrainState,
    out_dir: str | Path,
    loss_curve: str | Path | None,
    should_stop: Callable[[], bool] | None,
    wall_start: float,
    step_hooks: Sequence[StepHook],
) -> dict[str, Any]:
    """``train`` from the loaded (or resumed) state: step until done, then write the outputs and gather the stats."""
    procedure, objective, seq_len = run.procedure, run.objective, run.seq_len
    log.info(
        "LAPT %s/%s seq_len=%d: %d blocks, %d steps/epoch, %d steps in %d stage(s) ending at %s, %s%s",
        procedure,
        objective,
        seq_len,
        run.n_blocks,
        run.per_epoch,
        run.total_steps,
        len(run.ends),
        run.ends,
        run.device,
        " bf16 autocast" if run.use_bf16 else " fp32",
    )
    while state.step < run.total_steps:
        stage = stage_at(run.ends, state.step)
        if stage != state.stage:
            enter_stage(run, state, stage)
        measure_curve(run, state)  # step 0: the initialized weights, set up as the first stage trains them
        optimizer_step(run, state)
        measure_curve(run, state)
        with ExitStack() as hooks:
            for hook in step_hooks:
                hooks.enter_context(hook(state.step, run.ckpt_path.parent))
            asked = should_stop is not None and should_stop()
            stop, due = shard.any_rank([asked, checkpoint_due(run, state)], run.ranks)
            if stop or due:
                save(run, state)
        if stop and state.step < run.total_steps:
            raise TrainingInterrupted(
                f"stopped on request after step {state.step} of {run.total_steps}; checkpoint {run.ckpt_path}"
            )
    flush_losses(state)
    if not state.history:
        raise RuntimeError("no optimizer step was taken")  # total_steps >= 1 whenever there is a block
    write_outputs(run, state, out_dir, loss_curve)
    if run.curve is not None and run.ranks.main:
        write_text(run.curve.spec.out, curve_tsv(state.curve))
    shard.barrier(run.ranks)
    stats = run_stats(run, state, wall_start)
    if state.init_gate is not None:
        stats["init_gate"] = state.init_gate
    if run.curve is not None:
        stats["curve"] = {
            "steps": [r["step"] for r in state.curve],
            "n_sentences": len(run.curve.sentences),
            "seconds": round(sum(r["seconds"] for r in state.curve), 3),
        }
    return stats
