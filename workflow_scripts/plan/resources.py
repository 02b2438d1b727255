"""What each job of the workflow asks a cluster for, and GPU requests that do not fit the rules.

The cost of each rule (memory, time limit and CPUs per GPU, from the parameter count of the job's model, growing with
each retry), the GPU the GPU rules ask for and the memory class of the GPU a profile names, and the check
rules/common.smk runs on a run's set-resources and default-resources before any job. Imported by the Snakefile: pure
Python, no torch. The planning report that reads a dry run is `python -m tools.plan`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from workflow_scripts.corpora import COSTS as CORPUS_COSTS
from workflow_scripts.gpu.estimate import CLASSES
from workflow_scripts.mt_sources import COSTS as MT_COSTS
from workflow_scripts.plan.models import GPU_PARAMETERS, TEST_PARAMETERS, in_words, label_parameters
from workflow_scripts.tasks import TASKS

# The rules whose code moves the model to a GPU when one is visible (workflow_scripts/lapt/, harness/, perplexity.py,
# speed.py, init_analysis.py).
GPU_RULES = (
    "lapt",
    *(spec.rule for spec in TASKS.values()),  # each evaluation task's rule (workflow_scripts/tasks/)
    "evaluate_cell",
    "init_analysis_cell",
    "mumo_head",
    "score_bleurt",
)


@dataclass(frozen=True)
class Cost:
    """Host memory (MB) and time limit (minutes) of a rule's attempt 1 for a model of P billion parameters:
    ``base + per_billion x P``, rounded to the nearest GB and 5 minutes; ``test`` for the tests' tiny models
    (under models.TEST_PARAMETERS, which read corpora of a few hundred sentences). A cost without ``per_billion``
    and ``test`` is the same for every job of the rule."""

    base: tuple[int, int]
    per_billion: tuple[float, float] = (0.0, 0.0)
    test: tuple[int, int] | None = None

    @property
    def any_model(self) -> bool:
        return self.per_billion == (0.0, 0.0) and self.test is None


# The cost of each rule: starting points for one A100/H100-80GB GPU per GPU job and the paper's settings (|D| = 30K
# sentences, 2 epochs of 2x2 LS, 500 MT and speed sentences, 100K held-out sentences), fitted to the limits set by hand
# for the paper's models (docs/slurm.md lists what each model gets); results/<run>/benchmarks/ has the measured times
# afterwards. Memory per billion parameters is bytes per parameter x 1000: loading a checkpoint on the host takes 2
# bytes per parameter in bf16, 4 in fp32, and a step that holds two models or a copy for saving holds more.
SIZE_RESOURCES: dict[str, Cost] = {
    # the rules of the corpus kinds and the MT kinds: each declared with its kind (workflow_scripts/corpora/,
    # workflow_scripts/mt_sources/)
    **{rule: Cost(cost) for rule, cost in CORPUS_COSTS.items()},
    **{rule: Cost(cost) for rule, cost in MT_COSTS.items()},
    "select_sum_items": Cost((8000, 30)),  # tokenizes test + validation (up to ~18K articles: Hindi) once
    # rule: base (MB, min), per billion parameters (MB, min), tests' models (MB, min)
    # the checkpoint loaded in fp32 and written in its save dtype: 8.5 bytes per parameter
    "prepare_source_model": Cost((3000, 28), (8500, 13), test=(2000, 15)),
    "prepare_chat_model": Cost((3000, 28), (8500, 13), test=(2000, 15)),
    # ElChat: the chat and the adapted model in fp32 on the host (2 x 4 bytes per parameter and more); CPU minutes
    "elchat": Cost((2000, 29), (13000, 5.5), test=(2000, 15)),
    # tokenizers are trained on D: their cost follows the corpus, not the model
    "train_aux_tokenizer": Cost((8000, 60), test=(2000, 15)),
    "expand_tokenizer": Cost((8000, 60), test=(2000, 15)),
    "initialize": Cost((2000, 28), (13000, 13), test=(2000, 15)),
    # vocab replace (Table 11): a 32K tokenizer trained on D; initialization of every row (FOCUS: fastText on D)
    "replace_tokenizer": Cost((8000, 60), test=(2000, 15)),
    "initialize_replace": Cost((2000, 28), (13000, 13), test=(2000, 15)),
    # tools/gpu_estimate.py: 2x2 LS + mtp at 512, batch 8, ~5M tokens trains in about 65 / 78 / 98 min on an A100
    # (21 / 25 / 31 on an H100) for 7B / 8B / 9B (docs/gpu.md); the limits leave start-up and margin, and Slurm's
    # USR1 ten minutes before the limit makes a job checkpoint and stop, so its retry resumes
    "lapt": Cost((7000, 58), (8000, 18), test=(2000, 20)),
    # initializes four models per cell (Mean, Mean-ref, Merge, Align) and scores held-out text with each
    "init_analysis_cell": Cost((6000, 59), (12500, 9), test=(2000, 20)),
    # evaluation.one_job_per_cell: ppl, mt, mc and speed of one cell in one job (rules/evaluate.smk evaluate_cell)
    "evaluate_cell": Cost((7000, 86), (6000, 29.5), test=(2000, 45)),
    # GGUF export (llama.cpp's converter reads the weights lazily; f16 + q8_0 of a 7B model: ~14 + 7 GB written) and
    # its check in llama.cpp on the CPU (token ids of held-out sentences, a few greedy continuations per file)
    "export_gguf": Cost((3500, 28), (4000, 13), test=(2000, 15)),
    # serve_speed: the cell's and Source's GGUF in memory, export.speed.n items teacher-forced, repeated
    "serve_speed": Cost((3000, 27), (6500, 21.5), test=(2000, 15)),
    "check_gguf": Cost((3000, 28), (6500, 13), test=(2000, 15)),
    # MuMo head: forward passes of the frozen model only (1,500 steps x 128 sentences x <= 512 tokens, about 100M
    # tokens at the paper's budget: a few GPU-hours for 7B); mt / sum / speed jobs of MuMo cells use the rows above
    "mumo_head": Cost((7000, 55), (8000, 40), test=(2000, 20)),
    # BLEURT-20 (579M parameters, fp32) on 500 items x 5 runs of <= 512 pieces: minutes on one GPU, whatever the
    # evaluated model's size
    "score_bleurt": Cost((16000, 30), test=(4000, 20)),
    # each evaluation task's rule: its cost is declared with the task (workflow_scripts/tasks/)
    **{spec.rule: Cost(*spec.cost[:2], test=spec.cost[2]) for spec in TASKS.values()},
}


def cpus_per_gpu(parameters: int) -> int:
    """CPUs per GPU of a GPU job (tokenization and data loading only): 2 for the tests' models (a 2-CPU CI node), 4
    below models.GPU_PARAMETERS, 8 from it."""
    return 2 if parameters < TEST_PARAMETERS else 4 if parameters < GPU_PARAMETERS else 8


# GPU memory classes the planning checks size LAPT jobs (workflow_scripts.plan.checks.gpu_fit) and the speed step
# (workflow_scripts.plan.speed) for, by the GPU model a profile names for the rule (`gpu_model`, or the model in a
# `gres: gpu:<model>:N`): 40GB, 48GB, 80GB, 94GB, 141GB, each with the workflow_scripts.gpu GPU whose memory and speed
# stand for it.
GPU_CLASSES = CLASSES
# GPU families as sites name them (lower case, without "-" or "_"), by the class of the memory a name that states none
# means: a bare `a100` is the 80 GB card, `a100-40gb` (or `a100_40g`, `a100-sxm4-40gb`) the 40 GB one.
GPU_FAMILIES = {
    "a100": "80GB",
    "a800": "80GB",
    "h100": "80GB",
    "h800": "80GB",
    "h100nvl": "94GB",
    "h200": "141GB",
    "gh200": "141GB",
    "l40s": "48GB",
    "l40": "48GB",
    "a40": "48GB",
    "a6000": "48GB",
    "6000ada": "48GB",
}
# A profile that names no GPU model plans for this class.
DEFAULT_GPU_CLASS = "80GB"


def gpu_model_class(model: str) -> str | None:
    """The memory class of a GPU model as a profile names it: the memory the name states (``a100-sxm4-40gb``,
    ``a100_40g``, a MIG slice ``3g.40gb``), else its family's (``GPU_FAMILIES``); None for a model not known here."""
    name = model.strip().lower().replace("_", "-").removeprefix("nvidia-")
    for part in re.split(r"[-.:\s]+", name):
        found = re.fullmatch(r"(\d+)(?:g|gb)?", part)
        if found and f"{found[1]}GB" in GPU_CLASSES:
            return f"{found[1]}GB"
    compact = name.replace("-", "")
    for family in sorted(GPU_FAMILIES, key=len, reverse=True):
        if family in compact:
            return GPU_FAMILIES[family]
    return None


