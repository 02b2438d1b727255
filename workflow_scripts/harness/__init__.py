"""The paper's evaluation tasks and their English retention checks through LightEval (paper 002 §6.4); each task's
LightEval definition is in its module of ``workflow_scripts/tasks/``.

The prompts are `workflow_scripts/prompts.py` (shared with the speed step and MuMo); `metrics` (chrF, script-aware
ROUGE-L, log-likelihood accuracy) are plain Python; `lighteval_metrics` wraps the metrics for LightEval in an importable
(picklable) module; `tasks` builds a job's LightEval tasks for a hub id or a local folder (`prompting`: what their
definitions share); `datasets` finds, fetches and writes the data folders (and builds the default's mc proxy); `run`
runs one task through LightEval's Python API on a loaded model; `__main__` is the job's command line
(rules/evaluate.smk).
"""
