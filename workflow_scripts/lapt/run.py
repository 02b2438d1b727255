"""A LAPT run before its first step (paper 002 §5, §6.6): what it is fixed to, and the state the steps change.

``Run`` holds what a run is fixed to (data, schedule, stages, precision, the checkpoint's fingerprint); ``TrainState``
what the steps change and the checkpoint saves (the model, the stage's optimizer and schedule, counters, loss history).
``prepare_run`` builds the one (nothing is trained yet), ``load_model`` the other (no parameter is trainable yet); the
loop (loop.py) takes both from there.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workflow_scripts.io import read_corpus, seed_everything
from workflow_scripts.lapt import shard
from workflow_scripts.lapt.checkpoint import CHECKPOINT_FILE
from workflow_scripts.lapt.curve import CurvePlan, CurveSpec, curve_row, plan_curve
from workflow_scripts.lapt.data import build_blocks
from workflow_scripts.lapt.gate import InitGate, check_init
from workflow_scripts.lapt.hparams import (
    RESUME_NEUTRAL,
    dropout_overrides,
    resolve_hparams,
    schedule_lengths,
    stage_ends,
    weights_dtype_on,
)
from workflow_scripts.lapt.micro import resolve_micro_batch
from workflow_scripts.lapt.objective import OBJECTIVES, LossComputer
from workflow_scripts.lapt.procedures import PROCEDURES, Procedure, RowLimits, StageContext, adds_lora, decoder_parts
from workflow_scripts.lapt.tracking import Tracking


@dataclass
class Run:
    """What one LAPT run is fixed to: procedure, data, steps and stages, precision, and the checkpoint it resumes."""

    model_dir: Path
    procedure: str
    objective: str
    seq_len: int
    hp: dict[str, Any]
    proc: Procedure
    ctx: StageContext
    tokenizer: Any
    blocks: Any  # [n_blocks, seq_len] LongTensor
    corpus_tokens: int
    lengths: dict[str, int]  # schedule_lengths
    ends: list[int]  # the global step at which each stage ends
    device: Any
    low_precision: bool  # weights_dtype bf16: frozen weights bf16, trainable ones fp32
    use_bf16: bool  # bf16 autocast
    grad_ckpt: bool
    micro: int  # blocks per forward/backward (hparams micro_batch, resolved)
    ckpt_path: Path
    fingerprint: dict[str, Any]  # what must match for a checkpoint to be resumed
    ranks: shard.Ranks = field(default_factory=shard.Ranks)  # one process, or one of a sharded run's (shard.py)
    curve: CurvePlan | None = None  # the held-out curve (training.curve_points), or none

    @property
    def n_blocks(self) -> int:
        return int(self.blocks.shape[0])

    @property
    def total_steps(self) -> int:
        return self.lengths["total_steps"]

    @property
    def per_epoch(self) -> int:
        return self.lengths["steps_per_epoch"]


@dataclass
class TrainState:
    """What the steps change and the checkpoint saves; the stage fields are (re)built by ``enter_stage``."""

    model: Any  # wrapped by LoRA once a stage adds it
    loss_fn: LossComputer
    step: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)
    train_seconds: float = 0.0
    tokens_seen: int = 0
    resumed_from: list[int] = field(default_factory=list)
    stage: int = -1
    named: list[tuple[str, Any]] = field(default_factory=list)  # the stage's trainable parameters
    limits: RowLimits = field(default_factory=list)  # (parameter, n): its rows [0, n) stay frozen
    snapshots: list[tuple[Any, int, Any]] = field(default_factory=list)  # (parameter, n, the values of rows [0, n))
    optimizer: Any = None
    scheduler: Any = None
    touched: dict[int, Any] = field(default_factory=dict)  # parameters trained in any stage so far: the checkpoint's
    stage_info: list[dict[str, Any]] = field(default_factory=list)
    last_save: float = field(default_factory=time.monotonic)  # when the checkpoint was last written (or the start)
    pending: list[tuple[dict[str, Any], Any]] = field(default_factory=list)  # history rows whose loss is on the device
    curve: list[dict[str, Any]] = field(default_factory=list)  # the held-out curve's rows measured so far (curve.py)
    tracker: Tracking | None = None  # the tracking block's run (tracking.py), on the main process only
    tracker_ref: dict[str, Any] | None = None  # the tracker run the checkpoint names: a resume continues it
    init_gate: dict[str, Any] | None = None  # the step-0 gate's measurement (gate.py), when it ran


def prepare_run(
    model_dir: str | Path,
    train_file: str | Path,
    *,
    procedure: str,
    objective: str,
    seq_len: int,
    hparams: dict[str, Any] | None,
    checkpoint_dir: str | Path,
    n_source_rows: int | None,
    curve: CurveSpec | None = None,
) -> Run:
    """Check the arguments, tokenize and pack D, and lay out the run's steps and stages; nothing is trained yet."""
    from transformers import AutoTokenizer

    if procedure not in PROCEDURES:
        raise ValueError(f"unknown procedure {procedure!r}; implemented: {sorted(PROCEDURES)}")
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; expected one of {OBJECTIVES}")
    hp = resolve_hparams(hparams)
    ranks = shard.init_ranks()
    if ranks.sharded and adds_lora(procedure, hp):
        raise ValueError(
            f"procedure {procedure!r} (eeve_layers {hp['eeve_layers']!r}) adds LoRA modules between stages, which a "
            f"sharded run cannot do; run it as one process (it fits one GPU: python -m tools.gpu_estimate)"
        )
    device = shard.device(ranks)
    low_precision = weights_dtype_on(hp["weights_dtype"], device.type) == "bf16"
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    corpus = read_corpus(train_file, what="corpus D")
    blocks, corpus_tokens = build_blocks(corpus, tokenizer, seq_len, source=str(train_file))
    lengths = schedule_lengths(blocks.shape[0], hp)
    proc = PROCEDURES[procedure]
    ends = stage_ends(lengths["total_steps"], len(proc.stages), hp["stage_split"])
    # The data by content (not path), so a moved work dir still resumes.
    fingerprint = {
        "blocks_sha256": hashlib.sha256(blocks.numpy().tobytes()).hexdigest(),
        "procedure": procedure,
        "objective": objective,
        "seq_len": seq_len,
        "n_blocks": blocks.shape[0],
        "hparams": {k: v for k, v in hp.items() if k not in RESUME_NEUTRAL},
        "stage_ends": ends,
        "n_source_rows": n_source_rows,
    }
    grad_ckpt = device.type == "cuda" if hp["gradient_checkpointing"] is None else bool(hp["gradient_checkpointing"])
    micro = resolve_micro_batch(hp, device, model_dir, procedure, objective, seq_len, grad_ckpt, ranks.world)
    return Run(
        model_dir=Path(model_dir),
        procedure=procedure,
        objective=objective,
        seq_len=seq_len,
        hp=hp,
        proc=proc,
        ctx=StageContext(n_source_rows=n_source_rows),
        tokenizer=tokenizer,
        blocks=blocks,
        corpus_tokens=corpus_tokens,
        lengths=lengths,
        ends=ends,
        device=device,
        low_precision=low_precision,
        # bf16 autocast on CUDA; on the CPU only when frozen weights are bf16 (fp32 activations would not meet them).
        use_bf16=device.type == "cuda" or low_precision,
        grad_ckpt=grad_ckpt,
        micro=micro,
        ckpt_path=Path(checkpoint_dir) / CHECKPOINT_FILE,
        fingerprint=fingerprint,
        ranks=ranks,
        curve=plan_curve(curve, lengths["total_steps"]),
    )


