"""Language-adaptive pre-training (LAPT) of a source or expanded model on the adaptation corpus D (paper 002 §5, §6.6).

A plain PyTorch loop (no HF Trainer) so that the trained parameter set and resuming are explicit:

- Data: every non-blank line of D is tokenized with the model folder's tokenizer (no BOS/EOS added per line), the
  sentences are joined with one EOS token between consecutive sentences, concatenated into one stream and cut into
  blocks of ``seq_len`` tokens; the last partial block is dropped (§6.4). Blocks are reshuffled every epoch by a
  generator seeded with ``seed + epoch``: the order depends on the seed alone, not on any RNG state to restore.
- Procedures (§5): ``2x2LS`` trains the bottom-2 and top-2 transformer layers, the input embeddings, the LM head
  (tied or not), the final norm and any extra heads; ``full`` trains everything; ``LoRA`` adds rank-8 LoRA (alpha 32,
  dropout 0.05, Table 13) to all linear layers, trains the embeddings and LM head fully, and merges before saving.
  Frozen parameters get ``requires_grad=False`` and are left out of the optimizer, so weight decay and Adam momentum
  cannot move them: they stay bit-identical.
- Multi-stage procedures run their stages in order on one step budget (``stage_split``: fractions of the total steps,
  default equal shares), each stage with a fresh AdamW and its own warmup + cosine schedule, as if each were its own
  run; the data order runs on across stages (two epochs in all, as for the single-stage procedures).
  ``2-stage`` (Cui et al. 2023, cited in §5): embeddings + LM head, then ``LoRA`` (which, as in Cui et al. and
  paper 002's "we tune the embeddings and language modeling head in each case", still trains embeddings and head).
  ``EEVE`` (EEVE §2.3): 1 new input rows; 2 new output rows; 3 new input + output rows; 4 all output rows; 5 new input
  rows + all output rows; 6 all parameters; 7 internal layers (all but embeddings and head, final norm included).
  New rows are ids >= ``n_source_rows`` (the source model's embedding rows, from the initialize report). Rows outside
  a stage's set get no gradient (so no part in clipping or Adam moments) and are copied back after every optimizer
  step, because AdamW's decoupled weight decay would still shrink them. On a tied model input and output rows are one
  matrix: stages 1-3 all train the new rows of it, stages 4-5 all of it. ``eeve_layers: LoRA`` trains stages 6-7's
  layers through LoRA (EEVE used QLoRA in stage 6; full AdamW on a 7B model does not fit one 80 GB GPU).
- ``weights_dtype: bf16`` keeps frozen weights in bf16 (half their memory) and trainable ones, their gradients and
  Adam states in fp32; the forward runs in bf16 autocast, also on the CPU; the saved model is bf16.
- Objectives: ``clm``; ``mtp`` adds one extra head, initialized from the LM head, that predicts token t+2 from the same
  final hidden state; the loss is the sum of both token-averaged losses. The extra head is not saved.
- Optimization: AdamW (betas, eps, weight decay on matrices only, like HF Trainer), cosine schedule with linear warmup,
  gradient clipping at 1.0 (HF Trainer's default), bf16 autocast and gradient checkpointing on CUDA, fp32 on CPU.
- Resume: every ``checkpoint_every`` optimizer steps, at the end of every stage and at the end,
  ``<checkpoint-dir>/checkpoint.pt`` is replaced atomically with the parameters trained in any stage so far, the
  stage's optimizer and scheduler, step, RNG states and loss history. A rerun with the same arguments rebuilds the
  stage it was written in (LoRA wrapping included), continues from it and reaches the same result as an uninterrupted
  run. The checkpoint is deleted only after the model, loss curve and stats are all written (a crash in between
  resumes at the final step and just rewrites the outputs).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import random
import resource
import shutil
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workflow_scripts.io import (
    atomic_path,
    read_lines,
    seed_everything,
    set_threads,
    setup_logging,
    write_json,
    write_text,
)

log = logging.getLogger("vocabexp.lapt")

OBJECTIVES = ("clm", "mtp")
CHECKPOINT_FILE = "checkpoint.pt"
STOP_SIGNALS = (signal.SIGTERM, signal.SIGUSR1)

# Paper 002 §6.6 and Table 13. Table 13 lists "warmup steps 100" while METHODS gives 5%: the ratio is the default;
# set warmup_steps to follow Table 13 literally (it overrides the ratio when not null).
DEFAULT_HPARAMS: dict[str, Any] = {
    "epochs": 2,
    "batch_size": 8,
    "lr": 1e-4,
    "scheduler": "cosine",
    "warmup_ratio": 0.05,
    "warmup_steps": None,
    "weight_decay": 0.01,
    "adam_beta1": 0.9,
    "adam_beta2": 0.999,
    "adam_eps": 1e-8,
    "max_grad_norm": 1.0,
    "seed": 42,
    "max_steps": None,
    "grad_accum": 1,
    "checkpoint_every": 50,
    "log_every": 10,
    "lora_r": 8,
    "lora_alpha": 32,
    "lora_dropout": 0.05,
    "gradient_checkpointing": None,  # null: on with CUDA, off on CPU
    # Multi-stage procedures (2-stage, EEVE): fractions of the total steps per stage; null = equal shares.
    "stage_split": None,
    # fp32: every weight fp32 (bf16 autocast on CUDA). bf16: frozen weights bf16, trainable ones and Adam states fp32.
    "weights_dtype": "fp32",
    # EEVE stages 6-7 train the transformer layers fully ("full") or through rank-lora_r LoRA ("LoRA", as EEVE §2.3).
    "eeve_layers": "full",
}
# Changing these does not change the result, so a checkpoint written under other values may still be resumed.
_RESUME_NEUTRAL = ("checkpoint_every", "log_every", "gradient_checkpointing")


class TrainingInterrupted(RuntimeError):
    """Raised after a stop request (SIGTERM, SIGUSR1) once the checkpoint of the last finished step is written."""


def resolve_hparams(overrides: dict[str, Any] | None) -> dict[str, Any]:
    """The paper's defaults updated with ``overrides``; unknown keys are an error naming the allowed ones."""
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(DEFAULT_HPARAMS))
    if unknown:
        raise ValueError(f"unknown LAPT hparams {unknown}; allowed keys: {sorted(DEFAULT_HPARAMS)}")
    hp = {**DEFAULT_HPARAMS, **overrides}
    if hp["scheduler"] != "cosine":
        raise ValueError(f"hparams.scheduler={hp['scheduler']!r}: only 'cosine' (paper 002 Table 13) is implemented")
    if float(hp["epochs"]) <= 0:
        raise ValueError(f"hparams.epochs must be > 0, got {hp['epochs']!r}")
    for key in ("batch_size", "grad_accum", "checkpoint_every", "log_every"):
        if int(hp[key]) < 1:
            raise ValueError(f"hparams.{key} must be >= 1, got {hp[key]!r}")
    if hp["weights_dtype"] not in ("fp32", "bf16"):
        raise ValueError(f"hparams.weights_dtype must be 'fp32' or 'bf16', got {hp['weights_dtype']!r}")
    if hp["eeve_layers"] not in ("full", "LoRA"):
        raise ValueError(f"hparams.eeve_layers must be 'full' or 'LoRA', got {hp['eeve_layers']!r}")
    if hp["stage_split"] is not None and (
        not isinstance(hp["stage_split"], list | tuple) or not all(float(f) > 0 for f in hp["stage_split"])
    ):
        raise ValueError(f"hparams.stage_split must be null or a list of positive numbers, got {hp['stage_split']!r}")
    if hp["max_steps"] is not None and int(hp["max_steps"]) < 1:
        raise ValueError(f"hparams.max_steps must be null or >= 1, got {hp['max_steps']!r}")
    return hp


