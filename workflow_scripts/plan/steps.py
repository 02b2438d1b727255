"""The evaluation steps of a cell, written once: for each task the files it reads and its command-line arguments
(each task's ``step`` in its module of workflow_scripts/tasks/, from what ``Steps`` holds for every task).

Both the per-task rules (rules/evaluate.smk: evaluate_ppl, evaluate_mt, evaluate_sum, evaluate_mc and its siblings,
measure_speed) and the per-cell job (evaluate_cell, evaluation.one_job_per_cell) render their commands from
``Steps.step``: a task rule runs ``python -m <module> <args> --threads N``; evaluate_cell passes each step's arguments
less ``--task``, ``--model`` and ``--cell`` (workflow_scripts/evaluate_cell.py gives those to every step).
"""

from __future__ import annotations

import json

from workflow_scripts.labels import L10N_LABEL, corpus_label, data_label, mt_data_label, mt_label
from workflow_scripts.plan.paths import Layout
from workflow_scripts.tasks import TASKS as TASK_SPECS
from workflow_scripts.tasks import cell_tasks
from workflow_scripts.tasks.base import CELL_SHARED, Step, cli

# The evaluation tasks (workflow_scripts/tasks/: one module each), in their order: one rule each in
# rules/evaluate.smk, writing results/<run>/{model}/{lang}/{method}/eval/{task}.json (paths.eval_file).
# Those with a LightEval definition run through LightEval (workflow_scripts/harness); the ``_en`` tasks are the English
# retention checks (Table 9).
TASKS = tuple(TASK_SPECS)
# evaluation.one_job_per_cell: the steps one evaluate_cell job runs (cheapest first: a bad input file stops the job
# before the long steps), and the files each writes (those of evaluate_ppl, evaluate_mt, evaluate_mc, measure_speed)
CELL_STEP_FILES = {task: list(files) for task, files in cell_tasks().items()}
CELL_STEPS = tuple(CELL_STEP_FILES)
# re-exported for the rules and tests that read them here
__all__ = [
    "CELL_SHARED",
    "L10N_LABEL",
    "Step",
    "Steps",
    "cli",
    "corpus_label",
    "data_label",
    "mt_data_label",
    "mt_label",
]


class Steps:
    """The evaluation steps of the configured grid: ``methods`` maps a slug to its Method."""

    def __init__(self, config: dict, layout: Layout, methods: dict) -> None:
        self.config, self.layout, self.methods = config, layout, methods
        self.evaluation = config["evaluation"]

    def step(self, task: str, wc) -> Step:
        """The step of ``task`` for the cell of wildcards ``wc``: its task module's (workflow_scripts/tasks/)."""
        return TASK_SPECS[task].step(self, wc)

    def model(self, wc) -> str:
        """The model folder a method's evaluation reads."""
        return self.layout.model_folder(wc.model, wc.lang, self.methods[wc.method])

    def cell(self, wc) -> str:
        """The grid cell as JSON, copied into each record."""
        m = self.methods[wc.method]
        size = self.layout.vocab(wc.lang, "replace" if m.vocab == "replace" else "aux")
        return json.dumps(m.cell(wc.model, wc.lang, size), sort_keys=True)

    def chat(self, wc) -> list[list[str]]:
        """--chat-template for an ElChat cell: evaluated as the chat model it is (Table 10); plain text elsewhere."""
        return [["--chat-template"]] if self.methods[wc.method].posthoc == "elchat" else []

    def mumo(self, wc) -> list[list[str]]:
        """A MuMo cell's decoding options for its mt, sum and speed jobs: k, and the verification ablation."""
        m = self.methods[wc.method]
        if not m.is_mumo:
            return []
        return [["--mumo-k", str(self.config["mumo"]["k"])]] + (
            [["--mumo-no-verify"]] if m.posthoc == "noverify" else []
        )

    def out(self, wc, name: str) -> str:
        return self.layout.eval_file(wc.model, wc.lang, wc.method, name)

    def heldout(self, wc) -> str:
        """The held-out text of a cell's ppl step and of its LAPT job's curve."""
        return self.layout.data_file(wc.lang, "heldout.txt")

    def curve(self, wc, points: int, out: str) -> Step:
        """The held-out curve options of a cell's LAPT job (training.curve_points; workflow_scripts/lapt/curve.py):
        the ppl step's text, n and batch size, so that its last point is the ppl step's bits per character."""
        settings, text = self.evaluation["ppl"], self.heldout(wc)
        return Step(
            {"text": text},
            cli(
                curve_points=points,
                curve_text=text,
                curve_n=settings["n"],
                curve_batch_size=settings["batch_size"],
                curve=out,
            ),
        )

    def generation(self, task: str, wc) -> list[list[str]]:
        """The decoding options mt and sum share."""
        s = self.evaluation[task]
        return cli(
            n=s["n"],
            max_new_tokens=s["max_new_tokens"],
            batch_size=s["batch_size"],
            decoding=s["decoding"],
            runs=s["runs"],
            seed=self.config["seed"],
        )
