"""Which cells are published and where (rules/publish.smk, tools/preflight): pure Python, no hub contact."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path

# the hub's repository names: letters, digits, "-", "_", "."; no "--" or ".."; neither starting nor ending with "-"
# or "."; at most 96 characters
MAX_NAME = 96


def data_licences(corpus_kind: str, mt_kind: str) -> tuple[str | None, str | None]:
    """The licences of a language's corpus and MT pairs, named in the model cards: their kinds' (the text a cell is
    adapted on: workflow_scripts/corpora/; the pairs it is measured with: workflow_scripts/mt_sources/); None:
    unknown (your own files carry no licence the workflow knows)."""
    from workflow_scripts import corpora, mt_sources

    return corpora.spec(corpus_kind).licence, mt_sources.spec(mt_kind).licence


def repo_id(prefix: str, model: str, lang: str, slug: str) -> str:
    """The repository of a cell: ``<namespace>/[<name prefix>-]<model>-<lang>-<method slug>``, made a valid hub
    name (a name too long is cut and ends with a hash of the whole, so that two cells never share one)."""
    namespace, _, head = prefix.partition("/")
    name = "-".join(p for p in (head, model, lang, slug) if p)
    name = re.sub(r"[^A-Za-z0-9._-]", "-", name)
    name = re.sub(r"[-.]{2,}", "-", name).strip("-.")
    if len(name) > MAX_NAME:
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        name = name[: MAX_NAME - 9].rstrip("-.") + "-" + digest
    return f"{namespace}/{name}"


def adapted(cells: list) -> list:
    """Every cell of the grid but Source's: those that get a model card."""
    return [(model, lang, m) for model, lang, m in cells if m.slug != "Source"]


def _matches(wanted: list[str] | None, *names: str) -> bool:
    return wanted is None or any(n in wanted for n in names)


def selected(publish: dict, cells: list) -> list:
    """The adapted cells ``publish`` uploads (none without repo_prefix): its models, languages and methods (by label
    or slug; null: all)."""
    if not publish.get("repo_prefix"):
        return []
    return [
        (model, lang, m)
        for model, lang, m in adapted(cells)
        if _matches(publish.get("models"), model)
        and _matches(publish.get("languages"), lang)
        and _matches(publish.get("methods"), m.label, m.slug)
    ]


def selection_problems(publish: dict, cells: list) -> list[str]:
    """The names in publish.models, .languages and .methods that no adapted cell of the grid has."""
    cells = adapted(cells)
    have = {
        "models": {model for model, _, _ in cells},
        "languages": {lang for _, lang, _ in cells},
        "methods": {n for _, _, m in cells for n in (m.label, m.slug)},
    }
    return [
        f"publish.{key}: {name!r} names no adapted cell of the grid (have {sorted(have[key])})"
        for key in have
        for name in publish.get(key) or []
        if name not in have[key]
    ]


def config_fingerprint(configfiles: Sequence[str | Path]) -> str:
    """SHA-256 of the configuration files' content as parsed YAML (comments and layout aside), in the order given."""
    import yaml

    content = [yaml.safe_load(Path(f).read_text(encoding="utf-8")) for f in configfiles]
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()
