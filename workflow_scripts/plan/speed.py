"""The speed step's workload, GPU memory and time, planned from the settings before any job runs (paper 002 §6.5).

Arithmetic on the models' config.json numbers, not a measurement. A job runs in phases, and only one phase's tensors
live at a time (``job``: Source is loaded for the paired phase only and freed after it):

- **generation** (mt, sum): the evaluated model's weights; per (decoding, batch size) timed, ``batch x beams``
  sequences of ``prompt + max_new_tokens`` tokens in the KV cache (``kv_bytes_per_token``), the prefill's
  activations (an MLP's intermediate tensors over every prompt token) and, for eager attention (Gemma-2, whose
  logit soft-capping needs it), one layer's ``sequences x heads x prompt^2`` scores in bf16 plus their fp32 softmax.
- **paired** (teacher forcing of mt / sum references, the log-likelihood of the choice tasks' choices): the model's and
  Source's weights, one sequence's KV cache (teacher forcing) or, for memory, ``CHOICES`` sequences of the prompt
  (log-likelihood with multi-token choices; the lettered MCF answers take one pass over the prompt, which the time
  counts),
  the prefill's activations and scores, and the logits it keeps (the last prompt position in teacher forcing's
  prefill, the scored positions in the log-likelihood pass).

Time: a decoding step costs the weights read once from HBM plus a per-layer launch overhead of Hugging Face's eager
generation loop (about 0.6 ms a layer, the order seen on A100/H100 at batch 1); a prefill costs its FLOPs at 40 % of
the GPU's dense bf16 peak. Generation is counted at its cap (``max_new_tokens`` per item), so the plan is an upper
bound of the work. ``problems`` refuses settings whose peak does not fit the GPU class, naming the key to change.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from workflow_scripts.gpu.estimate import GPUS as CARDS
from workflow_scripts.gpu.shape import GIB, ModelShape
from workflow_scripts.plan.models import Model, describe_models
from workflow_scripts.plan.resources import GPU_CLASSES, gpu_model_class
from workflow_scripts.tasks import TASKS, TIMED_CHOICE_TASKS

# each task's longest prompt (its spec's prompt_tokens; Table 13 truncates prompts at 4,096)
PROMPT_TOKENS = {name: spec.prompt_tokens for name, spec in TASKS.items()}
# Teacher-forced reference tokens per item: 3 per character of the cut reference (byte fallback of a 3-byte script),
# or a long FLORES sentence / XL-Sum summary in such a byte-level fallback when references are not cut.
TOKENS_PER_CHAR, UNCUT_TARGET_TOKENS = 3, 384
CHOICES = 4  # Belebele and Global-MMLU: four options, each scored as its own sequence (as LightEval scores them)
GENERATION_TASKS = ("mt", "sum")
BEAMS = {"greedy": 1, "paper": 5}  # evaluation.DECODING: the paper's decoding keeps 5 beams (Table 13 b)
DTYPE_BYTES = 2  # bf16 weights, activations and cache on a GPU (evaluation.load_model)
LAYER_OVERHEAD_S = 6e-4
PREFILL_MFU = 0.4
EXTRA_VOCAB = 5000  # the largest |V_new| of the paper grid (Figure 3); a replaced vocabulary (32K) is smaller


def _class_card(gpu_class: str) -> dict[str, float]:
    """A GPU class's memory (its card in resources.GPU_CLASSES) with the dense bf16 peak (TFLOP/s) and HBM bandwidth
    (TB/s) of the slowest card of that memory (workflow_scripts.gpu.estimate.GPUS), so that the times are upper bounds:
    the 80GB class is timed as an A100."""
    cards = [card for name, card in CARDS.items() if gpu_model_class(name) == gpu_class]
    return {
        "memory_gib": CARDS[GPU_CLASSES[gpu_class]]["memory_gib"],
        "tflops": min(card["bf16_tflops"] for card in cards),
        "hbm_tbps": min(card["hbm_tbps"] for card in cards),
    }


# GPU classes (workflow_scripts.plan.resources.GPU_CLASSES): memory (GiB), dense bf16 peak (TFLOP/s), HBM bandwidth
# (TB/s).
GPUS: dict[str, dict[str, float]] = {gpu_class: _class_card(gpu_class) for gpu_class in GPU_CLASSES}


def kv_bytes_per_token(shape: ModelShape | Any, dtype_bytes: int = DTYPE_BYTES) -> int:
    """KV cache bytes of one token: layers x kv_heads x head_dim x 2 (key and value) x dtype bytes.

    ``shape`` is a ``ModelShape`` or a transformers config (``num_hidden_layers``, ``num_key_value_heads``,
    ``head_dim``).
    """
    if isinstance(shape, ModelShape):
        layers, kv, head_dim = shape.layers, shape.kv_heads, shape.head_dim
    else:
        layers, heads = shape.num_hidden_layers, shape.num_attention_heads
        kv = getattr(shape, "num_key_value_heads", None) or heads
        head_dim = getattr(shape, "head_dim", None) or shape.hidden_size // heads
    return layers * kv * head_dim * 2 * dtype_bytes


def weight_bytes(shape: ModelShape, extra_vocab: int = EXTRA_VOCAB) -> int:
    """bf16 weights of the model with ``extra_vocab`` more rows in its embeddings (and untied LM head)."""
    attn = shape.hidden * shape.head_dim * (2 * shape.heads + 2 * shape.kv_heads)
    per_layer = attn + 3 * shape.hidden * shape.ffn
    vocab = (shape.vocab + extra_vocab) * shape.hidden * (1 if shape.tied else 2)
    return (shape.layers * per_layer + vocab) * DTYPE_BYTES


def _prefill_bytes(shape: ModelShape, sequences: int, tokens: int, logit_positions: int) -> int:
    """Transient memory of one prefill: one layer's MLP tensors (gate, up, their product) and the residual stream over
    every token, the attention scores of one layer when eager (bf16 scores + fp32 softmax), and the logits kept."""
    act = sequences * tokens * (3 * shape.ffn + 4 * shape.hidden) * DTYPE_BYTES
    scores = sequences * shape.heads * tokens * tokens * (DTYPE_BYTES + 4) if shape.eager_attention else 0
    logits = sequences * logit_positions * (shape.vocab + EXTRA_VOCAB) * DTYPE_BYTES * (3 if shape.logit_softcap else 1)
    return act + scores + logits


def generation_memory(shape: ModelShape, task: str, decoding: str, batch_size: int, max_new_tokens: int) -> dict:
    """GiB of one generation measurement (weights, KV cache, prefill) with the model alone on the GPU."""
    sequences = batch_size * BEAMS[decoding]
    tokens = PROMPT_TOKENS[task] + max_new_tokens
    terms = {
        "weights": weight_bytes(shape),
        "kv_cache": sequences * tokens * kv_bytes_per_token(shape),
        "prefill": _prefill_bytes(shape, sequences, PROMPT_TOKENS[task], 1),
    }
    return {k: v / GIB for k, v in terms.items()} | {"total": sum(terms.values()) / GIB}


def target_tokens(speed: Mapping[str, Any]) -> int:
    """Planned reference tokens of one teacher-forced item (``evaluation.speed.reference_chars``)."""
    chars = speed.get("reference_chars")
    return TOKENS_PER_CHAR * chars if chars else UNCUT_TARGET_TOKENS


def paired_memory(shape: ModelShape, task: str, paired: bool, targets: int = UNCUT_TARGET_TOKENS) -> dict:
    """GiB of one paired measurement: teacher forcing (one sequence, the last prompt position's logits in the prefill)
    or the log-likelihood pass (``CHOICES`` sequences, logits of the scored positions only), Source beside."""
    prompt = PROMPT_TOKENS[task]
    if task in TIMED_CHOICE_TASKS:
        sequences, positions, cached = CHOICES, 2, 0
    else:
        sequences, positions, cached = 1, 1, prompt + targets
    terms = {
        "weights": weight_bytes(shape) * (2 if paired else 1),
        "kv_cache": sequences * cached * kv_bytes_per_token(shape),  # the log-likelihood pass keeps no cache
        "prefill": _prefill_bytes(shape, sequences, prompt, positions),
    }
    return {k: v / GIB for k, v in terms.items()} | {"total": sum(terms.values()) / GIB}


def _step_seconds(shape: ModelShape, gpu: Mapping[str, float]) -> float:
    return weight_bytes(shape) / (gpu["hbm_tbps"] * 1e12) + LAYER_OVERHEAD_S * shape.layers


def _prefill_seconds(shape: ModelShape, gpu: Mapping[str, float], tokens: int) -> float:
    return 2 * (weight_bytes(shape) / DTYPE_BYTES) * tokens / (PREFILL_MFU * gpu["tflops"] * 1e12)


def batch_plan(speed: Mapping[str, Any]) -> list[tuple[str, int]]:
    """(decoding, batch size) pairs a generation task is timed with: batch 1 for every decoding, and the larger batch
    for ``large_batch_decodings`` (every decoding when unset)."""
    large = speed.get("large_batch_decodings") or speed["decodings"]
    pairs = [(d, 1) for d in speed["decodings"]]
    if speed["batch_size"] > 1:
        pairs += [(d, speed["batch_size"]) for d in speed["decodings"] if d in large]
    return pairs


def workload(speed: Mapping[str, Any], tasks: list[str], shape: ModelShape, gpu_class: str = "80GB") -> dict:
    """The planned work of one speed job of a model of ``shape`` on a card of ``gpu_class``: per phase and task, the
    memory peak (GiB) and the seconds (upper bound)."""
    gpu = GPUS[gpu_class]
    n, passes = speed["n"], speed["repeats"] + speed["warmup"]
    step, rows = _step_seconds(shape, gpu), []
    for task in tasks:
        if task in GENERATION_TASKS:
            for decoding, batch in batch_plan(speed):
                batches = math.ceil(n / batch)
                seconds = (
                    passes
                    * batches
                    * (
                        _prefill_seconds(shape, gpu, batch * BEAMS[decoding] * PROMPT_TOKENS[task])
                        + speed["max_new_tokens"] * step * (1.2 if BEAMS[decoding] > 1 else 1.0)
                    )
                )
                memory = generation_memory(shape, task, decoding, batch, speed["max_new_tokens"])
                rows.append(
                    {
                        "phase": "generation",
                        "task": task,
                        "decoding": decoding,
                        "batch_size": batch,
                        "memory_gib": memory,
                        "seconds": seconds,
                    }
                )
        if (task in GENERATION_TASKS and speed["teacher_forced"]) or task in TIMED_CHOICE_TASKS:
            models = 2 if speed["paired"] else 1
            if task in TIMED_CHOICE_TASKS:
                per_item = _prefill_seconds(shape, gpu, PROMPT_TOKENS[task]) + step  # lettered answers: one pass
            else:
                per_item = _prefill_seconds(shape, gpu, PROMPT_TOKENS[task]) + target_tokens(speed) * step
            rows.append(
                {
                    "phase": "paired",
                    "task": task,
                    "decoding": None,
                    "batch_size": 1,
                    "memory_gib": paired_memory(shape, task, speed["paired"], target_tokens(speed)),
                    "seconds": passes * n * per_item * models,
                }
            )
    return {
        "rows": rows,
        "peak_gib": max((r["memory_gib"]["total"] for r in rows), default=0.0),
        "minutes": sum(r["seconds"] for r in rows) / 60,
    }


def speed_tasks(tasks: list[str]) -> list[str]:
    """The tasks a speed job times, from ``evaluation.tasks`` (mt always)."""
    return ["mt", *(t for t in ("sum", *TIMED_CHOICE_TASKS) if t in tasks)]


def runtime_minutes(config: Mapping[str, Any], model: Model, attempt: int = 1, gpu_class: str = "80GB") -> int | None:
    """The time limit a speed job of ``model`` (workflow_scripts.plan.models) asks for: the planned minutes and half as
    much again, grown by the attempt number (None for a model that needs no GPU: the cost table's value stands)."""
    if not model.needs_gpu:
        return None
    speed, tasks = config["evaluation"]["speed"], speed_tasks(config["evaluation"]["tasks"])
    plan = workload(speed, tasks, model.shape, gpu_class)
    return math.ceil(plan["minutes"] * 1.5 + 10) * max(attempt, 1)


def problems(
    config: Mapping[str, Any], gpu_class: str = "80GB", models: Mapping[str, Model] | None = None
) -> list[str]:
    """Speed settings whose memory peak does not fit the GPU class the profiles ask for rule measure_speed
    (workflow_scripts.plan.resources.gpu_class) for a model of the config that needs a GPU, one message each, naming the
    key to change. ``models``: the config's models described (workflow_scripts.plan.models.describe_models)."""
    speed = config["evaluation"]["speed"]
    limit = GPUS[gpu_class]["memory_gib"]
    out = []
    for name, model in (describe_models(config) if models is None else models).items():
        if not model.needs_gpu:
            continue
        plan = workload(speed, speed_tasks(config["evaluation"]["tasks"]), model.shape, gpu_class)
        for row in plan["rows"]:
            need = row["memory_gib"]["total"]
            if need <= limit:
                continue
            if row["phase"] == "generation":
                key = (
                    "evaluation.speed.batch_size or evaluation.speed.large_batch_decodings"
                    if row["batch_size"] > 1
                    else "evaluation.speed.decodings"
                )
                what = f"{row['task']} generation ({row['decoding']}, batch {row['batch_size']})"
            else:
                key, what = "evaluation.speed.paired", f"{row['task']} paired phase (Source beside the model)"
            out.append(
                f"{key}: the speed step's {what} needs about {need:.0f} GiB on model {name} ({model.size}), more "
                f"than the {limit:.0f} GiB of the {gpu_class} card the profile asks for rule measure_speed; change "
                f"{key} or ask for a larger card (set-resources: measure_speed: gpu_model; plan/speed.py)"
            )
    return out


def markdown(config: Mapping[str, Any], models: Mapping[str, Model] | None = None) -> str:
    """The planned workload of every model of the config that needs a GPU, on each GPU class, as Markdown."""
    speed = config["evaluation"]["speed"]
    tasks = speed_tasks(config["evaluation"]["tasks"])
    lines = ["| model | GPU | phase | task | decoding | batch | memory (GiB) | minutes |", "|" + "---|" * 8]
    for name, model in (describe_models(config) if models is None else models).items():
        if not model.needs_gpu:
            continue
        for gpu_class in GPUS:
            plan = workload(speed, tasks, model.shape, gpu_class)
            for r in plan["rows"]:
                cells = [name, gpu_class, r["phase"], r["task"], r["decoding"] or "–", r["batch_size"]]
                cells += [f"{r['memory_gib']['total']:.1f}", f"{r['seconds'] / 60:.1f}"]
                lines.append("| " + " | ".join(map(str, cells)) + " |")
            lines.append(
                f"| {name} | {gpu_class} | **job** | | | | **{plan['peak_gib']:.1f}** | **{plan['minutes']:.0f}** |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import argparse
    from pathlib import Path

    import yaml

    from workflow_scripts.plan.checks.schema import fill_defaults, schema_errors

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--configfile", default="config.yaml")
    cfg = yaml.safe_load(Path(p.parse_args().configfile).read_text(encoding="utf-8"))
    schema = Path(__file__).parents[2] / "schemas" / "config.schema.yaml"
    errors = schema_errors(cfg, schema)
    if errors:
        raise SystemExit("invalid configuration:\n  - " + "\n  - ".join(errors))
    fill_defaults(cfg, schema)
    print(markdown(cfg))
    for line in problems(cfg):
        print("problem:", line)
