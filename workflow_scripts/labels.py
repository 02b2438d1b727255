"""What a language's data is, in words: the corpus D and held-out text, the MT pairs, and the data label each result
record carries (the "Data:" line of every table and figure). ``layout`` is a ``paths.Layout`` (only its config is
read; not imported, so that the task registry reading these stays below the paths module)."""

from __future__ import annotations

from typing import Any

from workflow_scripts.orchid import LABEL as ORCHID_LABEL

L10N_LABEL = "stand-in for CC-100 / FLORES-200: LibreOffice UI translations (Debian libreoffice-l10n)"
# what each corpus kind's text is (the adaptation corpus D and the held-out set), and each MT kind's pairs, where the
# config gives no `label`; your own files (corpus kind text, mt kinds tsv and jsonl) are named by their file
CORPUS_LABELS = {"cc100": "CC-100", "orchid": ORCHID_LABEL, "text": "your text ({file})"}
MT_LABELS = {
    "flores": "FLORES-200",
    "l10n": "stand-in for FLORES-200: LibreOffice UI translations (Debian libreoffice-l10n)",
    "tsv": "your pairs ({file})",
    "jsonl": "your pairs ({file})",
}


def _label(spec: dict, labels: dict[str, str]) -> str:
    if spec.get("label"):
        return spec["label"]
    file = str(spec.get("path") or spec.get("url") or "").rstrip("/").rsplit("/", 1)[-1]
    return labels[spec["kind"]].format(file=file)


def corpus_label(config: dict, lang: str) -> str:
    """What a language's corpus D and held-out text are: the config's `label`, else its kind's."""
    return _label(config["languages"][lang]["corpus"], CORPUS_LABELS | {"l10n": L10N_LABEL})


def mt_label(config: dict, lang: str) -> str:
    """What a language's MT test pairs are: the config's `label`, else its kind's."""
    return _label(config["languages"][lang].get("mt", {"kind": "l10n"}), MT_LABELS)


def data_label(layout: Any, lang: str) -> str:
    """What a language's corpus and MT pairs are, copied into each record's details (the "Data:" line of every
    table and figure)."""
    spec = layout.config["languages"][lang]
    corpus, mt = spec["corpus"], spec.get("mt", {"kind": "l10n"})
    if corpus["kind"] == "l10n" and mt["kind"] == "l10n" and not corpus.get("label") and not mt.get("label"):
        return L10N_LABEL
    if (corpus["kind"], mt["kind"]) == ("cc100", "flores") and not corpus.get("label") and not mt.get("label"):
        return "CC-100 / FLORES-200"
    return f"{corpus_label(layout.config, lang)} for adaptation and held-out text; MT: {mt_label(layout.config, lang)}"


def mt_data_label(layout: Any, lang: str) -> str:
    """``data_label`` of the mt records, which also say where a prompt that is not the paper's comes from (the
    config's, or the English-instruction template: workflow_scripts.prompts)."""
    from workflow_scripts import prompts

    source = prompts.prompt_source("mt", lang)
    label = data_label(layout, lang)
    return label if source == "paper" else f"{label}; mt prompt: {prompts.PROMPT_SOURCES[source]}"
