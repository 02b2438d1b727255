"""MT kind tsv: your own pairs file, one ``English<TAB>target`` a line (rule own_mt), named by its file or its
``label``."""

from __future__ import annotations

from workflow_scripts.mt_sources import MtSpec, pairs_file, register

register(
    MtSpec(
        name="tsv",
        order=3,
        doc='your own pairs, one "English<TAB>target" a line',
        label=pairs_file.LABEL,
        rule=pairs_file.RULE,
        costs=pairs_file.COSTS,
        steps=pairs_file.STEPS,
        check=pairs_file.check,
        source=pairs_file.source,
        keys=pairs_file.KEYS,
    )
)
