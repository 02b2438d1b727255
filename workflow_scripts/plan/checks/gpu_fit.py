"""The planning check that every LAPT job fits the GPU its profile asks for, and the GPUs each one is given
(the arithmetic: workflow_scripts.gpu).

plan.build runs ``gpu_fit_problems`` when Snakemake plans: a run whose grid holds a LAPT job of a model that
needs a GPU (its shape from its config.json: workflow_scripts.plan.models) that the estimate says does not fit the GPU
class of rule lapt (workflow_scripts.plan.resources.GPU_CLASSES) stops before any job, naming the key to change;
``lapt_gpu_counts`` gives each lapt job its GPUs (rules/inputs.smk). This module reads the grid and lapt's
hparams, which the gpu package does not: lapt imports gpu (micro_batch auto), so gpu importing lapt would close a
cycle.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from workflow_scripts.gpu.fit import fit_problem, planned_gpus
from workflow_scripts.gpu.shape import ModelShape
from workflow_scripts.lapt import DEFAULT_HPARAMS, PROCEDURES, resolve_hparams
from workflow_scripts.plan.grid import Grid, Method, hparam, vocab_size
from workflow_scripts.plan.models import Model, describe_models
from workflow_scripts.plan.resources import GPU_CLASSES


def lapt_jobs(
    config: dict, models: Mapping[str, Model] | None = None, grid: Grid | None = None
) -> list[tuple[str, Method, ModelShape, dict[str, Any], dict[str, str]]]:
    """The LAPT job kinds of the models that need a GPU: (model, method, workflow_scripts.gpu shape with the cell's
    vocabulary, resolved hparams, the config key each hparam comes from), once per model and method. ``models``: the
    config's models described (workflow_scripts.plan.models.describe_models, which is called without it); ``grid``: the
    config's grid (``Grid.of(config)`` without it)."""
    models = describe_models(config) if models is None else models
    grid = Grid.of(config) if grid is None else grid
    jobs, seen, first = [], set(), grid.first
    for model, _, m in grid.cells:
        skip = not m.trains or m.posthoc != "none" or m.procedure not in PROCEDURES or not models[model].needs_gpu
        if skip or (model, m.slug) in seen:
            continue
        seen.add((model, m.slug))
        pairs = {k: hparam(config, model, first[m.slug], k) for k in DEFAULT_HPARAMS}
        hp = resolve_hparams({k: v for k, (v, where) in pairs.items() if "(not set" not in where})
        shape = models[model].shape
        if m.expands and m.vocab == "replace":
            # one job kind per model and method: the largest replacement vocabulary among the languages
            vocab = max(vocab_size(config, lang, "replace")[0] for lang in config["languages"])
            shape = dataclasses.replace(shape, vocab=vocab)
        elif m.expands and m.k:
            shape = dataclasses.replace(shape, vocab=shape.vocab + int(m.k))
        keys = {k: where.split(" ")[0] for k, (_, where) in pairs.items()}
        keys["procedure"] = f"methods[{first[m.slug]}].procedure"
        jobs.append((model, m, shape, hp, keys))
    return jobs


def gpu_fit_problems(
    config: dict,
    gpu_class: str,
    max_gpus: int = 1,
    models: Mapping[str, Model] | None = None,
    grid: Grid | None = None,
) -> list[str]:
    """LAPT jobs of the grid that workflow_scripts.gpu says do not fit the GPU class the profile asks for
    (workflow_scripts.plan.resources.GPU_CLASSES), sharded over at most ``max_gpus`` GPUs of a node, one message each
    naming the config key to change."""
    problems = []
    for model, m, shape, hp, keys in lapt_jobs(config, models, grid):
        what = f"LAPT job {model}/{m.slug}"
        gpu = GPU_CLASSES[gpu_class]
        problem = fit_problem(shape, m.procedure, m.objective, m.seq_len, hp, gpu, keys, what, max_gpus)
        if problem:
            problems.append(problem)
    return problems


def lapt_gpu_counts(
    config: dict,
    gpu_class: str,
    max_gpus: int,
    models: Mapping[str, Model] | None = None,
    grid: Grid | None = None,
) -> dict[tuple[str, str], int]:
    """GPUs each LAPT job of a model that needs a GPU runs on, by (model, method slug): the fewest of at most
    ``max_gpus`` on which workflow_scripts.gpu says it fits (1 where it fits none: gpu_fit_problems refuses those).
    Jobs not listed run on one GPU."""
    counts = {}
    for model, m, shape, hp, _ in lapt_jobs(config, models, grid):
        est = planned_gpus(shape, m.procedure, m.objective, m.seq_len, hp, GPU_CLASSES[gpu_class], max_gpus)
        counts[(model, m.slug)] = est["gpus"] if est["fits"] else 1
    return counts
