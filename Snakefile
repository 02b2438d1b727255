# Vocabulary expansion of English-centric LLMs for low-resource languages, as one resumable DAG:
# models x languages x methods (paper 002; see README.md and docs/grid.md).
import sys

from snakemake.utils import min_version

min_version("9.0")


# `--configfile X` replaces config.yaml as a whole (instead of deep-merging into it), so a grid file never
# inherits the embedded default's models or languages.
# Snakemake's own error for a config.yaml that does not parse names neither the file nor the line.
if not workflow.overwrite_configfiles:
    sys.path.insert(0, workflow.basedir)
    from workflow_scripts.plan.checks.files import stop_on_unreadable_config

    stop_on_unreadable_config("config.yaml")

    configfile: "config.yaml"


report: "report/workflow.rst"


include: "rules/common.smk"
include: "rules/inputs.smk"
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
include: "rules/export.smk"
include: "rules/publish.smk"


rule all:
    default_target: True
    input:
        all_targets(),
        export_targets(),
        card_targets(),
        publish_targets(),