# ----------------------------------------------------------------------------------------------------------- data


def pack_blocks(token_lists: list[list[int]], eos_id: int, seq_len: int) -> tuple[list[list[int]], int]:
    """Join sentences with one EOS between consecutive ones, concatenate, and cut into full blocks of ``seq_len``.

    Returns the blocks and the length of the whole stream (the remainder ``stream % seq_len`` is dropped).
    """
    stream: list[int] = []
    for i, ids in enumerate(token_lists):
        if i:
            stream.append(eos_id)
        stream.extend(ids)
    n_blocks = len(stream) // seq_len
    return [stream[b * seq_len : (b + 1) * seq_len] for b in range(n_blocks)], len(stream)


def build_blocks(lines: list[str], tokenizer, seq_len: int, source: str = "corpus"):
    """Tokenize D (one sentence a line) and pack it into a [n_blocks, seq_len] LongTensor (paper 002 §6.4).

    Blank lines are skipped. Raises ValueError naming ``source`` when D is too short for a single block.
    """
    import torch

    if seq_len < 3:
        raise ValueError(f"seq_len must be at least 3 (mtp predicts t+2), got {seq_len}")
    eos = tokenizer.eos_token_id
    if eos is None:
        raise ValueError(f"the tokenizer of the model has no EOS token; it is needed to join the sentences of {source}")
    sentences = [line for line in lines if line.strip()]
    token_lists = tokenizer(sentences, add_special_tokens=False)["input_ids"] if sentences else []
    blocks, n_tokens = pack_blocks(token_lists, eos, seq_len)
    if not blocks:
        raise ValueError(
            f"{source}: {len(sentences)} sentences give {n_tokens} tokens (EOS joins included), fewer than one block "
            f"of seq_len={seq_len}; use a smaller seq_len (at most {max(n_tokens, 1)}) or more text"
        )
    return torch.tensor(blocks, dtype=torch.long), n_tokens


# ----------------------------------------------------------------------------------------------------- procedures


