"""The data stage: the adaptation corpus D, the held-out text and the MT test set (paper 002, §6.2, §6.4).

Three sources, one module:
- ``split``: a list of (English, target) pairs (the embedded default's LibreOffice stand-in, see l10n.py) cut into the
  MT test set, a held-out target-text set and D, disjoint by target string.
- ``sample``: D (30K lines) and the held-out set (up to 100K lines) sampled uniformly at random, in one streaming pass,
  from a CC-100 per-language file (``th.txt.xz``: one paragraph a line, documents separated by blank lines).
- ``flores``: the MT test set, 500 FLORES-200 devtest sentences (the paper's own with ``--items paper``, see
  items.py), from the ``openlanguagedata/flores_plus`` parquet layout (a local folder or the hub).
- ``pairs``: the MT test set from your own pairs file (``English<TAB>target`` lines, or JSON lines), every pair kept
  in file order.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import lzma
import math
import random
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from workflow_scripts.flores import (  # noqa: F401 (FLORES_HUB_ID, align_flores: part of this step's interface)
    FLORES_HUB_ID,
    align_flores,
    flores_code,
    flores_listing,
    load_flores_pairs,
    load_flores_table,
    select_flores,
)
from workflow_scripts.io import (
    MAX_LINE_CHARS,
    UserError,
    check_text_head,
    cli_main,
    read_corpus,
    read_pairs_with_stats,
    setup_logging,
    sniff_encoding,
    write_json,
    write_text,
)
from workflow_scripts.languages import FLORES_ENGLISH, check_script, language_arg, script_name  # noqa: F401

_BLOCK_BYTES = 1 << 22  # decompressed bytes handled per block when streaming; the result does not depend on it


def _mean_chars(lines: Sequence[str]) -> float:
    return round(sum(map(len, lines)) / len(lines), 2) if lines else 0.0


def _write_lines(path: str | Path, lines: Sequence[str]) -> None:
    """One sentence a line, atomically; a line break inside a sentence would silently shift every later line."""
    for s in lines:
        if "\n" in s or "\r" in s:
            raise ValueError(f"{path}: refusing to write a sentence that contains a line break: {s[:80]!r}")
    write_text(path, "".join(f"{s}\n" for s in lines))


def _write_pairs(path: str | Path, pairs: Sequence[tuple[str, str]]) -> None:
    """``English<TAB>target`` a line, atomically."""
    for en, tgt in pairs:
        if any(c in s for s in (en, tgt) for c in "\t\n\r"):
            raise ValueError(f"{path}: refusing to write a pair that contains a tab or line break: {(en, tgt)!r}")
    write_text(path, "".join(f"{en}\t{tgt}\n" for en, tgt in pairs))


# ----------------------------------------------------------------------------------------------------------------------
# pairs: your own MT test set

# The keys of a JSONL pair: the English source and the target (or the language's code as the target's key).
JSONL_SOURCE_KEYS, JSONL_TARGET_KEYS = ("source", "en"), ("target",)


def _jsonl_pair(obj: object, lang: str | None, where: str) -> tuple[str, str]:
    if not isinstance(obj, dict):
        raise UserError(f"{where}: expected a JSON object with the keys source and target, found {obj!r:.60}")
    source = next((obj[k] for k in JSONL_SOURCE_KEYS if k in obj), None)
    target = next((obj[k] for k in (*JSONL_TARGET_KEYS, lang) if k and k in obj), None)
    if not isinstance(source, str) or not isinstance(target, str):
        keys = f"{' or '.join(JSONL_SOURCE_KEYS)} and {' or '.join([*JSONL_TARGET_KEYS, *([lang] if lang else [])])}"
        raise UserError(f"{where}: expected text under the keys {keys}; found the keys {sorted(obj)}")
    return source, target


def read_own_pairs(path: str | Path, fmt: str, lang: str | None = None) -> tuple[list[tuple[str, str]], dict]:
    """Your own English→target pairs (``fmt`` tsv: ``English<TAB>target``; jsonl: one object a line, see
    ``_jsonl_pair``), whitespace runs made one space, in file order; the target side must be mostly in ``lang``'s
    script. A pair with an empty side, or none at all, is a UserError naming the file."""
    if fmt == "tsv":
        raw, _ = read_pairs_with_stats(path)
    elif fmt == "jsonl":
        import json

        raw = []
        for i, line in enumerate(read_corpus(path, what="JSONL pairs"), 1):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise UserError(f"{path}: pair {i} is not JSON ({e}): {line[:60]!r}") from None
            raw.append(_jsonl_pair(obj, lang, f"{path}: pair {i}"))
    else:
        raise ValueError(f"unknown pairs format {fmt!r} (tsv, jsonl)")
    pairs = [(" ".join(en.split()), " ".join(tgt.split())) for en, tgt in raw]
    empty = [i for i, (en, tgt) in enumerate(pairs, 1) if not en or not tgt]
    if empty:
        raise UserError(f"{path}: {len(empty)} pair(s) with an empty side, the first is pair {empty[0]}")
    share = check_script(path, [t for _, t in pairs], lang, what="pairs' target side") if lang else None
    report = {
        "pairs_file": str(path),
        "format": fmt,
        "pairs": len(pairs),
        "duplicate_sources": len(pairs) - len({en for en, _ in pairs}),
        "target_script": script_name(lang) if lang else None,
        "target_script_share": share,
        "mean_chars": {"english": _mean_chars([e for e, _ in pairs]), "target": _mean_chars([t for _, t in pairs])},
    }
    return pairs, report


# ----------------------------------------------------------------------------------------------------------------------
# split: pairs → MT test set, held-out text, D


def split_pairs(
    pairs: Sequence[tuple[str, str]], *, n_train: int | None, n_heldout: int, n_mt: int, seed: int
) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """Seeded uniform shuffle of the pairs, then disjoint slices: MT test pairs, held-out targets, D's targets.

    The pairs are sorted before shuffling, so the split depends only on the set of pairs and the seed. ``n_train`` None
    or 0 means all remaining pairs. Pairs must be unique on both sides (l10n.clean_pairs guarantees it); this is checked
    because disjointness by target string rests on it.
    """
    if min(n_heldout, n_mt, n_train or 0) < 0:
        raise ValueError(f"negative size requested: n_train={n_train}, n_heldout={n_heldout}, n_mt={n_mt}")
    for side, name in ((0, "English"), (1, "target")):
        if len({p[side] for p in pairs}) != len(pairs):
            raise ValueError(f"the pairs are not unique on the {name} side; deduplicate them first (l10n.clean_pairs)")
    want = n_mt + n_heldout + (n_train or 1)  # "all remaining" still needs at least one line of D
    if len(pairs) < want:
        asked = f"n_mt={n_mt} + n_heldout={n_heldout} + n_train={n_train or 'all remaining (at least 1)'}"
        raise ValueError(
            f"too few pairs: {len(pairs)} available, {want} asked for ({asked}); give more pairs or ask for fewer "
            "(data.n_mt, data.n_heldout, data.n_train)"
        )
    order = sorted(pairs)
    random.Random(seed).shuffle(order)
    mt = order[:n_mt]
    heldout = [t for _, t in order[n_mt : n_mt + n_heldout]]
    rest = order[n_mt + n_heldout :]
    train = [t for _, t in (rest[:n_train] if n_train else rest)]
    return train, heldout, mt


# ----------------------------------------------------------------------------------------------------------------------
# sample: streaming reservoir sampling of a CC-100 file


# The compressions a corpus may come in, by the magic bytes that start the file (its suffix may say otherwise).
_DECOMPRESSORS = {"xz": ("xz", lzma.open), "gzip": ("gzip", gzip.open)}


def compression(path: str | Path) -> str | None:
    """How ``path`` is compressed, by its first bytes (not its suffix): "xz", "gzip", or None for anything else."""
    with open(path, "rb") as f:
        kind = sniff_encoding(f.read(8))
    return kind if kind in _DECOMPRESSORS else None


@contextlib.contextmanager
def open_text_stream(path: str | Path, *, external: bool = True) -> Iterator[BinaryIO]:
    """Open a plain, gzip or xz file (told by its magic bytes, whatever its suffix) for binary reading.

    With ``external``, a compressed file is decompressed by the ``xz``/``gzip`` program when it is installed: it runs
    in its own process, in parallel with the Python loop that reads it (decompression is the bottleneck). A failed
    decompressor raises; it never passes as a short file.
    """
    path = Path(path)
    kind = compression(path)
    tool, opener = _DECOMPRESSORS.get(kind, (None, open))
    if tool and external and shutil.which(tool):
        proc = subprocess.Popen([tool, "-dc", "--", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        finished = False
        try:
            yield proc.stdout
            finished = True
        finally:
            if not finished:  # left early on an exception: stop the decompressor rather than wait for it
                proc.kill()
            proc.stdout.close()
            err = proc.stderr.read().decode(errors="replace").strip()
            proc.stderr.close()
            rc = proc.wait()
        if rc != 0:
            raise OSError(f"{tool} -dc {path} failed with exit status {rc}: {err}")
        return
    with opener(path, "rb") as f:
        yield f


def _blocks(f, block_bytes: int) -> Iterator[bytes]:
    """Chunks of whole lines (each ends with a newline, except possibly the file's last chunk)."""
    carry = b""
    while chunk := f.read(block_bytes):
        chunk = carry + chunk
        cut = chunk.rfind(b"\n") + 1
        carry = chunk[cut:]
        if cut:
            yield chunk[:cut]
    if carry:
        yield carry


def _decode_block(block: bytes) -> tuple[list[str], int]:
    """The block's lines decoded as UTF-8 (strict, line by line) and the number of lines that failed to decode."""
    body = block[:-1] if block.endswith(b"\n") else block
    try:
        # A newline byte never occurs inside a UTF-8 sequence, so the block decodes iff every line does: decode the
        # block at C speed and fall back to line by line only for the rare block with a bad line.
        return body.decode("utf-8").split("\n"), 0
    except UnicodeDecodeError:
        lines, bad = [], 0
        for raw in body.split(b"\n"):
            try:
                lines.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                bad += 1
        return lines, bad


def _unit(rng: random.Random) -> float:
    """Uniform on the open interval (0, 1)."""
    u = rng.random()
    while u == 0.0:
        u = rng.random()
    return u


def _skip(rng: random.Random, w: float) -> int:
    """Algorithm L's geometric skip: how many items to pass over before the next replacement."""
    if w >= 1.0:
        return 0
    if w <= 0.0:
        return 1 << 62
    return math.floor(math.log(_unit(rng)) / math.log1p(-w))


@dataclass
class _Counts:
    """What ``sample_lines`` read and skipped, line by line (bytes: decompressed)."""

    total: int = 0
    empty: int = 0
    short: int = 0  # includes the empty lines until the end of the stream
    long: int = 0
    invalid: int = 0
    nul: int = 0
    cr: int = 0
    nbytes: int = 0


def _usable_lines(block: bytes, counts: _Counts, min_chars: int, max_chars: int) -> list[str]:
    """The usable lines of one block, cleaned as ``sample_lines`` documents; what was skipped goes into ``counts``."""
    counts.nbytes += len(block)
    if b"\x00" in block:  # rare: a line with NUL bytes is valid UTF-8 but not text (a binary record); skip it
        raws = (block[:-1] if block.endswith(b"\n") else block).split(b"\n")
        kept = [r for r in raws if b"\x00" not in r]
        counts.nul += len(raws) - len(kept)
        counts.total += len(raws) - len(kept)
        if not kept:
            return []
        block = b"\n".join(kept) + b"\n"
    parts, bad = _decode_block(block)
    counts.invalid += bad
    counts.total += len(parts) + bad
    stripped = list(map(str.rstrip, parts))
    counts.empty += stripped.count("")
    valid = [s for s in stripped if len(s) >= min_chars] if min_chars > 1 else [s for s in stripped if s]
    counts.short += len(stripped) - len(valid)
    if valid and max(map(len, valid)) > max_chars:  # rare: the maximum is found at C speed
        kept = [s for s in valid if len(s) <= max_chars]
        counts.long += len(valid) - len(kept)
        valid = kept
    if b"\r" in block and any("\r" in s for s in valid):  # rare: test the bytes first, at C speed
        counts.cr += sum("\r" in s for s in valid)
        valid = [s.replace("\r", " ") for s in valid]
    return valid


class _AlgorithmL:
    """Li's Algorithm L, seeded: a uniform sample of k items of a stream, jumping over the items it will not keep."""

    def __init__(self, k: int, rng: random.Random):
        self.k, self.rng = k, rng
        self.items: list[str] = []
        self.w = math.exp(math.log(_unit(rng)) / k)
        self.next = k + _skip(rng, self.w)  # index (among fed items) of the next item that enters the full reservoir
        self.seen = 0  # items fed so far

    def feed(self, items: list[str]) -> None:
        """Offer the next items of the stream; only the replacements cost Python steps (about k ln(N / k) in all)."""
        if len(self.items) < self.k:
            self.items.extend(items[: self.k - len(self.items)])
        end = self.seen + len(items)
        while self.next < end:
            self.items[self.rng.randrange(self.k)] = items[self.next - self.seen]
            self.w *= math.exp(math.log(_unit(self.rng)) / self.k)
            self.next += _skip(self.rng, self.w) + 1
        self.seen = end


def _check_stream_head(path: str | Path) -> None:
    """Refuse (UserError naming the file) a corpus whose first bytes show UTF-16 text or a compression that
    open_text_stream does not read (it reads xz and gzip, whatever the suffix says)."""
    with open(path, "rb") as f:
        head = f.read(4096)
    kind = sniff_encoding(head)
    check_text_head(path, head, what="corpus", expect=kind if kind in _DECOMPRESSORS else None)


def _check_enough(
    path: str | Path, c: _Counts, seen: int, want: int, min_chars: int, max_chars: int, n: int, n_heldout: int
) -> None:
    """Errors naming the file: no usable line at all, or fewer than ``n + n_heldout``."""
    if seen == 0:
        raise UserError(
            f"{path}: the CC-100 corpus has no usable line ({c.total} line(s): {c.empty} blank or whitespace-only, "
            f"{c.invalid} not valid UTF-8, {c.nul} with NUL bytes, {c.short} shorter than {min_chars} and {c.long} "
            f"longer than {max_chars} characters); it must be UTF-8 text, one paragraph a line: check or download the "
            "file again"
        )
    if seen < want:
        raise UserError(
            f"{path}: too few valid lines: {seen} (of {c.total} lines; {c.empty} empty, {c.invalid} invalid UTF-8, "
            f"{c.nul} with NUL bytes, {c.short} shorter than {min_chars} characters, {c.long} longer than "
            f"{max_chars}), but n={n} + n_heldout={n_heldout} = {want} asked for; give a larger corpus or lower "
            "data.n_train / data.n_heldout"
        )


def _first_distinct(items: list[str], want: int) -> tuple[list[str], int]:
    """The first ``want`` distinct strings of ``items`` in order, and how many repeats were passed over."""
    chosen: dict[str, None] = {}
    duplicates = 0
    for s in items:
        if s in chosen:
            duplicates += 1
        else:
            chosen[s] = None
            if len(chosen) == want:
                break
    return list(chosen), duplicates


def sample_lines(
    path: str | Path,
    *,
    n: int,
    n_heldout: int,
    seed: int,
    min_chars: int = 1,
    max_chars: int = MAX_LINE_CHARS,
    oversample: float = 0.05,
    block_bytes: int = _BLOCK_BYTES,
    external: bool = True,
    lang: str | None = None,
) -> tuple[list[str], list[str], dict]:
    """Sample ``n`` lines (D) and ``n_heldout`` more (held-out) uniformly at random in one pass over a large text file.

    Cleaning, counted in the stats: lines that are not valid UTF-8 are skipped; trailing whitespace is stripped; lines
    left shorter than ``min_chars`` (empty and whitespace-only lines always) or longer than ``max_chars`` (see
    io.MAX_LINE_CHARS) are skipped; a carriage return inside a line becomes a space (it would split the line when read
    back in text mode). A file without a single usable line is an error naming it. Reservoir sampling (Li's Algorithm L,
    seeded) draws ``(n + n_heldout) * (1 + oversample)`` distinct line positions; the reservoir is shuffled and read in
    order, keeping the first occurrence of each string, the first ``n`` for D and the next ``n_heldout`` for the
    held-out set. So both sets are duplicate-free and disjoint by string as well as by position, and a string that
    occurs m times in the file is proportionally likelier to be drawn (as in the corpus). The result does not depend
    on ``block_bytes`` nor on ``external`` (see open_text_stream). Lines with NUL bytes are skipped and counted.
    With ``lang``, most sampled lines must be in its script (languages.check_script); the share is reported.
    """
    if n < 1 or n_heldout < 0 or min_chars < 1 or max_chars < min_chars or oversample < 0:
        raise ValueError(
            f"invalid request: n={n}, n_heldout={n_heldout}, min_chars={min_chars}, max_chars={max_chars}, "
            f"oversample={oversample}"
        )
    want = n + n_heldout
    rng = random.Random(seed)
    reservoir = _AlgorithmL(want + math.ceil(want * oversample), rng)
    counts = _Counts()
    _check_stream_head(path)
    start = time.perf_counter()
    with open_text_stream(path, external=external) as f:
        for i, block in enumerate(_blocks(f, block_bytes)):
            if i == 0:  # UTF-16 inside a compressed file shows only once decompressed
                check_text_head(path, block[:4096], what="decompressed corpus")
            reservoir.feed(_usable_lines(block, counts, min_chars, max_chars))
    seconds = time.perf_counter() - start
    counts.short -= counts.empty
    _check_enough(path, counts, reservoir.seen, want, min_chars, max_chars, n, n_heldout)
    rng.shuffle(reservoir.items)
    unique, duplicates = _first_distinct(reservoir.items, want)
    if len(unique) < want:
        raise UserError(
            f"{path}: only {len(unique)} distinct lines among the {len(reservoir.items)} sampled ({reservoir.seen} "
            f"valid lines), but {want} asked for; raise oversample (now {oversample}) or ask for fewer"
        )
    sample, heldout = unique[:n], unique[n:]
    share = check_script(path, sample + heldout, lang, what="corpus sample") if lang else None
    stats = {
        "input": str(path),
        "seed": seed,
        "lines_total": counts.total,
        "lines_valid": reservoir.seen,
        "skipped_empty": counts.empty,
        "skipped_invalid_utf8": counts.invalid,
        "skipped_nul": counts.nul,
        "skipped_short": counts.short,
        "skipped_long": counts.long,
        "min_chars": min_chars,
        "max_chars": max_chars,
        "carriage_returns_replaced": counts.cr,
        "script": script_name(lang) if lang else None,
        "script_share": share,
        "reservoir_size": len(reservoir.items),
        "duplicates_skipped": duplicates,
        "n_sample": len(sample),
        "n_heldout": len(heldout),
        "mean_chars_sample": _mean_chars(sample),
        "mean_chars_heldout": _mean_chars(heldout),
        "decompressed_bytes": counts.nbytes,
        "seconds": round(seconds, 3),
        "lines_per_second": round(counts.total / seconds) if seconds > 0 else None,
    }
    return sample, heldout, stats


# ----------------------------------------------------------------------------------------------------------------------
# command line


def parser() -> argparse.ArgumentParser:
    """The ``split``, ``sample`` and ``flores`` subcommands (rules/data.smk)."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("split", help="pairs TSV → D, held-out text, MT test set")
    s.add_argument("--pairs", required=True, help="TSV: English<TAB>target, one pair a line")
    s.add_argument("--n-train", type=int, default=0, help="size of D; 0 = all remaining pairs")
    s.add_argument("--n-heldout", type=int, required=True)
    s.add_argument("--n-mt", type=int, required=True)
    s.add_argument("--seed", type=int, required=True)
    s.add_argument("--out-train", required=True)
    s.add_argument("--out-heldout", required=True)
    s.add_argument("--out-mt", required=True)
    s.add_argument("--report", required=True)
    s.add_argument("--label", help="what the data is, e.g. 'stand-in for CC-100 / FLORES-200: ...'")
    s.add_argument(
        "--lang", type=language_arg, help="the target language: its side must be mostly in its script (check_script)"
    )
    s.add_argument("--log")

    c = sub.add_parser("sample", help="uniform sample of D and held-out lines from a CC-100 file (plain, .gz, .xz)")
    c.add_argument("--input", required=True)
    c.add_argument("--n", type=int, required=True)
    c.add_argument("--n-heldout", type=int, required=True)
    c.add_argument("--seed", type=int, required=True)
    c.add_argument("--min-chars", type=int, default=1)
    c.add_argument(
        "--max-chars", type=int, default=MAX_LINE_CHARS, help="longer lines are skipped and counted (see io.py)"
    )
    c.add_argument("--oversample", type=float, default=0.05, help="extra reservoir share that absorbs duplicates")
    c.add_argument("--lang", type=language_arg, help="the corpus's language: its lines must be mostly in its script")
    c.add_argument("--out-train", required=True)
    c.add_argument("--out-heldout", required=True)
    c.add_argument("--report", required=True)
    c.add_argument("--log")

    fl = sub.add_parser("flores", help="FLORES-200 English→target pairs (flores_plus parquet layout)")
    fl.add_argument("--root", required=True, help=f"local folder or hub id ({FLORES_HUB_ID})")
    fl.add_argument("--lang", required=True, type=language_arg, help="a language code or a FLORES code")
    fl.add_argument("--split", default="devtest")
    fl.add_argument("--n", type=int, default=500, help="sentences to select; 0 = all")
    fl.add_argument("--seed", type=int, required=True, help="the shuffle selection's seed (paper: always 42)")
    fl.add_argument("--items", choices=["paper", "first", "shuffle"], default="shuffle", help="items.py")
    fl.add_argument("--out", required=True, help="TSV: English<TAB>target")
    fl.add_argument("--ids", help="JSON listing the chosen FLORES ids and positions")
    fl.add_argument("--log")

    pr = sub.add_parser("pairs", help="your own English→target pairs (TSV or JSONL) → the MT test set")
    pr.add_argument("--input", required=True)
    pr.add_argument("--format", choices=["tsv", "jsonl"], required=True)
    pr.add_argument("--lang", type=language_arg, help="the target language: its side must be mostly in its script")
    pr.add_argument("--label", help="what the pairs are")
    pr.add_argument("--out", required=True, help="TSV: English<TAB>target")
    pr.add_argument("--report", required=True)
    pr.add_argument("--log")

    return p


def main(argv: list[str] | None = None) -> None:
    a = parser().parse_args(argv)
    log = setup_logging(a.log)
    if a.command == "split":
        pairs, lines = read_pairs_with_stats(a.pairs)
        share = check_script(a.pairs, [t for _, t in pairs], a.lang, what="pairs' target side") if a.lang else None
        try:
            train, heldout, mt = split_pairs(pairs, n_train=a.n_train, n_heldout=a.n_heldout, n_mt=a.n_mt, seed=a.seed)
        except ValueError as e:  # too few or duplicate pairs: the file's fault, not a bug
            raise UserError(f"{a.pairs}: {e}") from e
        report = {
            "source": a.label,
            "pairs_file": str(a.pairs),
            "pairs_in": len(pairs),
            "pairs_file_lines": lines,
            "target_script": script_name(a.lang) if a.lang else None,
            "target_script_share": share,
            "seed": a.seed,
            "counts": {"train": len(train), "heldout": len(heldout), "mt": len(mt)},
            "mean_chars_per_line": {
                "train": _mean_chars(train),
                "heldout": _mean_chars(heldout),
                "mt_english": _mean_chars([e for e, _ in mt]),
                "mt_target": _mean_chars([t for _, t in mt]),
            },
        }
        _write_lines(a.out_train, train)
        _write_lines(a.out_heldout, heldout)
        _write_pairs(a.out_mt, mt)
        write_json(a.report, report)
    elif a.command == "sample":
        sample, heldout, report = sample_lines(
            a.input,
            n=a.n,
            n_heldout=a.n_heldout,
            seed=a.seed,
            min_chars=a.min_chars,
            max_chars=a.max_chars,
            oversample=a.oversample,
            lang=a.lang,
        )
        _write_lines(a.out_train, sample)
        _write_lines(a.out_heldout, heldout)
        write_json(a.report, report)
    elif a.command == "pairs":
        pairs, report = read_own_pairs(a.input, a.format, a.lang)
        report = {"source": a.label, **report}
        _write_pairs(a.out, pairs)
        write_json(a.report, report)
    else:
        table = load_flores_table(a.root, a.lang, a.split)
        rows = select_flores(table, items=a.items, n=a.n or None, seed=a.seed)
        _write_pairs(a.out, list(zip(rows["source"], rows["reference"], strict=True)))
        report = flores_listing(table, rows, lang=a.lang, root=a.root, split=a.split, items=a.items, seed=a.seed)
        if a.ids:
            write_json(a.ids, report)
        report = {k: v for k, v in report.items() if k not in ("ids", "positions")}
    log.info("%s", report)


if __name__ == "__main__":
    cli_main(main)
