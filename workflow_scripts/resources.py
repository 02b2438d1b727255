"""What each job of the workflow asks a cluster for, and GPU requests that do not fit the rules.

The cost table the rules read their `resources:` from (memory, time limit and CPUs per GPU by rule and model size
class, growing with each retry), the GPU the GPU rules ask for, and the check rules/common.smk runs on a run's
set-resources and default-resources before any job. Imported by the Snakefile: pure Python, no torch. The planning
report that reads a dry run is `python -m tools.plan`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SIZES = ("demo", "135M", "7B", "8B", "9B")
# Size classes that cannot be trained or evaluated in useful time without a GPU.
GPU_SIZES = frozenset({"7B", "8B", "9B"})
# The rules whose code moves the model to a GPU when one is visible (workflow_scripts/lapt/, harness/, perplexity.py,
# speed.py, init_analysis.py).
GPU_RULES = (
    "lapt",
    "evaluate_mt",
    "evaluate_sum",
    "evaluate_mc",
    "evaluate_gmmlu",
    "evaluate_mc_en",
    "evaluate_gmmlu_en",
    "evaluate_ppl",
    "measure_speed",
    "evaluate_cell",
    "init_analysis_cell",
    "mumo_head",
    "score_bleurt",
)


def _row(*values: tuple[int, int]) -> dict[str, tuple[int, int]]:
    return dict(zip(SIZES, values, strict=True))


# Host memory (MB) and time limit (minutes) of attempt 1, by rule and size class; "any" for rules without a model.
# Starting points for one A100/H100-80GB GPU per GPU job and the paper's settings (|D| = 30K sentences, 2 epochs of
# 2x2 LS, 500 MT and speed sentences, 100K held-out sentences); results/<run>/benchmarks/ has the measured times
# afterwards.
# Loading a 7-9B checkpoint on the host takes about 2 bytes per parameter in bf16, 4 in fp32 (initialization).
SIZE_RESOURCES: dict[str, dict[str, tuple[int, int]]] = {
    "extract_l10n_pairs": {"any": (2000, 15)},
    "split_l10n": {"any": (2000, 15)},
    "sample_cc100": {"any": (4000, 240)},  # streams a whole CC-100 file (tens of GB of xz for some languages)
    "sample_orchid": {"any": (2000, 15)},  # parses the 11 MB ORCHID file in memory (about 2 s)
    "flores_mt": {"any": (4000, 30)},
    "select_sum_items": {"any": (8000, 30)},  # tokenizes test + validation (up to ~18K articles: Hindi) once
    # size class:            demo         135M         7B            8B            9B
    "prepare_source_model": _row((2000, 15), (4000, 30), (64000, 120), (64000, 120), (80000, 150)),
    "prepare_chat_model": _row((2000, 15), (4000, 30), (64000, 120), (64000, 120), (80000, 150)),
    # ElChat: the chat and the adapted model in fp32 on the host (2 x 4 bytes per parameter); CPU work of minutes
    "elchat": _row((2000, 15), (4000, 30), (96000, 60), (96000, 60), (128000, 90)),
    "train_aux_tokenizer": _row((2000, 15), (8000, 60), (8000, 60), (8000, 60), (8000, 60)),
    "expand_tokenizer": _row((2000, 15), (8000, 60), (8000, 60), (8000, 60), (8000, 60)),
    "initialize": _row((2000, 15), (4000, 30), (96000, 120), (96000, 120), (128000, 150)),
    # vocab replace (Table 11): a 32K tokenizer trained on D; initialization of every row (FOCUS: fastText on D)
    "replace_tokenizer": _row((2000, 15), (8000, 60), (8000, 60), (8000, 60), (8000, 60)),
    "initialize_replace": _row((2000, 15), (4000, 30), (96000, 120), (96000, 120), (128000, 150)),
    # tools/gpu_estimate.py: 2x2 LS + mtp at 512, batch 8, ~5M tokens trains in about 65 / 78 / 98 min on an A100
    # (21 / 25 / 31 on an H100) for 7B / 8B / 9B (docs/gpu.md); the limits leave start-up and margin, and Slurm's
    # USR1 ten minutes before the limit makes a job checkpoint and stop, so its retry resumes
    "lapt": _row((2000, 20), (8000, 60), (64000, 180), (64000, 180), (80000, 240)),
    "evaluate_mt": _row((2000, 15), (8000, 30), (48000, 60), (48000, 60), (64000, 90)),
    "evaluate_ppl": _row((2000, 15), (8000, 30), (48000, 60), (48000, 60), (64000, 90)),
    # 500 articles, prompts up to 4,096 tokens, 5 sampled runs with 5 beams (Table 13 b)
    "evaluate_sum": _row((2000, 30), (8000, 60), (48000, 240), (48000, 240), (64000, 300)),
    # Belebele 900 items, 3-shot log-likelihood of 4 choices; Global-MMLU's whole test set (about 14K items), 5-shot
    "evaluate_mc": _row((2000, 20), (8000, 30), (48000, 60), (48000, 60), (64000, 90)),
    "evaluate_gmmlu": _row((2000, 20), (8000, 60), (48000, 180), (48000, 180), (64000, 240)),
    "evaluate_mc_en": _row((2000, 20), (8000, 30), (48000, 60), (48000, 60), (64000, 90)),
    "evaluate_gmmlu_en": _row((2000, 20), (8000, 60), (48000, 180), (48000, 180), (64000, 240)),
    # initializes four models per cell (Mean, Mean-ref, Merge, Align) and scores held-out text with each
    "init_analysis_cell": _row((2000, 20), (8000, 60), (96000, 120), (96000, 120), (128000, 150)),
    # the time limit of 7B/8B/9B jobs follows their planned workload (workflow_scripts/speed/plan.py, rule
    # measure_speed's speed_runtime: 144-189 min for configs/paper.yaml); these limits serve the smaller sizes
    "measure_speed": _row((2000, 15), (8000, 30), (48000, 120), (48000, 120), (64000, 150)),
    # evaluation.one_job_per_cell: ppl, mt, mc and speed of one cell in one job (rules/evaluate.smk evaluate_cell)
    "evaluate_cell": _row((2000, 45), (8000, 90), (48000, 300), (48000, 300), (64000, 360)),
    # MuMo head: forward passes of the frozen model only (1,500 steps x 128 sentences x <= 512 tokens, about 100M
    # tokens at the paper's budget: a few GPU-hours for 7B); mt / sum / speed jobs of MuMo cells use the rows above
    # GGUF export (llama.cpp's converter reads the weights lazily; f16 + q8_0 of a 7B model: ~14 + 7 GB written) and
    # its check in llama.cpp on the CPU (token ids of held-out sentences, a few greedy continuations per file)
    "export_gguf": _row((2000, 15), (4000, 30), (32000, 120), (32000, 120), (40000, 150)),
    # serve_speed: the cell's and Source's GGUF in memory, export.speed.n items teacher-forced, repeated
    "serve_speed": _row((2000, 15), (4000, 30), (48000, 180), (48000, 180), (64000, 240)),
    "check_gguf": _row((2000, 15), (4000, 30), (48000, 120), (48000, 120), (64000, 150)),
    "mumo_head": _row((2000, 20), (8000, 60), (64000, 360), (64000, 360), (80000, 420)),
    # BLEURT-20 (579M parameters, fp32) on 500 items x 5 runs of <= 512 pieces: minutes on one GPU, whatever the
    # evaluated model's size
    "score_bleurt": _row((4000, 20), (16000, 30), (16000, 30), (16000, 30), (16000, 30)),
}
# CPUs per GPU of GPU jobs (tokenization and data loading only; the demo size fits a 2-CPU CI node).
CPUS_PER_GPU = {"demo": 2, "135M": 4, "7B": 8, "8B": 8, "9B": 8}


# GPU memory classes the planning check (workflow_scripts.config_checks.gpu_fit) sizes LAPT jobs for, by the GPU model a
# profile names for rule lapt (`gpu_model`, or the model in a `gres: gpu:<model>:N`); a profile that names none, or a
# model not listed, plans for the smaller class. The value is the workflow_scripts.gpu GPU whose memory and speed stand
# for the class.
GPU_CLASSES = {"80GB": "H100", "141GB": "H200"}
GPU_MODEL_CLASS = {
    "a100": "80GB",
    "a100-80": "80GB",
    "a100_80gb": "80GB",
    "h100": "80GB",
    "h800": "80GB",
    "h200": "141GB",
    "gh200": "141GB",
}
DEFAULT_GPU_CLASS = "80GB"


def gpu_class(resources: Mapping[str, Any] | None) -> str:
    """The GPU memory class (GPU_CLASSES) of a rule's resources: from `gpu_model` or a gpu gres naming a model."""
    resources = resources or {}
    model = str(_raw(resources.get("gpu_model")) or "")
    if not model:
        for item in str(_raw(resources.get("gres")) or "").split(","):
            parts = item.strip().split(":")
            if parts[0] == "gpu" and len(parts) == 3:
                model = parts[1]
    return GPU_MODEL_CLASS.get(model.strip().lower(), DEFAULT_GPU_CLASS)


