"""The registry of MT test-set kinds (``languages.<l>.mt.kind``): one module per kind in this folder declares what the
rest of the workflow needs to know about it (``MtSpec``): its words in the config reference, its default label, the
data licence model cards state, the rule that writes its pairs (``data/<lang>/<kind>/mt.tsv``), the costs and
cost-table words of the rules it brings, its planning check and notes, and what it reads (your pairs file, a hub
dataset's files: preflight and ``download_all`` list them). The schema's enum, the ``mt`` wildcard, the labels, the
model cards, the planning checks, preflight, the job costs and the cost table read them from here (docs/extending.md,
"An MT test-set kind"). A kind's program (selection, parsing) is a module of ``workflow_scripts`` its rule runs.
``pairs_file`` holds what the kinds reading your own pairs file share; it registers no kind. Nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workflow_scripts import registry
from workflow_scripts.corpora import LocalFile


@dataclass(frozen=True)
class HubFiles:
    """Files of a dataset (a hub id or a local copy: ``root``) its rule reads: preflight checks access, the files of
    ``split`` and their ``columns`` (``copy``: what the dataset is, in the fixes it offers; ``key``: the config key)."""

    root: str
    paths: tuple[str, ...]
    key: str
    item: str
    copy: str
    split: str
    columns: tuple[str, ...]


Source = LocalFile | HubFiles


@dataclass(frozen=True)
class MtSpec:
    """One MT test-set kind.

    ``order``: its place in ``MT_SOURCES`` (the schema's enum, the config reference). ``doc``: what it is, its part of
    the config reference's description of ``mt.kind``. ``label``: what tables, figures and pages call its pairs where
    the config gives no ``label`` (``{file}``: the name of the configured file). ``licence``: the data licence model
    cards state (a hub licence id; None: unknown). ``rule``: the rule writing its ``data/<lang>/<kind>/mt.tsv`` (kinds
    may share one: the rule's ``mt`` wildcard admits each kind naming it). ``costs``: the rules it brings, each with
    its (MB, minutes) (plan/resources.py); ``steps``: its jobs' words in the cost table, by rule. ``keys``:
    JSON-schema properties of ``languages.<l>.mt`` it reads (the schema itself has only ``kind`` and ``label``; kinds
    sharing a key declare it alike). ``selected``: the name warnings
    give its pairs where its rule selects at most ``data.n_mt`` of them as ``evaluation.items`` says (FLORES); None:
    every pair, in file order.

    ``check(config, lang, mt, workdir)``: the planning problems of ``languages.<lang>.mt``, one line each, naming the
    key. ``source(lang, mt)``: what its rule reads that preflight checks (``LocalFile``, ``HubFiles``; None: nothing).
    ``download(lang, mt, downloads)``: what ``download_all`` fetches for it (a rule's output), or None.
    ``hub_id(mt)``: the hub dataset model cards link, or None. ``notes(config, langs, workdir)``: what planning
    cannot check for the languages of this kind.
    """

    name: str
    order: int
    doc: str
    label: str
    rule: str
    check: Callable[[dict, str, dict, Path], list[str]]
    licence: str | None = None
    costs: dict[str, tuple[int, int]] = field(default_factory=dict)
    steps: dict[str, str] = field(default_factory=dict)
    keys: dict[str, Any] = field(default_factory=dict)
    selected: str | None = None
    source: Callable[[str, dict], Source | None] | None = None
    download: Callable[[str, dict, str], str | None] | None = None
    hub_id: Callable[[dict], str | None] | None = None
    notes: Callable[[dict, list[str], Path], list[str]] | None = None


# Filled by the modules of this folder as the package imports them (``discover``), in ``order``.
MT_SOURCES: dict[str, MtSpec] = {}
# a language without an ``mt`` block: its MT pairs are the l10n package's (the embedded default)
DEFAULT = {"kind": "l10n"}


def register(spec: MtSpec) -> MtSpec:
    """Add a kind's spec to ``MT_SOURCES`` (kept in ``order``); a name registered twice is an error."""
    return registry.add(MT_SOURCES, spec, "mt kind")


def discover() -> None:
    """Import every module of this folder: each registers its kind (``pairs_file`` none)."""
    registry.import_all(__name__, __path__)


def mt_of(config: dict, lang: str) -> dict:
    """A language's ``mt`` block (the default where it has none)."""
    return config["languages"][lang].get("mt", DEFAULT)


def spec(name: str) -> MtSpec:
    """The spec of the MT test-set kind ``name``; an unknown name is an error that lists the registered kinds."""
    return registry.lookup(MT_SOURCES, name, "MT test-set kind", "mt_sources")


def of(config: dict, lang: str) -> MtSpec:
    """The spec of a language's MT kind."""
    return spec(mt_of(config, lang)["kind"])


def langs_of(config: dict, name: str) -> list[str]:
    """The languages whose MT pairs are of kind ``name``, in config order."""
    return [lang for lang in config["languages"] if mt_of(config, lang)["kind"] == name]


def made_by(rule: str) -> list[str]:
    """The kinds whose pairs the rule writes (its ``mt`` wildcard's values)."""
    return [name for name, spec in MT_SOURCES.items() if spec.rule == rule]


def kind_description() -> str:
    """The config reference's words for ``mt.kind``: each kind's ``doc``."""
    return registry.kind_description(MT_SOURCES, "mt_sources")


discover()
# every rule a kind brings, with its cost (MB, minutes) and its jobs' words in the cost table
COSTS = registry.merged(MT_SOURCES, "costs")
STEP_WORDS = registry.merged(MT_SOURCES, "steps")
