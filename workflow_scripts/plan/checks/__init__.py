"""Planning-time checks of a config, before any job runs: each problem is one line naming the config key or file.

The Snakefile runs ``files.stop_on_unreadable_config`` on config.yaml before its ``configfile:`` directive reads it
(YAML syntax, named with file and line). rules/common.smk calls ``plan.check_plan``, which runs them in this order:
``files.config_file_problems`` (the files as written: syntax, keys given twice), ``schema.schema_errors`` (the JSON
schema, with the registries' method names), ``files.missing_blocks`` (a left-out data or evaluation block whose
paper-scale defaults cannot be meant), then ``check_config`` (what the schema cannot say: the input files, the
methods against the registries, the cells against each other and against the corpus size), then the run folder, the
GPU fit of the LAPT jobs, the speed step's memory, the item selection and the sum assets. ``notes`` holds what
planning prints beside the plan, and ``files.unwritable_output`` runs again when a real run starts.

- ``schema``: schema_errors, one line per schema violation.
- ``languages``: each language's facts (given or inferred from CLDR) and each task's prompt for it.
- ``inputs``: models, l10n packages and local corpus and pairs files (cheap reads, cached).
- ``cells``: the methods and the grid's cells (k against |V_aux|, vocabulary sizes against D, stages, MuMo, ElChat).
- ``files``: the config files as written (syntax, duplicate keys, missing blocks), and the output folder.
- ``notes``: config warnings (evaluation sizes above the data) and the checks deferred to a job or to preflight.
- ``gpu_fit``: the grid's LAPT jobs against the GPU class the profiles ask for rule lapt (``gpu_fit_problems``, run
  by rules/common.smk after these), and the GPUs each job gets (``lapt_gpu_counts``).
- ``partitions``: whether the partitions the GPU jobs go to have GPUs, as sinfo says (the profiles' check in ``plan``).

The grid itself (methods, slugs, a cell's hparams and vocabulary sizes) is ``workflow_scripts.plan.grid``, which the
rules read too. No torch import: planning stays fast.
"""

from __future__ import annotations

from pathlib import Path

from workflow_scripts.languages import script_name
from workflow_scripts.lapt.tracking import tracking_problems
from workflow_scripts.plan.checks.cells import IMPLEMENTED, check_grid, check_methods, initialization_problems
from workflow_scripts.plan.checks.files import (
    config_file_problems,
    duplicate_keys,
    missing_blocks,
    unset_evaluation,
    unwritable_output,
)
from workflow_scripts.plan.checks.inputs import check_sources
from workflow_scripts.plan.checks.languages import language_notes, language_problems
from workflow_scripts.plan.checks.notes import config_warnings, deferred_checks
from workflow_scripts.plan.checks.schema import schema_errors
from workflow_scripts.plan.grid import SEED_DEFAULT, ConfigError, Grid, Method, expand_methods


def check_config(config: dict, workdir: str | Path = ".") -> list[Method]:
    """Semantic checks beyond the JSON schema (``checked_grid``); returns the expanded methods."""
    return list(checked_grid(config, workdir).methods)


def checked_grid(config: dict, workdir: str | Path = ".") -> Grid:
    """Semantic checks beyond the JSON schema; raise ConfigError naming the key. Returns the config's grid, expanded
    once here for every check.

    Cheap checks of the data and models (reading a .deb's catalogue, the head of a local CC-100 file, installed
    packages, the tracking backend's), but no torch import: planning stays fast."""
    workdir = Path(workdir)
    errors = language_problems(config)
    if errors:  # the checks of the files read each language's script
        raise ConfigError("invalid configuration:\n  - " + "\n  - ".join(errors))
    errors = check_sources(config, workdir)
    if not config["evaluation"]["tasks"]:
        errors.append(f"evaluation.tasks: the list is empty; name at least one of {sorted(IMPLEMENTED['tasks'])}")
    for task in config["evaluation"]["tasks"]:
        if task not in IMPLEMENTED["tasks"]:
            errors.append(
                f"evaluation.tasks: task {task!r} is not implemented yet (implemented: {sorted(IMPLEMENTED['tasks'])})"
            )
    if config["evaluation"].get("other_seeds") == "ppl" and "ppl" not in config["evaluation"]["tasks"]:
        errors.append(
            "evaluation.other_seeds: ppl evaluates the seeds other than the config's on ppl alone, which "
            "evaluation.tasks does not list: add ppl to the tasks, or set other_seeds: all"
        )
    errors += rouge_route_problems(config)
    errors += tracking_problems(config)
    grid, methods = None, []
    try:
        grid = Grid.of(config)
        methods = list(grid.methods)
    except ConfigError as e:
        errors.append(str(e))
        try:  # the methods' own checks still run where only the grid's scope is wrong
            methods = expand_methods(config["methods"], config.get("method_defaults"), config.get("seed", SEED_DEFAULT))
        except ConfigError:
            methods = []
    errors += check_methods(methods) + initialization_problems(config)
    if grid is not None and methods:
        errors += check_grid(config, workdir, grid)
    if errors:
        raise ConfigError("invalid configuration:\n  - " + "\n  - ".join(dict.fromkeys(errors)))
    return grid


def rouge_route_problems(config: dict) -> list[str]:
    """ROUGE-L as the reference code computed it (``evaluation.sum.rouge_tokenizer: reference``) keeps only the
    characters [a-z0-9] of the text: refused for every configured language whose script is not Latin, where it would
    score every summary (near) 0 (docs/evaluation.md, "ROUGE-L: which segmentation")."""
    if "sum" not in config["evaluation"]["tasks"] or config["evaluation"]["sum"]["rouge_tokenizer"] != "reference":
        return []
    return [
        f"evaluation.sum.rouge_tokenizer: reference (the reference code's ROUGE-L, which deletes every character "
        f"outside [a-z0-9]) cannot score language {lang!r}, written in {script_name(lang)} script: it would score "
        "0; use mt5 (the paper's mT5 pieces) or script, or drop the language from this config"
        for lang in config["languages"]
        if script_name(lang) != "Latn"
    ]


__all__ = [
    "IMPLEMENTED",
    "ConfigError",
    "check_config",
    "checked_grid",
    "config_file_problems",
    "config_warnings",
    "deferred_checks",
    "duplicate_keys",
    "language_notes",
    "missing_blocks",
    "rouge_route_problems",
    "schema_errors",
    "unset_evaluation",
    "unwritable_output",
]