def _decoder_parts(model):
    """The transformer layer list and the final norm of a decoder-only HF model (Llama, Gemma, Mistral, ...)."""
    base = model.base_model
    layers = getattr(base, "layers", None)
    norm = getattr(base, "norm", None)
    if layers is None or norm is None:
        raise ValueError(
            f"{type(model).__name__}: cannot find `layers` and `norm` on {type(base).__name__}; "
            "add this architecture to workflow_scripts.lapt._decoder_parts"
        )
    return layers, norm


def _set_trainable(model, modules) -> None:
    model.requires_grad_(False)
    for m in modules:
        m.requires_grad_(True)


def _prepare_2x2ls(model, hp: dict[str, Any]):
    """2x2 LS (paper 002 §5, Remy et al. 2024): bottom-2 and top-2 layers, embeddings, LM head and final norm."""
    layers, norm = _decoder_parts(model)
    if len(layers) < 4:
        raise ValueError(f"2x2LS needs at least 4 transformer layers, the model has {len(layers)}")
    picked = [layers[0], layers[1], layers[-2], layers[-1]]
    _set_trainable(model, [*picked, norm, model.get_input_embeddings(), model.get_output_embeddings()])
    return model


def _prepare_full(model, hp: dict[str, Any]):
    """All parameters (CPT with full fine-tuning)."""
    model.requires_grad_(True)
    return model


def _prepare_lora(model, hp: dict[str, Any]):
    """LoRA on all linear layers (paper 002 §5; rank, alpha, dropout of Table 13); embeddings and LM head fully trained.

    The embedding and head are trained in place rather than through peft's modules_to_save, which would untie a tied
    head and save copies; merge_and_unload then gives back the plain model.
    """
    from peft import LoraConfig, get_peft_model

    emb, head = model.get_input_embeddings(), model.get_output_embeddings()
    config = LoraConfig(
        r=int(hp["lora_r"]),
        lora_alpha=hp["lora_alpha"],
        lora_dropout=hp["lora_dropout"],
        target_modules="all-linear",  # peft excludes the output layer from "all-linear"
        bias="none",
        task_type="CAUSAL_LM",
    )
    peft_model = get_peft_model(model, config)
    emb.requires_grad_(True)
    head.requires_grad_(True)
    return peft_model


def _prepare_embeddings(model, hp: dict[str, Any]):
    """Stage 1 of 2-stage (paper 002 §5, Cui et al. 2023): the input embeddings and the LM head only."""
    _set_trainable(model, [model.get_input_embeddings(), model.get_output_embeddings()])
    return model


@dataclass(frozen=True)
class StageContext:
    """What a stage may need beyond the model: the number of source vocabulary rows (EEVE's "new rows" start there)."""

    n_source_rows: int | None = None


# A stage's prepare returns the (possibly wrapped) model and its row limits: (parameter, n) pairs whose rows [0, n)
# stay frozen although the parameter is trainable (EEVE's "new rows"). Everything else it leaves requires_grad=False.
RowLimits = list[tuple[Any, int]]


def _whole(prepare: Callable[[Any, dict[str, Any]], Any]) -> Callable[[Any, dict[str, Any], StageContext], Any]:
    return lambda model, hp, ctx: (prepare(model, hp), [])


# EEVE's seven stages (EEVE §2.3): rows of the input embeddings and of the LM head ("new": ids >= n_source_rows,
# "all": every row, None: frozen), and whether the internal layers (everything but embeddings and head) train.
EEVE_STAGES: tuple[tuple[str, str | None, str | None, bool], ...] = (
    ("1-new-input", "new", None, False),
    ("2-new-output", None, "new", False),
    ("3-new-input-output", "new", "new", False),
    ("4-all-output", None, "all", False),
    ("5-new-input-all-output", "new", "all", False),
    ("6-all", "all", "all", True),
    ("7-internal", None, None, True),
)


def _eeve_stage(input_rows: str | None, output_rows: str | None, internal: bool):
    """One EEVE stage (EEVE §2.3). On a tied model input and output are one matrix: "all" on either side wins, so
    stages 1-3 all train the new rows of the shared matrix and stages 4-5 the whole shared matrix."""

    def prepare(model, hp: dict[str, Any], ctx: StageContext):
        n_src = ctx.n_source_rows
        n_rows = model.get_input_embeddings().weight.shape[0]
        if n_src is None or not 0 < n_src < n_rows:
            raise ValueError(
                f"EEVE trains the rows of new tokens (ids >= the source vocabulary size): needs n_source_rows "
                f"(--n-source-rows or --init-report) between 1 and {n_rows - 1}, got {n_src}"
            )
        if internal and hp["eeve_layers"] == "LoRA":
            # EEVE §2.3 trains stage 6 with (Q)LoRA: the layers learn through LoRA (added once, kept for stage 7).
            if not hasattr(model, "peft_config"):
                model = _prepare_lora(model, hp)
            model.requires_grad_(False)
            for name, p in model.named_parameters():
                if "lora_" in name:
                    p.requires_grad_(True)
        else:
            model.requires_grad_(internal)
        emb, head = model.get_input_embeddings(), model.get_output_embeddings()
        emb.requires_grad_(False)
        head.requires_grad_(False)
        limits: dict[int, tuple[Any, int]] = {}
        for module, rows in ((emb, input_rows), (head, output_rows)):
            if rows is None:
                continue
            w = module.weight
            first = 0 if rows == "all" else n_src
            limits[id(w)] = (w, min(first, limits.get(id(w), (w, first))[1]))
            if rows == "all":  # a head bias (rare) belongs to its rows; new-row stages leave it frozen
                bias = getattr(module, "bias", None)
                if bias is not None:
                    bias.requires_grad_(True)
        for w, _ in limits.values():
            w.requires_grad_(True)
        return model, [(w, first) for w, first in limits.values() if first > 0]

    return prepare