# GPUs of one node a LAPT job may be sharded over (FSDP, workflow_scripts/lapt/shard.py) when one GPU cannot hold it;
# a profile whose nodes have fewer says so with `set-resources: lapt: {node_gpus: N}` (1: never shard).
DEFAULT_NODE_GPUS = 8


def workflow_node_gpus(resource_settings: Any) -> int:
    """The GPUs of one node a LAPT job may use: set-resources lapt `node_gpus`, else DEFAULT_NODE_GPUS."""
    value = _raw(dict(resource_settings.overwrite_resources.get("lapt") or {}).get("node_gpus"))
    try:
        n = DEFAULT_NODE_GPUS if value in (None, "") else int(value)
    except (TypeError, ValueError):
        n = 0
    if n < 1:
        raise ValueError(f"set-resources lapt: node_gpus must be a whole number >= 1, got {value!r}")
    return n


def workflow_gpu_class(resource_settings: Any, rule: str = "lapt") -> str:
    """The GPU class a Snakemake run's profiles ask for `rule` (set-resources over default-resources)."""
    default = dict(resource_settings.default_resources or {}) if resource_settings.default_resources else {}
    overrides = dict(resource_settings.overwrite_resources.get(rule) or {})
    return gpu_class({**default, **overrides})


# Seconds before its time limit that Slurm sends a LAPT job SIGUSR1 (sbatch --signal through the rule's slurm_extra):
# the job finishes its step, writes its checkpoint (minutes at 7-9B) and exits; the retry resumes. Not "B:": that
# signals only the batch shell, which would die of it without passing it on; without it every job step's processes
# get it, and the rule shells ignore it (rules/common.smk's shell prefix) so that only the trainer acts on it.
LAPT_SIGNAL_SECONDS = 600


