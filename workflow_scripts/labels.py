"""What a language's data is, in words: the corpus D and held-out text, the MT pairs, and the data label each result
record carries (the "Data:" line of every table and figure). ``layout`` is a ``paths.Layout`` (only its config is
read; not imported, so that the task registry reading these stays below the paths module)."""

from __future__ import annotations

from typing import Any

from workflow_scripts import corpora
from workflow_scripts.corpora import CORPORA
from workflow_scripts.corpora import l10n as l10n_corpus
from workflow_scripts.mt_sources import MT_SOURCES, mt_of

# the embedded default's data label, corpus and MT pairs alike (rule split_l10n passes it to the records)
L10N_LABEL = l10n_corpus.LABEL


def _label(spec: dict, labels: dict[str, str]) -> str:
    if spec.get("label"):
        return spec["label"]
    file = str(spec.get("path") or spec.get("url") or "").rstrip("/").rsplit("/", 1)[-1]
    return labels[spec["kind"]].format(file=file)


def corpus_label(config: dict, lang: str) -> str:
    """What a language's corpus D and held-out text are: the config's `label`, else its kind's."""
    return _label(config["languages"][lang]["corpus"], {name: spec.label for name, spec in CORPORA.items()})


def mt_label(config: dict, lang: str) -> str:
    """What a language's MT test pairs are: the config's `label`, else its kind's (workflow_scripts/mt_sources/)."""
    return _label(mt_of(config, lang), {name: spec.label for name, spec in MT_SOURCES.items()})


def data_label(layout: Any, lang: str) -> str:
    """What a language's corpus and MT pairs are, copied into each record's details (the "Data:" line of every
    table and figure)."""
    spec = layout.config["languages"][lang]
    corpus, mt = spec["corpus"], mt_of(layout.config, lang)
    both = corpora.of(layout.config, lang).with_mt.get(mt["kind"])  # one name for the pair, as the corpus kind gives it
    if both and not corpus.get("label") and not mt.get("label"):
        return both
    return f"{corpus_label(layout.config, lang)} for adaptation and held-out text; MT: {mt_label(layout.config, lang)}"


def mt_data_label(layout: Any, lang: str) -> str:
    """``data_label`` of the mt records, which also say where a prompt that is not the paper's comes from (the
    config's, or the English-instruction template: workflow_scripts.prompts)."""
    from workflow_scripts import prompts

    source = prompts.prompt_source("mt", lang)
    label = data_label(layout, lang)
    return label if source == "paper" else f"{label}; mt prompt: {prompts.PROMPT_SOURCES[source]}"
