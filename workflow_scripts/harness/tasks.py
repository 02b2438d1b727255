"""The evaluation tasks as LightEval custom tasks (paper 002 §6.4; prompts in ``prompts.yaml``): each task's module in
``workflow_scripts/tasks/`` defines its LightEval task (``TaskSpec.lighteval``: prompt function, dataset layout,
metric) and, for a task run as a group of LightEval tasks, its members (``TaskSpec.group``); the English retention
checks (Table 9) run their base task's definition on English.

``task_config`` builds one task for a dataset folder (a hub mirror or a local folder in the hub layout, the same
definition for both); ``task_configs`` the tasks of one evaluation job. ``TASKS_TABLE`` holds the hub-backed tasks
for every language, so that LightEval's own CLI can run them too (``--custom-tasks workflow_scripts/harness/tasks.py``,
with the repository on PYTHONPATH).
"""

from __future__ import annotations

from pathlib import Path

from lighteval.tasks.lighteval_task import LightevalTaskConfig

from workflow_scripts.harness import prompting
from workflow_scripts.harness.datasets import HUB_IDS, Unavailable, task_source
from workflow_scripts.languages import PAPER_LANGUAGES
from workflow_scripts.tasks import LIGHTEVAL_TASKS, TASKS, TaskSpec


def spec_of(task: str) -> TaskSpec:
    """The spec of a task run through LightEval; an error naming the ones there are."""
    spec = TASKS.get(task)
    if spec is None or spec.lighteval is None:
        raise ValueError(f"unknown task {task!r}; LightEval runs {', '.join(LIGHTEVAL_TASKS)}")
    return spec


def task_config(task: str, lang: str, folder: str | Path, **kwargs) -> LightevalTaskConfig:
    """The LightEval task ``{task}_{lang}`` reading ``folder`` (hub id or local folder in the hub layout); keyword
    arguments: ``generation_size``, ``tokenizer_dir``, and a group's member (the task module's ``group``)."""
    return spec_of(task).lighteval(prompting, lang, folder, **kwargs)


def task_configs(task: str, lang: str, folder: str | Path, **kwargs) -> list[LightevalTaskConfig]:
    """The LightEval tasks of one evaluation job: a grouped task as one task per member present in ``folder``, run
    together in one pipeline; every other task as its one ``task_config``."""
    spec = spec_of(task)
    if spec.group is None:
        return [spec.lighteval(prompting, lang, folder, **kwargs)]
    return [spec.lighteval(prompting, lang, folder, **kwargs, **member) for member in spec.group(folder, lang)]


def _hub_table() -> list[LightevalTaskConfig]:
    table = []
    for task in LIGHTEVAL_TASKS:
        spec = TASKS[task]
        if spec.source is None:
            continue
        for lang in (*PAPER_LANGUAGES, "en"):
            try:
                hub_id = HUB_IDS[task_source(task, lang).dataset]
            except Unavailable:
                continue
            if not hub_id:
                continue
            members = spec.group(None, lang) if spec.group else [{}]
            table += [spec.lighteval(prompting, lang, hub_id, **member) for member in members]
    return table


# For LightEval's own CLI (the workflow builds its tasks per job with task_configs and local folders).
TASKS_TABLE = _hub_table()
