# Vocabulary expansion of English-centric LLMs for low-resource languages, as one resumable DAG:
# models x languages x methods (paper 002; see README.md and ../shared/METHODS.md).
from snakemake.utils import min_version

min_version("9.0")


# `--configfile X` replaces config.yaml as a whole (instead of deep-merging into it), so a grid file never
# inherits the embedded default's models or languages.
if not workflow.overwrite_configfiles:

    configfile: "config.yaml"


report: "report/workflow.rst"


include: "rules/common.smk"
include: "rules/common_jobs.smk"
include: "rules/data.smk"
include: "rules/items.smk"
include: "rules/model.smk"
include: "rules/vocab.smk"
include: "rules/initialize.smk"
include: "rules/lapt.smk"
include: "rules/elchat.smk"
include: "rules/evaluate.smk"
include: "rules/tables.smk"
include: "rules/analysis.smk"
include: "rules/mumo.smk"


rule all:
    default_target: True
    input:
        all_targets(),
