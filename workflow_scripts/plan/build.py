"""The one planning entry point rules/common.smk calls: every check of a configuration before any job runs.

``check_plan`` runs, in this order, the config files as written, the JSON schema (filling its defaults), the missing
blocks, the semantic checks (``checked_grid``: the config expanded once into its ``Grid``), the models' shapes
(``workflow_scripts.plan.models``), the run folder (``runs.plan_run``, the output folder writable), the profiles' GPU
requests, the LAPT jobs' fit on the GPU, the speed step's memory, the item selection and the sum assets. A problem
raises ``ConfigError`` with every line of its group; warnings and the checks done later are printed to stderr beside the
plan.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workflow_scripts.plan.checks import checked_grid, language_notes
from workflow_scripts.plan.checks.files import (
    config_file_problems,
    missing_blocks,
    unset_evaluation,
    unwritable_output,
)

# the one import of the GPU-fit arithmetic by the workflow
from workflow_scripts.plan.checks.gpu_fit import gpu_fit_problems, lapt_gpu_counts
from workflow_scripts.plan.checks.notes import config_warnings, deferred_checks
from workflow_scripts.plan.checks.partitions import known_partition_gpus
from workflow_scripts.plan.checks.schema import fill_defaults, schema_errors
from workflow_scripts.plan.grid import ConfigError, Grid, Method, with_adapted
from workflow_scripts.plan.models import Model, ModelError, describe_models
from workflow_scripts.plan.resources import (
    gpu_model_warnings,
    workflow_gpu_class,
    workflow_gpu_partition_checks,
    workflow_gpu_partitions,
    workflow_gpu_problems,
    workflow_node_gpus,
    workflow_rule_gpus,
)
from workflow_scripts.plan.runs import plan_run, run_root
from workflow_scripts.plan.speed import problems as speed_plan_problems
from workflow_scripts.sum_assets import hub_asset_problems


@dataclass
class Plan:
    """What the checks established: the methods (with those a post-hoc method starts from), the grid's cells, the
    run's name and folder, the GPUs of one node each sharded LAPT job runs on, and the models with their shapes and
    parameter counts (what their jobs' resources follow)."""

    methods: list[Method]
    cells: list[tuple[str, str, Method]]
    run: str
    results: str
    lapt_gpus: dict[tuple[str, str], int] = field(default_factory=dict)
    models: dict[str, Model] = field(default_factory=dict)
    grid: Grid | None = None


def _stop(title: str, problems: Sequence[str]) -> None:
    if problems:
        raise ConfigError(f"{title}:\n  - " + "\n  - ".join(problems))


def _warn(lines: Sequence[str], prefix: str = "config warning") -> None:
    for line in lines:
        print(f"{prefix}: {line}", file=sys.stderr)


def validated(config: dict, configfiles: Sequence[str | Path], schema: Path) -> list[str]:
    """The config files as written, then the merged config against the schema, whose defaults fill it in. Returns the
    warnings about evaluation settings left unset (read before the defaults fill them)."""
    problems = [d for f in configfiles for d in config_file_problems(f)]
    _stop("invalid configuration", problems or schema_errors(config, schema) or missing_blocks(config, schema))
    unset = unset_evaluation(config, schema)
    fill_defaults(config, schema)
    return unset


def planned_models(config: dict, workdir: Path) -> dict[str, Model]:
    """The config's models with their shapes (workflow_scripts.plan.models); a model without one stops planning, a
    stand-in shape is a warning."""
    try:
        models = describe_models(config, workdir)
    except ModelError as e:
        raise ConfigError(str(e)) from None
    _warn([m.warning for m in models.values() if m.warning])
    return models


# Procedures that train chosen layers need at least this many (workflow_scripts/lapt/procedures.py): 2x2 LS trains the
# bottom two and the top two.
MIN_LAYERS = {"2x2LS": 4}


def layer_problems(cells: list[tuple[str, str, Method]], models: dict[str, Model]) -> list[str]:
    """A cell whose training procedure needs more transformer layers than its model has (read from its shape), named
    with the model and the procedure, before any job rather than in its LAPT job."""
    seen = {(model, m.procedure) for model, _, m in cells if m.trains}
    return [
        f"models.{model}: {models[model].shape.layers} transformer layers, but procedure {procedure} needs at least "
        f"{MIN_LAYERS[procedure]}; choose another procedure (full, LoRA) for this model"
        for model, procedure in sorted(seen)
        if procedure in MIN_LAYERS and model in models and models[model].shape.layers < MIN_LAYERS[procedure]
    ]


def vllm_problems(
    config: dict, resource_settings: Any, installed: bool | None = None, local_gpu: bool | None = None
) -> list[str]:
    """export.speed.engine vllm needs vLLM where the jobs run and a GPU for rule serve_speed: the profile's
    set-resources (a cluster's GPU partition), or a CUDA device on this machine for a local run. ``installed`` and
    ``local_gpu`` default to what this machine has."""
    if config.get("export", {}).get("speed", {}).get("engine") != "vllm":
        return []
    if installed is None:
        import importlib.util

        installed = importlib.util.find_spec("vllm") is not None
    problems = []
    if not installed:
        problems.append(
            "export.speed.engine vllm: vllm is not installed in this environment; install it on a machine "
            "with an NVIDIA GPU (`pip install vllm`, tools/gpu_vllm.sh) or set export.speed.engine: "
            "llama.cpp"
        )
    if not workflow_rule_gpus(resource_settings, "serve_speed"):
        if local_gpu is None:
            import torch

            local_gpu = torch.cuda.is_available()
        if not local_gpu:
            problems.append(
                "export.speed.engine vllm: rule serve_speed has no GPU: this machine has no CUDA device "
                "and the profile gives the rule none; on a cluster, `set-resources: serve_speed: {gpu: 1, "
                "slurm_partition: <gpu partition>}` in the site profile; or set export.speed.engine: "
                "llama.cpp"
            )
    return problems


def gpu_problems(
    config: dict, resource_settings: Any, models: dict[str, Model] | None = None, grid: Grid | None = None
) -> None:
    """The profiles' GPU requests against the rules, the models that need a GPU and the partitions (one sinfo shows
    without GPUs; a warning for GPU rules left on default-resources' partition, and for a GPU model whose memory is
    not known), every LAPT job against the memory of the GPU class rule lapt asks for (sharded over up to a node's
    GPUs), and the speed step's memory peak per model. ``models``: the config's models described
    (``planned_models``)."""
    models = describe_models(config) if models is None else models
    gpu_models = {name: m.size for name, m in models.items() if m.needs_gpu}
    partition_gpus = known_partition_gpus(workflow_gpu_partitions(resource_settings))  # sinfo, where there is one
    refused, unsure = workflow_gpu_partition_checks(resource_settings, partition_gpus)
    _stop("GPU requests do not fit the workflow", [*workflow_gpu_problems(resource_settings, gpu_models), *refused])
    _warn(unsure, "profile warning")
    _warn(gpu_model_warnings(resource_settings), "profile warning")
    gpu_class, node_gpus = workflow_gpu_class(resource_settings), workflow_node_gpus(resource_settings)
    _stop("LAPT jobs do not fit the GPU", gpu_fit_problems(config, gpu_class, node_gpus, models, grid))
    speed_gpu = workflow_gpu_class(resource_settings, "measure_speed")
    _stop("speed settings do not fit the GPU", speed_plan_problems(config, speed_gpu, models))
    _stop("serving speed cannot run on vLLM here", vllm_problems(config, resource_settings))


def items_problem(config: dict) -> list[str]:
    """A selected item set (an MT kind whose rule selects its pairs: FLORES) the harness would thin out by its own
    shuffle (evaluation.mt.n below data.n_mt)."""
    from workflow_scripts.mt_sources import of

    evaluation, n_mt = config["evaluation"], config["data"]["n_mt"]
    selected = any(of(config, lang).selected for lang in config["languages"])
    if evaluation["items"] == "shuffle" or "mt" not in evaluation["tasks"] or not selected:
        return []
    if evaluation["mt"]["n"] >= n_mt:
        return []
    return [
        f"evaluation.items {evaluation['items']}: evaluation.mt.n ({evaluation['mt']['n']}) is below data.n_mt "
        f"({n_mt}), the rows selected; set them equal so that every selected row is evaluated"
    ]


def check_plan(
    config: dict, configfiles: Sequence[str | Path], workdir: Path, resource_settings: Any, schema: Path
) -> Plan:
    """Every planning check of ``config`` (filled with the schema's defaults here); raises ConfigError naming the key,
    prints the warnings. Paths resolve against ``workdir``, as Snakemake's do."""
    unset = validated(config, configfiles, schema)
    grid = checked_grid(config, workdir)  # the config expanded once: every check below reads it
    methods = with_adapted(list(grid.methods))
    models = planned_models(config, workdir)
    cells = list(grid.cells)
    _stop("invalid configuration", layer_problems(cells, models))
    _warn([*unset, *config_warnings(config, grid), *language_notes(config)])
    _warn(deferred_checks(config, workdir), "checked later")
    try:
        run, outside = plan_run(config, configfiles, workdir)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    if outside:
        _warn([outside])
    results = str(run_root(run))
    # a path under a file stops any run here; a folder a real run cannot write stops it when it starts (onstart)
    unwritable = unwritable_output(results, write=False)
    if unwritable:
        raise ConfigError(f"{results}: {unwritable}")
    gpu_problems(config, resource_settings, models, grid)
    if items_problem(config):
        raise ConfigError(items_problem(config)[0])
    _stop("invalid configuration", hub_asset_problems(config["evaluation"]["sum"]))
    gpu_class, node_gpus = workflow_gpu_class(resource_settings), workflow_node_gpus(resource_settings)
    lapt_gpus = lapt_gpu_counts(config, gpu_class, node_gpus, models, grid)
    return Plan(methods, cells, run, results, lapt_gpus, models, grid)