def load_model(run: Run, gate: InitGate | None = None) -> TrainState:
    """Load the model and build its loss; the state before the first stage (no parameter trainable yet). With
    ``gate``, the initialization's step-0 check runs first (gate.py) and refuses a broken one."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    seed_everything(int(run.hp["seed"]))  # LoRA's init and dropout draw from torch's RNG
    # Sharded: every weight fp32 (FSDP all-gathers one dtype per unit); each process holds 1/N of them.
    dtype = torch.bfloat16 if run.low_precision and not run.ranks.sharded else torch.float32
    # Table 13's dropout and attention dropout, on the fields this architecture has (none of the former for Llama).
    dropout = dropout_overrides(AutoConfig.from_pretrained(run.model_dir), run.hp)
    model = AutoModelForCausalLM.from_pretrained(run.model_dir, dtype=dtype, **dropout).to(run.device)
    checked = None
    if gate is not None:  # before the loss's hooks and sharding: the plain model, whole rows
        text = run.curve.sentences if run.curve else gate.fallback_sentences
        batch = run.curve.spec.batch_size if run.curve else 8
        checked = check_init(
            model, run.tokenizer, gate, text, batch_size=batch, device_type=run.device.type, bf16=run.use_bf16
        )
    loss_fn = LossComputer(model, run.objective, model.get_output_embeddings())
    if run.low_precision and loss_fn.extra_head is not None:
        loss_fn.extra_head.float()  # trained, so fp32 like every trainable parameter
    if run.ranks.sharded:
        shard.shard_model(model, loss_fn.extra_head, decoder_parts(model)[0])
    state = TrainState(model=model, loss_fn=loss_fn, init_gate=checked)
    if run.curve and checked and "bits_per_char" in checked:  # the gate scored the curve's text: its step-0 point
        state.curve.append(curve_row(0, 0, checked["bits_per_char"], checked["n_sentences"], checked["seconds"]))
    return state
