"""Corpus kind cc100: a CC-100 per-language text file (xz, gz or plain; one paragraph a line), a local ``path`` or a
``url`` fetched once (https://data.statmt.org/cc-100/<lang>.txt.xz), sampled by streaming (rule sample_cc100)."""

from __future__ import annotations

from workflow_scripts.corpora import CorpusSpec, register, text_file

register(
    CorpusSpec(
        name="cc100",
        order=2,
        doc="a CC-100 per-language text file (xz, gz or plain), sampled by streaming",
        label="CC-100",
        with_mt={"flores": "CC-100 / FLORES-200"},
        rule=text_file.RULE,
        # streams a whole CC-100 file (tens of GB of xz for some languages)
        costs={text_file.RULE: (4000, 240)},
        steps={"sample_cc100": "data: CC-100 sample"},
        check=text_file.check,
        source=text_file.source,
        notes=text_file.notes,
        mean_line_chars=text_file.mean_line_chars,
        keys=text_file.KEYS,
    )
)
