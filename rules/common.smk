# What every rules file reads: the shell prefix, the checked configuration (workflow_scripts/plan/build.py),
# the run's folders and layout (workflow_scripts/plan/paths.py), the wildcard constraints and the job resources. The
# rules' input functions live in rules/inputs.smk, their logic in workflow_scripts modules; rules are glue.
import json
import shlex
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.settings.types import DeploymentMethod

sys.path.insert(0, workflow.basedir)
# Rules run `python -m workflow_scripts.<step>`: make the modules importable from any working directory, and,
# unless conda environments are in use, let `python` be the interpreter running Snakemake (the project's venv, even
# when it is not activated). The prefix keeps Snakemake's default bash strict mode.
_PATH_PREFIX = ""
if DeploymentMethod.CONDA not in workflow.deployment_settings.deployment_method:
    _PATH_PREFIX = (
        "export PATH=" + shlex.quote(str(Path(sys.executable).parent)) + ":$PATH; "
    )
# Rule shells ignore SIGUSR1: Slurm sends it to the lapt job's processes before the time limit (rules/lapt.smk
# slurm_extra), and its default action would end the shell; the trainer installs its own handler and checkpoints.
shell.prefix(
    "set -euo pipefail; trap '' USR1; "
    + _PATH_PREFIX
    + "export PYTHONPATH="
    + shlex.quote(workflow.basedir)
    + "${{PYTHONPATH:+:$PYTHONPATH}}; "
)
from workflow_scripts.io import mark_snakemake_run  # noqa: E402

# A step that stops on the user's input records it beside its rule's log; a retry of that job in this Snakemake run
# (profiles/default/ `retries`) then stops at once instead of repeating the work at a larger cost. The jobs know their
# run by an environment variable set here (workflow_scripts/io.py cli_main).
mark_snakemake_run(workflow.is_main_process)
from workflow_scripts.plan import paths  # noqa: E402
from workflow_scripts.plan.grid import (
    cell_hparams,
    cell_curve_points,
    curve_points,
    init_gate,
    slug_regex,
    ppl_only,
    tasks_of,
)  # noqa: E402
from workflow_scripts.plan.checks import unwritable_output  # noqa: E402
from workflow_scripts.corpora import CORPORA  # noqa: E402
from workflow_scripts.mt_sources import MT_SOURCES  # noqa: E402
from workflow_scripts.lapt.tracking import cell_spec as cell_tracking  # noqa: E402
from workflow_scripts.plan.build import ConfigError, check_plan  # noqa: E402
from workflow_scripts.plan.runs import (
    DOWNLOADS_ROOT,
    claim,
    start_problem,
)  # noqa: E402
from workflow_scripts.plan.resources import (
    rule_gpus,
    sized_resources,
    slurm_signal,
    workflow_gpu_class,
)  # noqa: E402
from workflow_scripts.plan.speed import (
    runtime_minutes as speed_runtime_minutes,
)  # noqa: E402

# Every planning check (workflow_scripts/plan/build.py): the schema fills the config's defaults; warnings are
# printed with the plan. Paths resolve against the working directory, as Snakemake does.
try:
    PLAN = check_plan(
        config,
        workflow.configfiles,
        Path.cwd(),
        workflow.resource_settings,
        Path(workflow.basedir) / "schemas" / "config.schema.yaml",
    )
except ConfigError as e:
    raise WorkflowError(str(e)) from None
METHODS, CELLS, RUN = PLAN.methods, PLAN.cells, PLAN.run
METHOD_BY_SLUG = {m.slug: m for m in METHODS}
config["run"] = RUN  # the report's front page (report/workflow.rst) names its folder
# Every output of this configuration lies under results/<run>/ (workflow_scripts/plan/runs.py). The rules' output patterns
# (workflow_scripts/plan/paths.py) start with the Snakemake path variables <results> and <downloads>; input functions pass
# RESULTS and DOWNLOADS.
RESULTS = PLAN.results
DOWNLOADS = str(DOWNLOADS_ROOT)
# which corpus, tokenizer, model folder and dataset each cell reads
LAYOUT = paths.Layout(config, METHOD_BY_SLUG, RESULTS, DOWNLOADS)


pathvars:
    results=RESULTS,
    downloads=DOWNLOADS,


# the methods entry whose hparams each method trains with
FIRST_ENTRY = PLAN.grid.first


# A folder a real run cannot write (a dry run writes nothing) stops it when it starts, not in its first job, which
# records the config files that write it.
onstart:
    _unwritable = unwritable_output(RESULTS)
    if _unwritable:
        raise WorkflowError(f"{RESULTS}: {_unwritable}")
    _problem = start_problem(RUN)
    if _problem:
        raise WorkflowError(_problem)
    claim(Path(RESULTS), workflow.configfiles, Path.cwd())


MODELS = list(config["models"])
LANGUAGES = list(config["languages"])
TASKS = config["evaluation"]["tasks"]


wildcard_constraints:
    model="|".join(MODELS),
    lang="|".join(LANGUAGES),
    method=slug_regex(METHODS),
    init="|".join(sorted({m.init for m in METHODS if m.expands}) or ["none"]),
    k=r"\d+",
    aux=r"\d+",
    size=r"\d+",
    corpus="|".join(CORPORA),
    mt="|".join(MT_SOURCES),


def corpus_train_file(wc):
    return LAYOUT.data_file(wc.lang, "train.txt")


def corpus_heldout_file(wc):
    return LAYOUT.data_file(wc.lang, "heldout.txt")


def mt_file(wc):
    return LAYOUT.data_file(wc.lang, "mt.tsv")


def source_model_of(wc):
    """The source model folder of a cell's model (its tokenizer re-counts generated text in source tokens)."""
    return LAYOUT.source_model(wc.model)


def all_targets():
    """The run's products: its tables, figures and pages, and each trained or merged cell's model folder (a model
    deleted after its evaluation is planned again, not lost without a word)."""
    models = [
        LAYOUT.model_folder(model, lang, m)
        for model, lang, m in CELLS
        if not m.is_mumo and (m.trains or m.posthoc != "none")
    ]
    return [
        paths.table("results.csv", RESULTS),
        paths.table("results.md", RESULTS),
        paths.analysis_file("fragmentation.csv", RESULTS),
        paths.paper_dir(RESULTS),
        paths.findings_dir(RESULTS),
        *dict.fromkeys(models),
    ]


def sized(rule_name, key):
    """A `resources:` function: `key` of the rule's cost in workflow_scripts/plan/resources.py for the parameter count of
    the job's model (its shape: workflow_scripts/plan/models.py)."""

    def get(wildcards, attempt):
        model = getattr(wildcards, "model", None)
        parameters = PLAN.models[model].parameters if model else None
        return sized_resources(rule_name, parameters, attempt)[key]

    return get


def gpus(rule_name):
    """The `gpu` resource of a GPU rule: one GPU (sbatch --gpus=1 on Slurm; a local run ignores it unless given
    `--resources gpu=N`), or none when the run's set-resources request the rule's GPU by gres.
    """
    return rule_gpus(rule_name, workflow.resource_settings.overwrite_resources)
