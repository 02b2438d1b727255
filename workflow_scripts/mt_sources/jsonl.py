"""MT kind jsonl: your own pairs file, one JSON object a line (rule own_mt; the keys: workflow_scripts/corpus.py
``JSONL_SOURCE_KEYS``, ``JSONL_TARGET_KEYS``), named by its file or its ``label``."""

from __future__ import annotations

from workflow_scripts.mt_sources import MtSpec, pairs_file, register

register(
    MtSpec(
        name="jsonl",
        order=4,
        doc=(
            'your own pairs, one JSON object a line with the English under "source" (or "en") and the target under '
            '"target" (or the language\'s code). Every pair is kept in file order; evaluation.mt.n takes the first n'
        ),
        label=pairs_file.LABEL,
        rule=pairs_file.RULE,
        costs=pairs_file.COSTS,
        steps=pairs_file.STEPS,
        check=pairs_file.check,
        source=pairs_file.source,
        keys=pairs_file.KEYS,
    )
)