def _unwrap(model):
    """Merge LoRA (if any stage added it) and return the plain HF model."""
    return model.merge_and_unload() if hasattr(model, "merge_and_unload") else model


@dataclass(frozen=True)
class Stage:
    """One training stage: how it selects (and possibly adds) trainable parameters and rows."""

    name: str
    prepare: Callable[[Any, dict[str, Any], StageContext], tuple[Any, RowLimits]]


@dataclass(frozen=True)
class Procedure:
    """A training procedure: its stages, run in order on one step budget, and how it unwraps before saving."""

    stages: tuple[Stage, ...]
    finalize: Callable[[Any], Any] = _unwrap


PROCEDURES: dict[str, Procedure] = {
    "2x2LS": Procedure((Stage("2x2LS", _whole(_prepare_2x2ls)),)),
    "full": Procedure((Stage("full", _whole(_prepare_full)),)),
    "LoRA": Procedure((Stage("LoRA", _whole(_prepare_lora)),)),
    # Cui et al. (2023), cited by paper 002 §5: embeddings + head, then LoRA with embeddings and head still trained.
    "2-stage": Procedure((Stage("embeddings", _whole(_prepare_embeddings)), Stage("LoRA", _whole(_prepare_lora)))),
    "EEVE": Procedure(tuple(Stage(name, _eeve_stage(i, o, x)) for name, i, o, x in EEVE_STAGES)),
}


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


# ------------------------------------------------------------------------------------------------------- objective


class LossComputer:
    """Token-summed training losses for ``clm`` or ``mtp`` (paper 002 §5; Gloeckle et al. 2024 with one extra head).

    For mtp the extra head reads the LM head's input (captured by a forward hook, so any wrapper works) and
    predicts token t+2.
    """

    def __init__(self, model, objective: str, output_embeddings):
        import torch

        if objective not in OBJECTIVES:
            raise ValueError(f"unknown objective {objective!r}; expected one of {OBJECTIVES}")
        self.model = model
        self.objective = objective
        self.extra_head = None
        self._hidden = None
        self.softcap = getattr(model.config, "final_logit_softcapping", None)
        if objective == "mtp":
            w = output_embeddings.weight
            head = torch.nn.Linear(w.shape[1], w.shape[0], bias=False, device=w.device, dtype=w.dtype)
            with torch.no_grad():
                head.weight.copy_(w)  # initialized from the LM head (§5), then trained as its own copy
            self.extra_head = head
            output_embeddings.register_forward_hook(self._capture)

    def _capture(self, module, inputs, output) -> None:
        self._hidden = inputs[0]

    def extra_parameters(self) -> list[tuple[str, Any]]:
        return [] if self.extra_head is None else [("mtp_head.weight", self.extra_head.weight)]

    def __call__(self, ids, n1: int, n2: int):
        """Loss of one micro-batch, normalized by the step's predicted positions ``n1`` (t+1) and ``n2`` (t+2).

        Normalizing by the whole step's counts gives every token the same weight whatever the accumulation split.
        """
        import torch
        import torch.nn.functional as F

        logits = self.model(input_ids=ids, use_cache=False).logits
        loss = F.cross_entropy(logits[:, :-1].float().flatten(0, 1), ids[:, 1:].flatten(), reduction="sum") / n1
        if self.extra_head is None:
            return loss
        logits2 = self.extra_head(self._hidden[:, :-2])
        self._hidden = None
        if self.softcap:  # Gemma2 caps the LM head's logits; treat the extra head alike
            logits2 = torch.tanh(logits2 / self.softcap) * self.softcap
        return loss + F.cross_entropy(logits2.float().flatten(0, 1), ids[:, 2:].flatten(), reduction="sum") / n2


# -------------------------------------------------------------------------------------------------------- training


def _rng_state() -> dict[str, Any]:
    import numpy as np
    import torch

    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict[str, Any]) -> None:
    import numpy as np
    import torch

    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _peak_memory(device) -> tuple[int, str]:
    import torch

    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device)), "cuda_max_memory_allocated"
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024, "ru_maxrss"  # Linux reports KiB


