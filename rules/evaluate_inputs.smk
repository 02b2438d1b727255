# Input functions and arguments of the evaluation rules (rules/evaluate.smk). Each task's step (its files and its
# command-line arguments) is written once in workflow_scripts/plan/steps.py; its own rule and evaluate_cell render it.
from workflow_scripts.plan.steps import CELL_STEP_FILES, CELL_STEPS, Steps
from workflow_scripts.tasks import TASKS as TASK_SPECS

STEPS = Steps(config, LAYOUT, METHOD_BY_SLUG)


def step_inputs(task):
    """The input files of a task's rule, by name (for `unpack`)."""

    def get(wc):
        return STEPS.step(task, wc).inputs

    return get


def step_args(task):
    """The arguments of a task's command line, shell-quoted."""

    def get(wc):
        return STEPS.step(task, wc).command()

    return get


def evaluated_model(wc):
    """The model folder a method's evaluation reads."""
    return STEPS.model(wc)


def cell_json(wc):
    return STEPS.cell(wc)


# evaluation.one_job_per_cell: a cell's ppl, mt, mc and speed steps in one job (workflow_scripts/evaluate_cell.py), so
# that torch, transformers and LightEval are imported once per cell, not once per task (docs/measurements.md). Each step
# writes the files its own rule writes; the per-task rules still serve every other cell and task.
CELL_JOB_STEPS = [s for s in CELL_STEPS if s in TASKS]


def cell_job_slugs():
    """A wildcard constraint: the methods whose cells evaluate_cell evaluates (none unless one_job_per_cell; MuMo
    cells and seeds evaluated on ppl alone, evaluated on fewer tasks, keep the per-task jobs).
    """
    if not config["evaluation"]["one_job_per_cell"] or not CELL_JOB_STEPS:
        return "^$"
    cells = [m for m in METHODS if not m.is_mumo and not ppl_only(m, config)]
    return slug_regex(cells) or "^$"


def cell_job_outputs():
    return [
        paths.eval_file(name=name, root=RESULTS)
        for step in CELL_JOB_STEPS
        for name in CELL_STEP_FILES[step]
    ]


def cell_job_inputs(wc):
    """The input files of the cell's steps, by name (for `unpack`)."""
    inputs = {}
    for step in CELL_JOB_STEPS:
        inputs.update(STEPS.step(step, wc).inputs)
    return inputs


def cell_step_args(wc):
    """--STEP 'ARGS' for each configured step (each ARGS one shell-quoted string)."""
    return " ".join(
        f"--{step} {shlex.quote(STEPS.step(step, wc).cell_command())}"
        for step in CELL_JOB_STEPS
    )


def task_runtime(task):
    """A task rule's time limit: for a task whose spec says so (speed), its planned workload's
    (workflow_scripts/plan/speed.py) where the model needs a GPU; else the cost table's.
    """
    if not task.planned_runtime:
        return sized(task.rule, "runtime")

    def get(wildcards, attempt):
        model = PLAN.models[wildcards.model]
        planned = speed_runtime_minutes(
            config,
            model,
            attempt,
            workflow_gpu_class(workflow.resource_settings, task.rule),
        )
        return (
            planned or sized_resources(task.rule, model.parameters, attempt)["runtime"]
        )

    return get


def bleurt_dir(wc):
    """The BLEURT checkpoint folder: a local folder, or the download rule's output."""
    return LAYOUT.bleurt()