def requested_gpu_model(resources: Mapping[str, Any] | None) -> str:
    """The GPU model a rule's resources name: `gpu_model`, else the model of a gpu gres (``gpu:a100:1``); "" if none."""
    resources = resources or {}
    model = str(_raw(resources.get("gpu_model")) or "")
    if not model:
        for item in str(_raw(resources.get("gres")) or "").split(","):
            parts = item.strip().split(":")
            if parts[0] == "gpu" and len(parts) == 3:
                model = parts[1]
    return model.strip()


def gpu_class(resources: Mapping[str, Any] | None) -> str:
    """The GPU memory class (GPU_CLASSES) of a rule's resources: from `gpu_model` or a gpu gres naming a model;
    DEFAULT_GPU_CLASS where they name none or one not known here (``gpu_model_warnings`` says so)."""
    model = requested_gpu_model(resources)
    return (gpu_model_class(model) if model else None) or DEFAULT_GPU_CLASS


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


def _rule_resources(resource_settings: Any, rule: str) -> dict[str, Any]:
    default = dict(resource_settings.default_resources or {}) if resource_settings.default_resources else {}
    return {**default, **dict(resource_settings.overwrite_resources.get(rule) or {})}


def workflow_rule_gpus(resource_settings: Any, rule: str) -> int:
    """The GPUs a Snakemake run's profiles ask for `rule` (set-resources over default-resources)."""
    return gpus_requested(_rule_resources(resource_settings, rule))