def schedule_lengths(n_blocks: int, hp: dict[str, Any]) -> dict[str, int]:
    """Micro-batches and optimizer steps per epoch, total steps (capped by max_steps) and warmup steps."""
    micro = math.ceil(n_blocks / int(hp["batch_size"]))
    per_epoch = math.ceil(micro / int(hp["grad_accum"]))
    total = max(1, math.ceil(per_epoch * float(hp["epochs"])))  # fractional epochs end mid-epoch
    if hp["max_steps"] is not None:
        total = min(total, int(hp["max_steps"]))
    warmup = int(hp["warmup_steps"]) if hp["warmup_steps"] is not None else math.ceil(float(hp["warmup_ratio"]) * total)
    return {"micro_per_epoch": micro, "steps_per_epoch": per_epoch, "total_steps": total, "warmup_steps": warmup}


def _epoch_order(n_blocks: int, seed: int, epoch: int):
    import torch

    return torch.randperm(n_blocks, generator=torch.Generator().manual_seed(seed + epoch))


def _tensor_bytes(model, loss_fn: LossComputer, optimizer) -> dict[str, int]:
    """Bytes held by weights, gradients and optimizer states now (what gpu_estimate's arithmetic must match)."""
    import torch

    params = {id(p): p for p in model.parameters()} | {id(p): p for _, p in loss_fn.extra_parameters()}
    states = [t for st in optimizer.state.values() for t in st.values() if torch.is_tensor(t) and t.ndim > 0]
    return {
        "weights": sum(p.numel() * p.element_size() for p in params.values()),
        "gradients": sum(p.grad.numel() * p.grad.element_size() for p in params.values() if p.grad is not None),
        "optimizer": sum(t.numel() * t.element_size() for t in states),
    }


