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
- Micro-batches: ``micro_batch`` re-splits each step's batch_size x grad_accum blocks (null: batch_size); "auto"
  takes the largest that ``workflow_scripts.gpu`` says fits the GPU's memory. Losses stay on the device and are read
  back once per log interval.
- Optimization: AdamW (betas, eps, weight decay on matrices only, like HF Trainer), cosine schedule with linear warmup,
  gradient clipping at 1.0 (HF Trainer's default), bf16 autocast and gradient checkpointing on CUDA, fp32 on CPU.
- Resume: every ``checkpoint_every`` optimizer steps, once ``checkpoint_minutes`` of wall time have passed since the
  last one (default 30), on SIGTERM or SIGUSR1 (Slurm sends USR1 ten minutes before the time limit: rules/lapt.smk),
  at the end of every stage and at the end,
  ``<checkpoint-dir>/checkpoint.safetensors`` is replaced atomically with the parameters trained in any stage so far,
  the stage's optimizer and scheduler, step, RNG states, loss history and held-out curve rows (tensors in
  safetensors, the rest as JSON: nothing is unpickled on load). A rerun with the same arguments rebuilds the stage it
  was written in (LoRA wrapping included), continues from it and reaches the same result as an uninterrupted run. The
  checkpoint is deleted only after the model, loss curve and stats are all written (a crash in between resumes at the
  final step and just rewrites the outputs).

The package, one module per part (torch is imported only inside functions, so reading the registries is cheap):
``hparams`` (defaults, step schedule, stage ends), ``data`` (packing blocks), ``micro`` (micro-batches),
``procedures`` (the ``PROCEDURES`` registry, built from the stage table of workflow_scripts/procedure_stages.py),
``objective`` (clm, mtp), ``checkpoint`` (file format, RNG states), ``curve`` (the held-out bits-per-character curve,
training.curve_points), ``run`` (``Run``, ``TrainState``: tokenizing D, laying out the steps, loading the model,
the step-0 gate), ``loop`` (``train``: a flat loop over enter stage, optimizer step, save/resume), ``outputs``
(the model folder, loss curve and stats), ``shard`` (one run over N GPUs of a node with FSDP, launched by torchrun;
the identity for one process), ``tracking`` (the config's tracking block: TensorBoard, W&B, MLflow or trackio),
``testhooks`` (the tests' kill, hold and signal points: step hooks that the command line passes to ``train`` only
when a test asks for them), ``cli`` (the command line).
"""

from workflow_scripts.lapt.checkpoint import CHECKPOINT_FILE, load_checkpoint, remove_checkpoint, save_checkpoint
from workflow_scripts.lapt.cli import STOP_SIGNALS, main
from workflow_scripts.lapt.data import build_blocks, pack_blocks
from workflow_scripts.lapt.hparams import DEFAULT_HPARAMS, resolve_hparams, schedule_lengths, stage_ends
from workflow_scripts.lapt.loop import TrainingInterrupted, train
from workflow_scripts.lapt.objective import OBJECTIVES, LossComputer
from workflow_scripts.lapt.procedures import PROCEDURES, Procedure, Stage, StageContext
from workflow_scripts.lapt.testhooks import HOLD_AT_STEP_ENV, KILL_AT_STEP_ENV, SIGNAL_AT_STEP_ENV

__all__ = [
    "CHECKPOINT_FILE",
    "DEFAULT_HPARAMS",
    "HOLD_AT_STEP_ENV",
    "KILL_AT_STEP_ENV",
    "OBJECTIVES",
    "PROCEDURES",
    "SIGNAL_AT_STEP_ENV",
    "STOP_SIGNALS",
    "LossComputer",
    "Procedure",
    "Stage",
    "StageContext",
    "TrainingInterrupted",
    "build_blocks",
    "load_checkpoint",
    "main",
    "pack_blocks",
    "remove_checkpoint",
    "resolve_hparams",
    "save_checkpoint",
    "schedule_lengths",
    "stage_ends",
    "train",
]