def workflow_gpu_class(resource_settings: Any, rule: str = "lapt") -> str:
    """The GPU class a Snakemake run's profiles ask for `rule` (set-resources over default-resources)."""
    return gpu_class(_rule_resources(resource_settings, rule))


def gpu_model_warnings(resource_settings: Any, rules: tuple[str, ...] = ("lapt", "measure_speed")) -> list[str]:
    """A warning for each rule among ``rules`` whose profile names a GPU model whose memory class is not known here,
    saying which class it is planned as."""
    out = []
    for rule in rules:
        model = requested_gpu_model(_rule_resources(resource_settings, rule))
        if model and gpu_model_class(model) is None:
            gpu = GPU_CLASSES[DEFAULT_GPU_CLASS]
            sizes = ", ".join(cls.removesuffix("GB") for cls in GPU_CLASSES)
            out.append(
                f"set-resources {rule}: GPU model {model!r} is not one workflow_scripts/plan/resources.py knows the "
                f"memory of (GPU_FAMILIES); {rule} is planned as the {DEFAULT_GPU_CLASS} class ({gpu}); where its "
                f"cards hold {sizes} GB, say so in the name (e.g. {model}-48gb); no class below 40 GB is planned for"
            )
    return out


# Seconds before its time limit that Slurm sends a LAPT job SIGUSR1 (sbatch --signal through the rule's slurm_extra):
# the job finishes its step, writes its checkpoint (minutes at 7-9B) and exits; the retry resumes. Not "B:": that
# signals only the batch shell, which would die of it without passing it on; without it every job step's processes
# get it, and the rule shells ignore it (rules/common.smk's shell prefix) so that only the trainer acts on it.
LAPT_SIGNAL_SECONDS = 600


def slurm_signal(seconds: int = LAPT_SIGNAL_SECONDS) -> str:
    """The slurm_extra of a job that checkpoints and stops on SIGUSR1 ``seconds`` before its time limit."""
    return f"--signal=USR1@{int(seconds)}"