def slurm_signal(seconds: int = LAPT_SIGNAL_SECONDS) -> str:
    """The slurm_extra of a job that checkpoints and stops on SIGUSR1 ``seconds`` before its time limit."""
    return f"--signal=USR1@{int(seconds)}"


def sized_resources(rule: str, size: str | None, attempt: int = 1) -> dict[str, int]:
    """Slurm resources of one job: the cost table's entry for its rule and model size class, for the given attempt.

    A retry (attempt 2, 3) most often follows a TIMEOUT or OUT_OF_MEMORY, so the time limit grows by the attempt number
    and memory by half of attempt 1's per extra attempt.
    """
    if rule not in SIZE_RESOURCES:
        raise KeyError(f"no cost table entry for rule {rule!r} in workflow_scripts/resources.py SIZE_RESOURCES")
    table = SIZE_RESOURCES[rule]
    key = "any" if "any" in table else size
    if key not in table:
        raise KeyError(f"rule {rule!r} has no cost for model size {size!r}; known: {', '.join(table)}")
    mem_mb, runtime = table[key]
    extra = max(attempt, 1) - 1
    out = {"mem_mb": mem_mb + mem_mb * extra // 2, "runtime": runtime * (1 + extra)}
    if rule in GPU_RULES:
        out["cpus_per_gpu"] = CPUS_PER_GPU[size or "demo"]
    return out


def _raw(value: Any) -> Any:
    """A resource value as given (Snakemake wraps profile values in Resource objects with the text in `.raw`)."""
    return getattr(value, "raw", value)


def _gres_gpus(resources: Mapping[str, Any]) -> int | None:
    """GPUs of a `gres` resource (`gpu`, `gpu:2`, `gpu:a100:2`, among other gres), or None when it names no GPU."""
    gres = str(_raw(resources.get("gres")) or "")
    for item in gres.split(","):
        parts = item.strip().split(":")
        if parts[0] == "gpu":
            return int(parts[-1]) if len(parts) > 1 and parts[-1].isdigit() else 1
    return None


def _gpu_value(resources: Mapping[str, Any]) -> Any:
    gpu = _raw(resources.get("gpu"))
    return None if gpu in (None, "", 0, "0", False) else gpu


def gpus_requested(resources: Mapping[str, Any]) -> int:
    """GPUs a job's resources ask Slurm for, as the executor plugin turns them into --gpus or --gres."""
    gpu = _gpu_value(resources)
    if gpu is not None:
        try:
            return int(gpu)
        except (TypeError, ValueError):
            return 1  # an expression Snakemake evaluates later: count it as one
    gres = _gres_gpus(resources)
    if gres is not None:
        return gres
    if _raw(resources.get("gpu_model")):
        return 1  # the plugin asks for gpu_model:1
    return 0


def rule_gpus(rule: str, overrides: Mapping[str, Mapping[str, Any]]) -> int:
    """The `gpu` resource a rule declares itself: 1 for the GPU rules (GPU_RULES), 0 for every other rule.

    `overrides` is the run's set-resources (rule to resources). A GPU rule whose set-resources ask for the GPU by
    `gres` (sites that want --gres) declares 0, since the Slurm plugin would otherwise pass both --gpus and --gres.
    """
    if rule not in GPU_RULES:
        return 0
    return 0 if _gres_gpus(dict(overrides.get(rule) or {})) is not None else 1


def gpu_request_problems(
    requests: Mapping[str, Mapping[str, Any]],
    default: Mapping[str, Any] | None,
    sizes: Mapping[str, str],
    require_gpu: bool,
) -> list[str]:
    """Problems of a run's GPU requests against the rules and the config's model sizes, one message each.

    `requests` maps rule to its GPU resources (the rule's own `gpu` overlaid by the profiles' set-resources),
    `default` is default-resources, `sizes` maps model to size class. `require_gpu` (a cluster run) also flags GPU
    rules left without a GPU for a 7B/8B/9B model.
    """
    problems = []
    if default and gpus_requested(default):
        problems.append(
            "default-resources asks for a GPU for every rule, including rules that cannot use one; request GPUs per "
            f"rule under set-resources, for {', '.join(GPU_RULES)} only"
        )
    for rule, resources in sorted(requests.items()):
        if rule not in GPU_RULES and gpus_requested(resources):
            problems.append(
                f"set-resources {rule}: asks for a GPU, but rule {rule} cannot use one (only {', '.join(GPU_RULES)} "
                f"run the model on a GPU); remove its gpu/gres/gpu_model"
            )
        elif _gpu_value(resources) is not None and _gres_gpus(resources) is not None:
            problems.append(
                f"set-resources {rule}: asks for its GPU by both gpu and gres, and the Slurm plugin would pass both "
                "--gpus and --gres; keep one (a gpu gres alone replaces the rule's own `gpu: 1`)"
            )
    big = sorted(model for model, size in sizes.items() if size in GPU_SIZES)
    if require_gpu and big:
        named = ", ".join(f"{m} ({sizes[m]})" for m in big)
        for rule in GPU_RULES:
            if not gpus_requested({**(default or {}), **requests.get(rule, {})}):
                problems.append(
                    f"set-resources {rule}: no GPU requested, but the config has models of a GPU size class: {named}; "
                    f"give {rule} a GPU (`{rule}: {{gpu: 1}}`, the rule's own request, or a gpu gres) instead of none"
                )
    return problems


def workflow_gpu_problems(resource_settings: Any, sizes: Mapping[str, str]) -> list[str]:
    """`gpu_request_problems` for a Snakemake run's `workflow.resource_settings` (from rules/common.smk).

    The GPU rules ask for their GPU themselves (`rule_gpus`); the profiles' set-resources may add GPUs where they do
    not belong or take one away. The Snakefile cannot see the executor, so a GPU rule left without a GPU for a
    7B/8B/9B model is flagged on any run.
    """
    overrides = {rule: dict(resources) for rule, resources in resource_settings.overwrite_resources.items()}
    requests = dict(overrides)
    for rule in GPU_RULES:
        requests[rule] = {"gpu": rule_gpus(rule, overrides), **overrides.get(rule, {})}
    default = resource_settings.default_resources
    return gpu_request_problems(requests, dict(default) if default else None, sizes, require_gpu=True)
