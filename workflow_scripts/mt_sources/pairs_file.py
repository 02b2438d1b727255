"""What the kinds that read your own pairs file share (tsv, jsonl): the file is the config's ``path``; rule own_mt
reads it whole (workflow_scripts/corpus.py ``read_own_pairs``, the format being the kind's name) and keeps every pair
in file order. Planning reads it as that step does (pairs files are small). Registers no kind: a kind of this family
names these functions in its spec."""

from __future__ import annotations

from pathlib import Path

from workflow_scripts.corpora import LocalFile
from workflow_scripts.io import UserError

RULE = "own_mt"
COSTS = {RULE: (2000, 15)}  # reads your pairs file (a few MB at most) in memory
STEPS = {RULE: "data: your MT pairs"}
LABEL = "your pairs ({file})"
KEYS = {"path": {"type": "string", "minLength": 1, "description": "The pairs file."}}


def check(config: dict, lang: str, mt: dict, workdir: Path) -> list[str]:
    """The pairs file exists and reads as the rule own_mt reads it."""
    from workflow_scripts.corpus import read_own_pairs

    key = f"languages.{lang}.mt.path"
    if "path" not in mt:
        return [f"{key} is required for mt kind {mt['kind']!r}: your pairs file"]
    path = workdir / mt["path"]
    if not path.is_file():
        return [f"{key}: file {mt['path']!r} does not exist"]
    try:
        read_own_pairs(path, mt["kind"], lang)
    except UserError as e:
        return [f"{key}: {e}"]
    return []


def source(lang: str, mt: dict) -> LocalFile:
    return LocalFile(f"languages.{lang}.mt.path", mt.get("path", ""), f"mt pairs {lang} ({mt['kind']})")
