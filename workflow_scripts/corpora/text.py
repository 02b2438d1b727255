"""Corpus kind text: your own text file (xz, gz or plain; one sentence or paragraph a line), a local ``path`` or a
``url``, sampled as cc100 is (rule sample_cc100) and named by its file or its ``label``."""

from __future__ import annotations

from workflow_scripts.corpora import CorpusSpec, register, text_file

register(
    CorpusSpec(
        name="text",
        order=3,
        doc=(
            "your own text file, one sentence or paragraph a line (xz, gz or plain), sampled the same way and shown "
            "under its label"
        ),
        label="your text ({file})",
        rule=text_file.RULE,
        steps={"sample_text": "data: your text sample"},
        check=text_file.check,
        source=text_file.source,
        notes=text_file.notes,
        mean_line_chars=text_file.mean_line_chars,
        keys=text_file.KEYS,
    )
)
