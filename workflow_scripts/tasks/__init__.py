"""The registry of evaluation tasks: one module per task in this folder declares what the rest of the workflow needs
to know about it (``TaskSpec``): its rule and that rule's cost, its words in tables and figures, its results.md
columns, its hub task type, whether MuMo cells and the per-cell job run it, for a log-likelihood task the label its
records carry, and its step (the input files and arguments of one cell's evaluation). The step lists
(``workflow_scripts.steps``), job costs (``workflow_scripts.resources``), names (``workflow_scripts.paper.names``),
tables, model cards and the grid read them from here (docs/extending.md, "An evaluation task"). Nothing here imports
torch. ``base`` holds what a step is made of; it registers no task.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Column:
    """A column of results.md: its heading, the metric of the task it shows, its number format, and its place among
    every task's columns (ascending)."""

    heading: str
    metric: str
    fmt: str
    place: int


@dataclass(frozen=True)
class TaskSpec:
    """One evaluation task.

    ``order``: its place in ``TASKS`` (the config's list of tasks, the docs). ``rule``: the per-task rule writing its
    ``eval/<name>.json``; ``cost``: that rule's cost, (base (MB, min), per billion parameters (MB, min), the tests'
    tiny models (MB, min)) as ``resources.Cost`` takes it; ``rule_words``: the rule in the cost table. ``words``: the
    task in tables and figures (None: never named alone). ``card_type``: the Hugging Face model-index task type.
    ``columns``: its results.md columns. ``mumo``: MuMo cells are evaluated on it. ``cell_files``: the files it writes
    inside the per-cell job (``evaluation.one_job_per_cell``), run in ``cell_order`` (cheapest first); None: it keeps
    its own rule. ``choice``: a log-likelihood task; ``label`` the data label its records carry where it is fixed.
    ``not_run_note``: why a run may lack it, said where results.md lists it as not run. ``step``: its step for one
    cell, ``step(steps, wc) -> base.Step`` (the input files and the command's arguments; ``steps.Steps`` holds what
    every task's step shares: the model folder, the cell, the output paths, ElChat's and MuMo's options).
    """

    name: str
    order: int
    rule: str
    cost: tuple[tuple[int, float], tuple[float, float], tuple[int, int]]
    rule_words: str
    words: str | None
    card_type: str
    columns: tuple[Column, ...] = ()
    mumo: bool = False
    cell_files: tuple[str, ...] | None = None
    cell_order: int = 0
    choice: bool = False
    timed: bool = False
    label: str | None = None
    not_run_note: str | None = None
    step: Callable[[Any, Any], Any] | None = None


# Filled by the modules of this folder as the package imports them (``discover``), in ``order``.
TASKS: dict[str, TaskSpec] = {}


def register(spec: TaskSpec) -> TaskSpec:
    """Add a task's spec to ``TASKS`` (kept in ``order``); a name registered twice is an error."""
    if spec.name in TASKS:
        raise ValueError(f"evaluation task {spec.name!r} is registered twice")
    TASKS[spec.name] = spec
    ordered = sorted(TASKS.values(), key=lambda s: s.order)
    TASKS.clear()
    TASKS.update((s.name, s) for s in ordered)
    return spec


def discover() -> None:
    """Import every module of this folder: each registers its task."""
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")


def cell_tasks() -> dict[str, tuple[str, ...]]:
    """The tasks the per-cell job runs, in their cell order, with the files each writes."""
    cell = sorted((s for s in TASKS.values() if s.cell_files is not None), key=lambda s: s.cell_order)
    return {s.name: s.cell_files for s in cell}


def markdown_columns() -> list[tuple[str, str, str, str]]:
    """results.md's task columns in place order: (heading, task, metric, format)."""
    columns = sorted(((c, s.name) for s in TASKS.values() for c in s.columns), key=lambda x: x[0].place)
    return [(c.heading, task, c.metric, c.fmt) for c, task in columns]


discover()
