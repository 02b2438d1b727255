"""What the kinds that read one text file share (cc100, text): the file is the config's ``path``, or its ``url``
fetched by the local rule download_cc100 into ``<downloads>/cc100/<lang>.txt.xz``; rule sample_cc100 streams it once
and samples D and a disjoint held-out set (workflow_scripts/corpus.py ``sample``). Planning reads a local file as that
step reads it (``corpus_file_problems``). Registers no kind: a kind of this family names these functions in its spec.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from workflow_scripts.corpora import LocalFile, UrlFile
from workflow_scripts.io import UserError

RULE = "sample_cc100"
# A local corpus file at planning: one of at most CORPUS_COUNT_BYTES on disk is read whole and its usable lines
# counted (a few seconds at most); of a larger one, the first CORPUS_HEAD_BYTES decompressed bytes.
CORPUS_COUNT_BYTES = 64 << 20
CORPUS_HEAD_BYTES = 4 << 20
CORPUS_JUDGE_LINES = 1000  # usable lines kept to judge the script
KEYS = {
    "path": {"type": "string", "description": "A local file; give path or url."},
    "url": {
        "type": "string",
        "description": (
            "Where to download the file, e.g. https://data.statmt.org/cc-100/th.txt.xz; fetched once by the local "
            "rule download_cc100 into results/downloads/cc100/."
        ),
    },
}


def download(lang: str, downloads: str) -> str:
    """Where download_cc100 writes a language's file (the rule's output pattern with ``{lang}``, ``<downloads>``)."""
    return f"{downloads}/cc100/{lang}.txt.xz"


def source(lang: str, corpus: dict, downloads: str) -> LocalFile | UrlFile:
    """The configured local file, or the download of the configured url."""
    if corpus.get("path"):
        return LocalFile(f"languages.{lang}.corpus.path", corpus["path"], f"corpus {lang}")
    url = corpus["url"]
    return UrlFile(f"languages.{lang}.corpus.url", url, download(lang, downloads), f"corpus {lang} ({url})")


def check(config: dict, lang: str, corpus: dict, workdir: Path) -> list[str]:
    """Exactly one of path and url; a url that can be fetched; a local file that the sampling step reads."""
    if ("path" in corpus) == ("url" in corpus):
        return [f"languages.{lang}.corpus: give exactly one of path and url for corpus kind {corpus['kind']!r}"]
    if "url" in corpus:
        from urllib.parse import urlparse

        url = urlparse(corpus["url"])
        if url.scheme not in ("http", "https", "ftp") or not url.netloc:
            return [
                f"languages.{lang}.corpus.url: {corpus['url']!r} is not an http(s) or ftp URL; give one such as "
                f"https://data.statmt.org/cc-100/{lang}.txt.xz, or a local file as path"
            ]
        return []
    if not (workdir / corpus["path"]).is_file():
        return [f"languages.{lang}.corpus.path: file {corpus['path']!r} does not exist"]
    return check_corpus_file(workdir / corpus["path"], lang, config, corpus["kind"])


def notes(config: dict, langs: list[str], workdir: Path) -> list[str]:
    """A url is fetched and read whole only by the jobs; a large local file is read whole only by the sampling job."""
    data = config.get("data", {})
    want = f"n_train + n_heldout = {data.get('n_train', '?')} + {data.get('n_heldout', '?')}"
    notes, by_source = [], {"url": [], "path": []}
    for lang in langs:
        corpus = config["languages"][lang]["corpus"]
        if "url" in corpus:
            by_source["url"].append(lang)
            continue
        path = workdir / corpus.get("path", "")
        if path.is_file() and path.stat().st_size > CORPUS_COUNT_BYTES:
            by_source["path"].append(lang)
    if by_source["url"]:
        notes.append(
            f"languages.*.corpus.url ({', '.join(by_source['url'])}): download_cc100 fetches each file when the run "
            f"starts (an HTTP error stops that job); sample_cc100 then checks that it decompresses, is UTF-8 text "
            f"and holds {want} distinct usable lines"
        )
    if by_source["path"]:
        notes.append(
            f"languages.*.corpus.path ({', '.join(by_source['path'])}): each file is over "
            f"{CORPUS_COUNT_BYTES >> 20} MB, so only its start was checked now; sample_cc100 checks the whole stream "
            f"(decompression, {want} distinct usable lines)"
        )
    return notes


def mean_line_chars(config: dict, lang: str, workdir: Path) -> float | None:
    """The mean characters of a usable line of a local file of at most CORPUS_COUNT_BYTES; else None."""
    corpus = config["languages"][lang]["corpus"]
    if "path" not in corpus:
        return None
    path = workdir / corpus["path"]
    st = path.stat()
    if st.st_size > CORPUS_COUNT_BYTES:
        return None
    usable, chars = _counted(path.resolve(), st.st_mtime_ns, st.st_size)
    return chars / usable if usable else None


@functools.lru_cache(maxsize=32)
def _counted(path: Path, mtime_ns: int, size: int) -> tuple[int, int]:
    scan = scan_corpus(path, True)
    return scan.usable, scan.chars


@dataclass
class CorpusScan:
    """What planning read of a local corpus file, cleaned as the sampling step cleans it (corpus.sample_lines)."""

    whole: bool  # the whole file was read (else its first CORPUS_HEAD_BYTES decompressed bytes)
    usable: int  # usable lines: non-blank, valid UTF-8, no NUL byte, at most MAX_LINE_CHARS characters
    distinct: int  # distinct usable lines, counted up to ``distinct_cap``
    chars: int  # characters of the usable lines
    skipped: str  # what was skipped, in words
    texts: list[str]  # the first usable lines (up to CORPUS_JUDGE_LINES)


def scan_corpus(path: Path, whole: bool, distinct_cap: int = 0, what: str = "corpus") -> CorpusScan:
    """Read a local corpus file (plain, gzip or xz, told by its magic bytes) line by line as the sampling step does:
    all of it with ``whole``, else its first CORPUS_HEAD_BYTES decompressed bytes, never holding more than an
    over-long line's MAX_LINE_CHARS (a 30 GB file of one line plans in a fraction of a second). UTF-16 text inside
    a compressed file is a UserError, as in the step."""
    from workflow_scripts.corpus import _Counts, _usable_lines, open_text_stream
    from workflow_scripts.io import MAX_LINE_CHARS, check_text_head

    counts, texts, seen, chars = _Counts(), [], set(), 0
    too_long = 4 * MAX_LINE_CHARS + 8  # bytes of a line in progress that must be over MAX_LINE_CHARS characters

    def take(block: bytes) -> None:
        nonlocal chars
        lines = _usable_lines(block, counts, 1, MAX_LINE_CHARS)
        chars += sum(map(len, lines))
        texts.extend(lines[: CORPUS_JUDGE_LINES - len(texts)])
        for line in lines:
            if len(seen) >= distinct_cap:
                break
            seen.add(line)

    read, carry, skipping, ended = 0, b"", False, False
    with open_text_stream(path, external=False) as f:
        while whole or read < CORPUS_HEAD_BYTES:
            chunk = f.read(1 << 20)
            if not chunk:
                ended = True
                break
            if not read:
                check_text_head(path, chunk[:4096], what=f"decompressed {what}")
            read += len(chunk)
            if skipping:  # the rest of an over-long line
                cut = chunk.find(b"\n")
                if cut < 0:
                    continue
                counts.long += 1
                counts.total += 1
                skipping, chunk = False, chunk[cut + 1 :]
            chunk = carry + chunk
            cut = chunk.rfind(b"\n") + 1
            carry = chunk[cut:]
            if cut:
                take(chunk[:cut])
            if len(carry) > too_long:
                skipping, carry = True, b""
    if ended and skipping:
        counts.long += 1
        counts.total += 1
    elif ended and carry:
        take(carry)
    skipped = (
        f"{counts.total} line(s): {counts.empty} blank, {counts.invalid} not valid UTF-8, {counts.nul} with NUL "
        f"bytes, {counts.long} longer than {MAX_LINE_CHARS} characters"
    )
    return CorpusScan(
        ended, counts.total - counts.empty - counts.invalid - counts.nul - counts.long, len(seen), chars, skipped, texts
    )


def corpus_file_problems(
    path: Path, lang: str, config: dict, kind: str = "cc100"
) -> tuple[list[str], CorpusScan | None]:
    """A local corpus file (a kind of this family) as the sampling step (rule sample_cc100) will read it: not empty,
    in a compression it reads (gzip or xz by magic bytes, whatever the suffix), UTF-8 text with usable lines, some
    in the language's script; a file of at most CORPUS_COUNT_BYTES is read whole and its distinct usable lines
    counted against data.n_train + data.n_heldout. Never refuses a file the step accepts. Returns the problems and
    what was read (None where nothing could be)."""
    from workflow_scripts.corpus import compression
    from workflow_scripts.io import check_text_head
    from workflow_scripts.languages import in_script

    key, shown = f"languages.{lang}.corpus.path", str(path)
    if path.stat().st_size == 0:
        return [f"{key}: file {shown!r} is empty"], None
    try:
        with open(path, "rb") as f:
            check_text_head(path, f.read(4096), what=f"{kind} corpus", expect=compression(path))
    except UserError as e:
        return [f"{key}: {e}"], None
    data = config.get("data", {})
    want = data.get("n_train", 0) + data.get("n_heldout", 0)
    whole = path.stat().st_size <= CORPUS_COUNT_BYTES
    try:
        scan = scan_corpus(path, whole, distinct_cap=want, what=f"{kind} corpus")
    except UserError as e:
        return [f"{key}: {e}"], None
    except (OSError, EOFError, ValueError) as e:  # lzma.LZMAError and gzip.BadGzipFile are OSError or ValueError
        return [f"{key}: cannot decompress {shown!r}: {e}"], None
    if scan.whole and not scan.usable:
        return [
            f"{key}: {shown!r} holds no usable line ({scan.skipped}): a corpus is UTF-8 text, one sentence or "
            "paragraph a line"
        ], scan
    if scan.texts and not any(in_script(t, lang) for t in scan.texts):
        return [
            f"{key}: none of the first {len(scan.texts)} usable lines of {shown!r} is in the script of {lang!r} "
            f"(e.g. {scan.texts[0][:60]!r}): is it the file of another language?"
        ], scan
    if scan.whole and want and scan.distinct < want:
        return [
            f"data.n_train: n_train {data['n_train']} + n_heldout {data['n_heldout']} = {want} distinct lines asked "
            f"for, but {key} {shown!r} holds {scan.usable} usable lines, {scan.distinct} of them distinct (of "
            f"{scan.skipped}); lower data.n_train or data.n_heldout, or give a larger file"
        ], scan
    return [], scan


def check_corpus_file(path: Path, lang: str, config: dict | None = None, kind: str = "cc100") -> list[str]:
    """``corpus_file_problems``' problems alone."""
    return corpus_file_problems(path, lang, config or {}, kind)[0]