def parameters_of(size: int | str | None) -> int | None:
    """A model's parameter count from what a caller knows of its size: the count itself (an int, or its digits as
    text), or a size label (models.label_parameters: ``7B``, ``135M``, ``3B``); None for no model."""
    if size is None or isinstance(size, int):
        return size
    return int(size) if str(size).isdigit() else label_parameters(str(size))


def _nearest(value: float, step: int) -> int:
    return math.floor(value / step + 0.5) * step


def sized_resources(rule: str, size: int | str | None, attempt: int = 1) -> dict[str, int]:
    """Slurm resources of one job: its rule's cost (``SIZE_RESOURCES``) for the job's model, whose size is its
    parameter count or a size label (``parameters_of``; None for a job without a model), for the given attempt.

    A retry (attempt 2, 3) most often follows a TIMEOUT or OUT_OF_MEMORY, so the time limit grows by the attempt number
    and memory by half of attempt 1's per extra attempt.
    """
    if rule not in SIZE_RESOURCES:
        raise KeyError(f"no cost table entry for rule {rule!r} in workflow_scripts/plan/resources.py SIZE_RESOURCES")
    cost, parameters = SIZE_RESOURCES[rule], parameters_of(size)
    if parameters is None and (not cost.any_model or rule in GPU_RULES):
        raise KeyError(f"rule {rule!r} costs by the job's model; give its parameter count or size label")
    if parameters is not None and parameters < TEST_PARAMETERS and cost.test:
        mem_mb, runtime = cost.test
    else:
        billions = (parameters or 0) / 1e9
        mem_mb = _nearest(cost.base[0] + cost.per_billion[0] * billions, 1000)
        runtime = _nearest(cost.base[1] + cost.per_billion[1] * billions, 5)
    extra = max(attempt, 1) - 1
    out = {"mem_mb": mem_mb + mem_mb * extra // 2, "runtime": runtime * (1 + extra)}
    if rule in GPU_RULES:
        out["cpus_per_gpu"] = cpus_per_gpu(parameters)
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
    gpu_models: Mapping[str, str],
    require_gpu: bool,
) -> list[str]:
    """Problems of a run's GPU requests against the rules and the config's models, one message each.

    `requests` maps rule to its GPU resources (the rule's own `gpu` overlaid by the profiles' set-resources),
    `default` is default-resources, `gpu_models` maps each model that needs a GPU (models.GPU_PARAMETERS or more) to
    its size in words. `require_gpu` (a cluster run) also flags GPU rules left without a GPU for such a model.
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
    if require_gpu and gpu_models:
        named = ", ".join(f"{m} ({gpu_models[m]})" for m in sorted(gpu_models))
        for rule in GPU_RULES:
            if not gpus_requested({**(default or {}), **requests.get(rule, {})}):
                problems.append(
                    f"set-resources {rule}: no GPU requested, but the config has models that need one ("
                    f"{in_words(GPU_PARAMETERS)} parameters or more): {named}; give {rule} a GPU "
                    f"(`{rule}: {{gpu: 1}}`, the rule's own request, or a gpu gres) instead of none"
                )
    return problems


def workflow_gpu_problems(resource_settings: Any, gpu_models: Mapping[str, str]) -> list[str]:
    """`gpu_request_problems` for a Snakemake run's `workflow.resource_settings` (from rules/common.smk).

    The GPU rules ask for their GPU themselves (`rule_gpus`); the profiles' set-resources may add GPUs where they do
    not belong or take one away. The Snakefile cannot see the executor, so a GPU rule left without a GPU for a model
    that needs one is flagged on any run.
    """
    requests, default = _workflow_requests(resource_settings)
    return gpu_request_problems(requests, default, gpu_models, require_gpu=True)


def _workflow_requests(resource_settings: Any) -> tuple[dict[str, dict[str, Any]], dict[str, Any] | None]:
    """A run's resources by rule (the GPU rules' own `gpu` overlaid by set-resources) and its default-resources."""
    overrides = {rule: dict(resources) for rule, resources in resource_settings.overwrite_resources.items()}
    requests = dict(overrides)
    for rule in GPU_RULES:
        requests[rule] = {"gpu": rule_gpus(rule, overrides), **overrides.get(rule, {})}
    default = resource_settings.default_resources
    return requests, dict(default) if default else None


def _partition(resources: Mapping[str, Any]) -> str | None:
    """The `slurm_partition` resources name, if any."""
    return str(_raw(resources.get("slurm_partition")) or "").strip().strip("'\"") or None


def gpu_rule_partitions(
    requests: Mapping[str, Mapping[str, Any]], default: Mapping[str, Any] | None
) -> dict[str, tuple[str | None, bool]]:
    """Each GPU rule that asks for a GPU: the partition its jobs go to (None: the cluster's default one) and whether
    the rule names it itself in set-resources (rather than getting default-resources')."""
    partitions = {}
    for rule in GPU_RULES:
        own = requests.get(rule, {})
        if gpus_requested({**(default or {}), **own}):
            partition = _partition(own)
            partitions[rule] = (partition, True) if partition else (_partition(default or {}), False)
    return partitions


def gpu_partition_checks(
    requests: Mapping[str, Mapping[str, Any]], default: Mapping[str, Any] | None, partition_gpus: Mapping[str, bool]
) -> tuple[list[str], list[str]]:
    """Problems and warnings of the partitions the GPU rules' jobs go to; ``partition_gpus``: whether a partition's
    nodes have GPUs, where the cluster said (workflow_scripts/plan/checks/partitions.py).

    A problem: GPU jobs on a partition known to have no GPUs, which Slurm refuses at submission. A warning: GPU rules
    that name no partition of their own while default-resources names one not known to have GPUs; many sites do have
    GPUs there, and naming that partition for the rules themselves in set-resources says so and silences it. Without
    a partition in default-resources the jobs go to the cluster's default partition, and a local run looks the same:
    nothing to say.
    """
    refused: dict[str, list[str]] = {}
    on_default = []
    for rule, (partition, own) in gpu_rule_partitions(requests, default).items():
        if partition is None:
            continue
        if partition_gpus.get(partition) is False:
            refused.setdefault(partition, []).append(rule)
        elif not own and partition not in partition_gpus:
            on_default.append(rule)
    problems = [
        f"{', '.join(rules)}: ask for a GPU on partition {partition}, whose nodes have none (sinfo lists no gpu among "
        "their generic resources), and Slurm refuses such jobs at submission; give them the partition with GPUs in "
        "the site profile, `set-resources: <rule>: {slurm_partition: <gpu partition>}` for each (`make slurm-profile "
        "... GPU_PARTITION=<gpu partition> FORCE=1` writes them all)"
        for partition, rules in refused.items()
    ]
    warnings = []
    if on_default:
        partition = _partition(default or {})
        warnings.append(
            f"GPU rules without a partition of their own: {', '.join(on_default)} ask for a GPU and go to "
            f"default-resources' partition {partition}, where Slurm refuses them at submission if partition "
            f"{partition} has no GPUs. Give each its GPU partition in the site profile: `set-resources: <rule>: "
            "{slurm_partition: <gpu partition>}` (`make slurm-profile ... GPU_PARTITION=<gpu partition> FORCE=1` "
            f"writes them all); if partition {partition} has GPUs, name {partition} there, which silences this warning"
        )
    return problems, warnings


def workflow_gpu_partitions(resource_settings: Any) -> set[str]:
    """The partitions a Snakemake run's GPU jobs go to, by name (the cluster's default one has none)."""
    partitions = gpu_rule_partitions(*_workflow_requests(resource_settings)).values()
    return {partition for partition, _ in partitions if partition}


def workflow_gpu_partition_checks(
    resource_settings: Any, partition_gpus: Mapping[str, bool]
) -> tuple[list[str], list[str]]:
    """`gpu_partition_checks` for a Snakemake run's `workflow.resource_settings` (from rules/common.smk)."""
    return gpu_partition_checks(*_workflow_requests(resource_settings), partition_gpus)
