"""The registry of evaluation tasks: one module per task in this folder declares what the rest of the workflow needs
to know about it (``TaskSpec``): its rule and that rule's cost, its words in tables and figures, its results.md
columns, its hub task type, whether MuMo cells and the per-cell job run it, for a log-likelihood task the label its
records carry, and its step (the input files and arguments of one cell's evaluation). The step lists
(``workflow_scripts.plan.steps``), job costs (``workflow_scripts.plan.resources``), names
(``workflow_scripts.paper.names``), tables, model cards and the grid read them from here (docs/extending.md, "An
evaluation task"). Nothing here imports torch. ``base`` holds what a step is made of; it registers no task.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from workflow_scripts import registry

# The program of the tasks run through LightEval; its rule runs it offline (every dataset is a local folder).
HARNESS = "workflow_scripts.harness"
OFFLINE = "HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1"


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
    ``columns``: its results.md columns. ``mumo``: MuMo cells are evaluated on it. ``predictions``: besides
    ``eval/<name>.json`` it writes ``eval/<name>_predictions.tsv``. ``cell_job``: the per-cell job
    (``evaluation.one_job_per_cell``) runs it, in ``cell_order`` (cheapest first); otherwise only its own rule does.
    ``program``: the module its rule runs (``python -m``) with the step's arguments (rules/evaluate.smk renders one
    rule per task; the per-cell job calls its ``main``);
    ``planned_runtime``: the rule's time limit follows the speed plan (workflow_scripts/plan/speed.py) where the model
    needs a GPU. ``doc``: the rule's docstring. ``choice``: a log-likelihood task; ``label`` the data label its records
    carry where it is fixed. ``not_run_note``: why a run may lack it, said where results.md lists it as not run.
    ``step``: its step for one cell, ``step(steps, wc) -> base.Step`` (the input files and the command's arguments;
    ``steps.Steps`` holds what every task's step shares: the model folder, the cell, the output paths, ElChat's and
    MuMo's options).

    A task run through LightEval (workflow_scripts/harness) also has: ``lighteval(kit, lang, folder,
    generation_size=..., tokenizer_dir=..., **member)``, its LightEval task config reading a dataset folder (LightEval
    imported there, never when the registry is read; ``kit``: what the harness gives every definition,
    ``harness.prompting``, so that no task module imports the harness); ``group(folder, lang)``: the members run
    together as one job, each the keyword arguments of one ``lighteval`` call (a folder of None: every member; None: a
    task of one config); ``source(lang)``: the hub dataset, subset and splits it reads (``base.Source``;
    ``base.Unavailable`` where the language has none; None: its data are the config's own files); ``fewshot``: the
    paper's few-shot count; ``prompt``: each language needs a prompt for it (prompts.yaml or the config's);
    ``prompt_tokens``: the longest prompt the speed plan sizes its memory for. An English retention check (a name ending
    in ``_en``) runs its base task's definition on English.

    A task with a program of its own in its module: ``main(argv)``, its command line, which its rule runs as
    ``python -m workflow_scripts.tasks <name> ARGS``. ``settings``: the JSON-schema properties (with their defaults) of
    its ``evaluation.<name>`` block, added to the config schema when the schema has none for it.
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
    predictions: bool = False
    cell_job: bool = False
    cell_order: int = 0
    program: str = HARNESS
    planned_runtime: bool = False
    doc: str = ""
    choice: bool = False
    timed: bool = False
    label: str | None = None
    not_run_note: str | None = None
    step: Callable[[Any, Any], Any] | None = None
    lighteval: Callable[..., Any] | None = None
    group: Callable[[Any, str], list[dict]] | None = None
    source: Callable[[str], Any] | None = None
    fewshot: int = 0
    prompt: bool = False
    prompt_tokens: int = 4096
    main: Callable[[list[str] | None], None] | None = None
    settings: dict[str, Any] | None = None

    @property
    def shell_command(self) -> str:
        """The program its rule runs, before the step's arguments."""
        if self.main is not None:
            return f"python -m workflow_scripts.tasks {self.name}"
        return f"{OFFLINE} python -m {self.program}" if self.program == HARNESS else f"python -m {self.program}"

    @property
    def outputs(self) -> dict[str, str]:
        """The files of ``eval/`` its rule writes, by output name."""
        files = {"result": f"{self.name}.json"}
        if self.predictions:
            files["predictions"] = f"{self.name}_predictions.tsv"
        return files


# Filled by the modules of this folder as the package imports them (``discover``), in ``order``.
TASKS: dict[str, TaskSpec] = {}


def register(spec: TaskSpec) -> TaskSpec:
    """Add a task's spec to ``TASKS`` (kept in ``order``); a name registered twice is an error."""
    return registry.add(TASKS, spec, "evaluation task")


def discover() -> None:
    """Import every module of this folder (but the command line, ``__main__``): each registers its task."""
    registry.import_all(__name__, __path__)


def cell_tasks() -> dict[str, tuple[str, ...]]:
    """The tasks the per-cell job runs, in their cell order, with the files each writes."""
    cell = sorted((s for s in TASKS.values() if s.cell_job), key=lambda s: s.cell_order)
    return {s.name: tuple(s.outputs.values()) for s in cell}


def markdown_columns() -> list[tuple[str, str, str, str]]:
    """results.md's task columns in place order: (heading, task, metric, format)."""
    columns = sorted(((c, s.name) for s in TASKS.values() for c in s.columns), key=lambda x: x[0].place)
    return [(c.heading, task, c.metric, c.fmt) for c, task in columns]


discover()
# the tasks run through LightEval, each by its own name (its English retention check runs it with lang "en")
LIGHTEVAL_TASKS = tuple(name for name, spec in TASKS.items() if spec.lighteval is not None)
# the log-likelihood tasks (``choice``), and those of them the speed step times (``timed``; Table 4b): the
# target-language ones, not their English retention checks
CHOICE_TASKS = tuple(name for name, spec in TASKS.items() if spec.choice)
TIMED_CHOICE_TASKS = tuple(name for name, spec in TASKS.items() if spec.timed)