def _weights_dtype(hp: dict[str, Any]):
    import torch

    return {"fp32": torch.float32, "bf16": torch.bfloat16}[hp["weights_dtype"]]


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
) -> dict[str, Any]:
    """Run LAPT (paper 002 §5, §6.6) from ``model_dir`` on ``train_file``, resuming from ``checkpoint_dir`` if present.

    Writes the trained HF model folder to ``out_dir`` (and the loss curve TSV); returns the stats dictionary.
    ``n_source_rows`` (EEVE only) is the source vocabulary size: rows at or above it are the new tokens'.
    Once ``should_stop()`` is true, the current step is finished and checkpointed and TrainingInterrupted is raised.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, get_cosine_schedule_with_warmup

    if procedure not in PROCEDURES:
        raise ValueError(f"unknown procedure {procedure!r}; implemented: {sorted(PROCEDURES)}")
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; expected one of {OBJECTIVES}")
    hp = resolve_hparams(hparams)
    wall_start = time.time()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    low_precision = hp["weights_dtype"] == "bf16"
    # bf16 autocast on CUDA; on the CPU only when frozen weights are bf16 (fp32 activations would not meet them).
    use_bf16 = device.type == "cuda" or low_precision

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    blocks, corpus_tokens = build_blocks(read_lines(train_file), tokenizer, seq_len, source=str(train_file))
    n_blocks = blocks.shape[0]
    lengths = schedule_lengths(n_blocks, hp)
    total_steps, per_epoch = lengths["total_steps"], lengths["steps_per_epoch"]
    proc = PROCEDURES[procedure]
    ends = stage_ends(total_steps, len(proc.stages), hp["stage_split"])
    starts = [0, *ends[:-1]]
    ctx = StageContext(n_source_rows=n_source_rows)

    seed_everything(int(hp["seed"]))  # LoRA's init and dropout draw from torch's RNG
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=_weights_dtype(hp)).to(device)
    output_embeddings = model.get_output_embeddings()
    grad_ckpt = device.type == "cuda" if hp["gradient_checkpointing"] is None else bool(hp["gradient_checkpointing"])
    loss_fn = LossComputer(model, objective, output_embeddings)
    if low_precision and loss_fn.extra_head is not None:
        loss_fn.extra_head.float()  # trained, so fp32 like every trainable parameter

    # Stage state. Parameters trained in any stage so far ("touched") are what the checkpoint must hold.
    st: dict[str, Any] = {"index": -1, "named": [], "limits": [], "snapshots": [], "optimizer": None, "scheduler": None}
    touched: dict[int, Any] = {}
    stage_info: list[dict[str, Any]] = []

    def enter_stage(i: int) -> None:
        nonlocal model
        model, limits = proc.stages[i].prepare(model, hp, ctx)
        if low_precision:
            # Trainable parameters are kept (and stepped) in fp32; only frozen weights are bf16.
            for p in model.parameters():
                if p.requires_grad and p.dtype != torch.float32:
                    p.data = p.data.float()
        if grad_ckpt:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.train()
        loss_fn.model = model
        named = [(n, p) for n, p in model.named_parameters() if p.requires_grad] + loss_fn.extra_parameters()
        touched.update((id(p), p) for _, p in named)
        frozen_rows = {id(p): first for p, first in limits}
        n_trainable = sum(p.numel() - frozen_rows.get(id(p), 0) * p[0].numel() for _, p in named)
        # Weight decay on matrices only; biases and norm weights are exempt, as in HF Trainer. A fresh optimizer and
        # schedule per stage, as if each stage were its own run (Cui et al. 2023; EEVE §3 warms up in every stage).
        groups = [
            {"params": [p for _, p in named if p.ndim >= 2], "weight_decay": float(hp["weight_decay"])},
            {"params": [p for _, p in named if p.ndim < 2], "weight_decay": 0.0},
        ]
        optimizer = torch.optim.AdamW(
            [g for g in groups if g["params"]],
            lr=float(hp["lr"]),
            betas=(float(hp["adam_beta1"]), float(hp["adam_beta2"])),
            eps=float(hp["adam_eps"]),
        )
        n_steps = ends[i] - starts[i]
        warmup = int(hp["warmup_steps"]) if hp["warmup_steps"] is not None else math.ceil(hp["warmup_ratio"] * n_steps)
        st.update(
            index=i,
            named=named,
            limits=limits,
            optimizer=optimizer,
            scheduler=get_cosine_schedule_with_warmup(optimizer, warmup, n_steps),
        )
        take_snapshots()
        info = {
            "stage": i + 1,
            "name": proc.stages[i].name,
            "first_step": starts[i] + 1,
            "last_step": ends[i],
            "warmup_steps": warmup,
            "trainable_parameters": n_trainable,
            "total_parameters": sum(p.numel() for p in model.parameters())
            + sum(p.numel() for _, p in loss_fn.extra_parameters()),
            "row_limited": [[n, frozen_rows[id(p)]] for n, p in named if id(p) in frozen_rows],
        }
        stage_info[i:] = [info]
        log.info("stage %d/%d %s: steps %d-%d, %d parameters trainable", i + 1, len(ends), info["name"],
                 info["first_step"], info["last_step"], n_trainable)  # fmt: skip

    def take_snapshots() -> None:
        # Frozen rows of a row-limited matrix are copied back after every optimizer step: zeroing their gradient is
        # not enough, AdamW's decoupled weight decay (and any momentum) would still move them.
        st["snapshots"] = [(p, first, p.detach()[:first].clone()) for p, first in st["limits"]]

    def touched_named() -> list[tuple[str, Any]]:
        named_all = list(model.named_parameters()) + loss_fn.extra_parameters()
        return [(n, p) for n, p in named_all if id(p) in touched]

    # What must match for a checkpoint to be resumed; the data by content (not path), so a moved work dir still resumes.
    fingerprint = {
        "blocks_sha256": hashlib.sha256(blocks.numpy().tobytes()).hexdigest(),
        "procedure": procedure,
        "objective": objective,
        "seq_len": seq_len,
        "n_blocks": n_blocks,
        "hparams": {k: v for k, v in hp.items() if k not in _RESUME_NEUTRAL},
        "stage_ends": ends,
        "n_source_rows": n_source_rows,
    }
    ckpt_dir = Path(checkpoint_dir)
    ckpt_path = ckpt_dir / CHECKPOINT_FILE
    step, history, train_seconds, tokens_seen, resumed_from = 0, [], 0.0, 0, []
    if ckpt_path.exists():
        # Our own file (it holds RNG tuples, hence weights_only=False). Loaded on the CPU: RNG states must stay there,
        # copy_ and the optimizer's load_state_dict move the rest to the parameters' device.
        ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=False)
        if ckpt["fingerprint"] != fingerprint:
            diff = sorted(k for k in fingerprint if ckpt["fingerprint"].get(k) != fingerprint[k])
            raise ValueError(
                f"checkpoint {ckpt_path} was written by a run with different {diff}; delete {ckpt_dir} to start over"
            )
        for i in range(ckpt["stage"] + 1):  # rebuild the structure (LoRA wrapping) the checkpoint was written in
            enter_stage(i)
        params = dict(touched_named())
        if sorted(params) != sorted(ckpt["trainable"]):
            raise ValueError(f"checkpoint {ckpt_path} holds other parameters than this run trains; delete {ckpt_dir}")
        with torch.no_grad():
            for name, tensor in ckpt["trainable"].items():
                params[name].copy_(tensor)
        take_snapshots()
        st["optimizer"].load_state_dict(ckpt["optimizer"])
        st["scheduler"].load_state_dict(ckpt["scheduler"])
        step, history = ckpt["step"], ckpt["history"]
        train_seconds, tokens_seen = ckpt["train_seconds"], ckpt["tokens_seen"]
        resumed_from = [*ckpt["resumed_from"], step]
        _set_rng_state(ckpt["rng"])
        log.info("resuming from %s at step %d of %d (stage %d)", ckpt_path, step, total_steps, ckpt["stage"] + 1)
        del ckpt

    def save_checkpoint() -> None:
        state = {
            "fingerprint": fingerprint,
            "stage": st["index"],
            "trainable": {n: p.detach().cpu().clone() for n, p in touched_named()},
            "optimizer": st["optimizer"].state_dict(),
            "scheduler": st["scheduler"].state_dict(),
            "step": step,
            "history": history,
            "train_seconds": train_seconds,
            "tokens_seen": tokens_seen,
            "resumed_from": resumed_from,
            "rng": _rng_state(),
        }
        with atomic_path(ckpt_path) as tmp:
            torch.save(state, tmp)

    log.info(
        "LAPT %s/%s seq_len=%d: %d blocks, %d steps/epoch, %d steps in %d stage(s) ending at %s, %s%s",
        procedure, objective, seq_len, n_blocks, per_epoch, total_steps, len(ends), ends, device,
        " bf16 autocast" if use_bf16 else " fp32",
    )  # fmt: skip
    bs, ga, micro_per_epoch = int(hp["batch_size"]), int(hp["grad_accum"]), lengths["micro_per_epoch"]
    order, order_epoch = None, -1
    while step < total_steps:
        stage = next(i for i, e in enumerate(ends) if step < e)
        if stage != st["index"]:
            enter_stage(stage)
        optimizer, scheduler = st["optimizer"], st["scheduler"]
        t0 = time.time()
        epoch, in_epoch = divmod(step, per_epoch)
        if epoch != order_epoch:
            order, order_epoch = _epoch_order(n_blocks, int(hp["seed"]), epoch), epoch
        micro = range(in_epoch * ga, min((in_epoch + 1) * ga, micro_per_epoch))
        batches = [blocks[order[m * bs : (m + 1) * bs]] for m in micro]
        n1_total = sum(b.shape[0] * (seq_len - 1) for b in batches)
        n2_total = sum(b.shape[0] * (seq_len - 2) for b in batches)
        lr = scheduler.get_last_lr()[0]
        step_loss = 0.0
        for batch in batches:
            ids = batch.to(device)
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=use_bf16):
                loss = loss_fn(ids, n1_total, n2_total)
            loss.backward()
            step_loss += float(loss.detach())
        for p, first in st["limits"]:  # frozen rows take no part in clipping or Adam's moments
            if p.grad is not None:
                p.grad[:first] = 0
        if hp["max_grad_norm"] is not None:
            torch.nn.utils.clip_grad_norm_([p for _, p in st["named"]], float(hp["max_grad_norm"]))
        optimizer.step()
        scheduler.step()
        if step + 1 == ends[stage]:  # the stage's last step: its gradients and Adam states are all allocated
            stage_info[stage]["measured_bytes"] = _tensor_bytes(model, loss_fn, optimizer)
        optimizer.zero_grad(set_to_none=True)
        with torch.no_grad():
            for p, first, rows in st["snapshots"]:
                p[:first] = rows
        step += 1
        tokens_seen += sum(b.numel() for b in batches)
        train_seconds += time.time() - t0
        history.append(
            {
                "step": step,
                "epoch": round(step / per_epoch, 4),
                "lr": lr,
                "loss": step_loss,
                "tokens_seen": tokens_seen,
                "stage": stage + 1,
            }
        )
        if step % int(hp["log_every"]) == 0 or step == total_steps:
            log.info(
                "step %d/%d stage %d epoch %.3f lr %.3e loss %.4f (%.0f tokens/s)",
                step, total_steps, stage + 1, step / per_epoch, lr, step_loss, tokens_seen / max(train_seconds, 1e-9),
            )  # fmt: skip
        stop = should_stop is not None and should_stop()
        if step % int(hp["checkpoint_every"]) == 0 or step == total_steps or stop or step == ends[stage]:
            save_checkpoint()
        if stop and step < total_steps:
            raise TrainingInterrupted(f"stopped on request after step {step} of {total_steps}; checkpoint {ckpt_path}")
    if not history:
        raise RuntimeError("no optimizer step was taken")  # total_steps >= 1 whenever there is a block

    n_total = stage_info[-1]["total_parameters"]
    model = proc.finalize(model)
    model.eval()
    if grad_ckpt:
        model.gradient_checkpointing_disable()
    if low_precision:
        model.to(torch.bfloat16)  # saved as it was loaded: the fp32 trainables rounded once, as inference would
    with atomic_path(out_dir) as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
    if loss_curve:
        rows = ["step\tepoch\tlr\tloss\ttokens_seen\tstage"]
        rows += [
            f"{h['step']}\t{h['epoch']}\t{h['lr']:.8e}\t{h['loss']:.6f}\t{h['tokens_seen']}\t{h.get('stage', 1)}"
            for h in history
        ]
        write_text(loss_curve, "\n".join(rows) + "\n")
    peak, peak_kind = _peak_memory(device)
    return {
        "procedure": procedure,
        "objective": objective,
        "seq_len": seq_len,
        "hparams": hp,
        "steps": step,
        "steps_per_epoch": per_epoch,
        "warmup_steps": stage_info[0]["warmup_steps"] if len(stage_info) == 1 else None,
        "stages": stage_info,
        "n_source_rows": n_source_rows,
        "blocks": n_blocks,
        "tokens_per_epoch": n_blocks * seq_len,
        "corpus_tokens": corpus_tokens,
        "dropped_tokens": corpus_tokens - n_blocks * seq_len,
        "tokens_seen": tokens_seen,
        # The largest trainable set of any stage (rows frozen by EEVE not counted): what sizes gradients and Adam.
        "trainable_parameters": max(s["trainable_parameters"] for s in stage_info),
        "total_parameters": n_total,
        "train_seconds": round(train_seconds, 3),
        "wall_seconds_this_run": round(time.time() - wall_start, 3),
        "tokens_per_second": round(tokens_seen / max(train_seconds, 1e-9), 2),
        "peak_memory_bytes": peak,
        "peak_memory_kind": peak_kind,
        "device": str(device),
        "precision": (
            ("bf16 autocast, " if use_bf16 else "")
            + ("bf16 frozen weights, fp32 trainable weights and Adam states" if low_precision else "fp32 weights")
        ),
        "gradient_checkpointing": grad_ckpt,
        "threads": torch.get_num_threads(),
        "first_loss": history[0]["loss"],
        "final_loss": history[-1]["loss"],
        "resumed_from": resumed_from,
        "data_note": "sentences joined with one EOS between them, no BOS; last partial block dropped",
    }


def remove_checkpoint(checkpoint_dir: str | Path) -> None:
    """Delete the resume checkpoint, and its folder when nothing else is in it."""
    ckpt_dir = Path(checkpoint_dir)
    (ckpt_dir / CHECKPOINT_FILE).unlink(missing_ok=True)
    for stale in ckpt_dir.glob(f".{CHECKPOINT_FILE}.*.tmp"):  # left by a kill during a checkpoint write
        shutil.rmtree(stale, ignore_errors=True)
    if ckpt_dir.is_dir() and not any(ckpt_dir.iterdir()):
        ckpt_dir.rmdir()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="HF model folder with its tokenizer (source or initialized expanded)")
    p.add_argument("--train", required=True, help="adaptation corpus D, one sentence a line")
    p.add_argument("--procedure", required=True, choices=sorted(PROCEDURES))
    p.add_argument("--objective", default="clm", choices=OBJECTIVES)
    p.add_argument("--seq-len", type=int, required=True)
    p.add_argument("--hparams", default="{}", help=f"JSON dict overriding {json.dumps(DEFAULT_HPARAMS)}")
    p.add_argument("--out", required=True, help="output HF model folder")
    p.add_argument("--stats", required=True, help="output JSON with counts, timing and memory")
    p.add_argument("--loss-curve", required=True, help="output TSV: step, epoch, lr, loss, tokens_seen")
    p.add_argument("--checkpoint-dir", required=True, help="resume folder (deleted once all outputs are written)")
    rows = p.add_mutually_exclusive_group()
    rows.add_argument("--n-source-rows", type=int, help="EEVE: source vocabulary size (rows >= it are new tokens)")
    rows.add_argument("--init-report", help="EEVE: the initialize step's report JSON (its vocab.source_matrix_rows)")
    p.add_argument("--threads", type=int)
    p.add_argument("--log")
    a = p.parse_args(argv)
    n_source_rows = a.n_source_rows
    if a.init_report:
        n_source_rows = int(json.loads(Path(a.init_report).read_text(encoding="utf-8"))["vocab"]["source_matrix_rows"])
    setup_logging(a.log)
    set_threads(a.threads)
    # Slurm sends SIGTERM at the time limit (or a chosen signal before it with --signal): finish the step, checkpoint,
    # exit non-zero; the rerun resumes.
    stop_requested: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, frame: stop_requested.append(signum)) for sig in STOP_SIGNALS}
    try:
        stats = train(
            a.model,
            a.train,
            a.out,
            procedure=a.procedure,
            objective=a.objective,
            seq_len=a.seq_len,
            hparams=json.loads(a.hparams),
            checkpoint_dir=a.checkpoint_dir,
            loss_curve=a.loss_curve,
            should_stop=lambda: bool(stop_requested),
            n_source_rows=n_source_rows,
        )
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    write_json(a.stats, stats)
    # Only now is the run complete: a crash before this line resumes at the final step and rewrites the outputs.
    remove_checkpoint(a.checkpoint_dir)
    log.info("LAPT done: %s", {k: stats[k] for k in ("steps", "first_loss", "final_loss", "tokens_per_second")})


if __name__ == "__main__":
    sys.exit(main())
