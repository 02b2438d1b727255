"""The data stage: the adaptation corpus D, the held-out text and the MT test set (paper 002, §6.2, §6.4).

Three sources, one module:
- ``split``: a list of (English, target) pairs (the embedded default's LibreOffice stand-in, see l10n.py) cut into the
  MT test set, a held-out target-text set and D, disjoint by target string.
- ``sample``: D (30K lines) and the held-out set (up to 100K lines) sampled uniformly at random, in one streaming pass,
  from a CC-100 per-language file (``th.txt.xz``: one paragraph a line, documents separated by blank lines).
- ``flores``: the MT test set, 500 FLORES-200 devtest sentences (the paper's own with ``--items paper``, see
  items.py), from the ``openlanguagedata/flores_plus`` parquet layout (a local folder or the hub).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import lzma
import math
import random
import re
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from workflow_scripts.io import (
    MAX_LINE_CHARS,
    UserError,
    check_script,
    check_text_head,
    cli_main,
    read_pairs_with_stats,
    script_name,
    setup_logging,
    sniff_encoding,
    write_json,
    write_text,
)
from workflow_scripts.selection import select_positions, selection_note

# The paper's ten languages (ISO 639-1) and their FLORES-200 / FLORES+ codes ({iso_639_3}_{iso_15924}).
FLORES_CODES: dict[str, str] = {
    "ar": "arb_Arab",
    "my": "mya_Mymr",
    "de": "deu_Latn",
    "el": "ell_Grek",
    "hi": "hin_Deva",
    "ja": "jpn_Jpan",
    "si": "sin_Sinh",
    "sw": "swh_Latn",
    "te": "tel_Telu",
    "th": "tha_Thai",
}
FLORES_ENGLISH = "eng_Latn"
FLORES_HUB_ID = "openlanguagedata/flores_plus"

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


@contextlib.contextmanager
def open_text_stream(path: str | Path, *, external: bool = True) -> Iterator[BinaryIO]:
    """Open a plain, .gz or .xz file (chosen by suffix) for binary reading.

    With ``external``, a compressed file is decompressed by the ``xz``/``gzip`` program when it is installed: it runs
    in its own process, in parallel with the Python loop that reads it (decompression is the bottleneck). A failed
    decompressor raises; it never passes as a short file.
    """
    path = Path(path)
    tool = {".xz": "xz", ".gz": "gzip"}.get(path.suffix)
    if tool and external and shutil.which(tool):
        if not path.is_file():
            raise FileNotFoundError(path)
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
    opener = {".xz": lzma.open, ".gz": gzip.open}.get(path.suffix, open)
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
    """Refuse (UserError naming the file) a corpus whose first bytes show UTF-16 text or another compression than its
    suffix promises (open_text_stream decompresses .xz and .gz, as CC-100 ships .xz)."""
    path = Path(path)
    expect = {".xz": "xz", ".gz": "gzip"}.get(path.suffix)
    with open(path, "rb") as f:
        head = f.read(4096)
    check_text_head(path, head, what="corpus", expect=expect)
    if expect and head and sniff_encoding(head) != expect:
        raise UserError(
            f"{path}: the corpus is not {expect}-compressed, as its name says; give the {path.suffix} file as "
            "downloaded, or rename it to match what it holds"
        )


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
    on ``block_bytes`` nor on ``external`` (see open_text_stream). Lines with NUL bytes are skipped and counted. With
    ``lang``, the sampled lines must be mostly in the language's script (io.check_script; the sample is uniform, so
    its share estimates the corpus's), and the share is reported.
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
    share = check_script(path, sample + heldout, lang, what="CC-100 sample") if lang else None
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
# flores: the MT test set from FLORES-200 (openlanguagedata/flores_plus layout)


def flores_code(lang: str) -> str:
    """The FLORES code of one of the paper's languages (``th`` → ``tha_Thai``); FLORES codes pass through."""
    if lang in FLORES_CODES:
        return FLORES_CODES[lang]
    if re.fullmatch(r"[a-z]{3}_[A-Z][a-z]{3}", lang):
        return lang
    raise UserError(f"unknown language {lang!r}: use one of {sorted(FLORES_CODES)} or a FLORES code like 'tha_Thai'")


def _flores_files(root: Path, split: str, code: str) -> list[Path]:
    """One language's parquet file(s) for a split: ``{split}/{code}.parquet`` or shards ``{split}/{code}-*.parquet``."""
    files = sorted(root.glob(f"{split}/{code}.parquet")) or sorted(root.glob(f"**/{split}/{code}-*.parquet"))
    if not files:
        raise FileNotFoundError(
            f"no FLORES parquet for {code} in {root} (expected {root / split / (code + '.parquet')})"
        )
    return files


def _read_parquet(files: list[Path]):
    import pandas as pd

    try:
        return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    except ImportError as e:
        raise ImportError(
            f"reading FLORES parquet ({files[0]}) needs a parquet engine: add pyarrow to requirements.txt ({e})"
        ) from e


def _flores_root(root_or_hub_id: str | Path, split: str, codes: list[str]) -> Path:
    """An existing folder is used as is; otherwise ``owner/name`` is a hub dataset id (only needed files fetched)."""
    root = Path(root_or_hub_id)
    if root.is_dir():
        return root
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", str(root_or_hub_id)):
        raise FileNotFoundError(
            f"FLORES root {root_or_hub_id!r} is neither a folder nor a hub id like {FLORES_HUB_ID!r}"
        )
    from huggingface_hub import snapshot_download

    # flores_plus is gated: accept its terms on the hub once and provide a token (HF_TOKEN or `hf auth login`).
    patterns = [f"*{split}/{c}*.parquet" for c in codes]
    return Path(snapshot_download(repo_id=str(root_or_hub_id), repo_type="dataset", allow_patterns=patterns))


def _clean_ws(text: str) -> str:
    # Collapse all whitespace: the output is TSV, where a tab or newline inside a sentence would corrupt the file.
    return " ".join(str(text).split())


def flores_table(en, tgt):
    """Two FLORES data frames (``id`` and ``text`` columns) joined on ``id``: columns id, source, reference, one row
    per sentence in the release's order, and whether each file already listed its rows in id order.

    FLORES-200's devtest is a set of line-aligned files; its hub copies number the lines (facebook/flores: id = line
    + 1) and FLORES+ keeps those rows and their order, so ascending id is the release's order and row i is the same
    sentence in every language (the alignment the reference sampled from). Whitespace runs collapse to one space.
    """
    import pandas as pd

    cols, in_order = [], []
    for name, df in (("English", en), ("target", tgt)):
        text_col = "text" if "text" in df.columns else "sentence"  # flores_plus says text, facebook/flores sentence
        if "id" not in df.columns or text_col not in df.columns:
            raise UserError(f"FLORES {name} table needs 'id' and 'text' columns, has {list(df.columns)}")
        if df["id"].duplicated().any():
            raise UserError(f"FLORES {name} table has duplicate ids")
        cols.append(dict(zip(df["id"].tolist(), df[text_col].tolist(), strict=True)))
        in_order.append(bool(df["id"].is_monotonic_increasing))
    en_by_id, tgt_by_id = cols
    if set(en_by_id) != set(tgt_by_id):
        only_en, only_tgt = len(set(en_by_id) - set(tgt_by_id)), len(set(tgt_by_id) - set(en_by_id))
        raise UserError(f"FLORES tables are not aligned: {only_en} ids only in English, {only_tgt} only in the target")
    ids = sorted(en_by_id)
    table = pd.DataFrame(
        {
            "id": ids,
            "source": [_clean_ws(en_by_id[i]) for i in ids],
            "reference": [_clean_ws(tgt_by_id[i]) for i in ids],
        }
    )
    table.attrs["files_in_id_order"] = {"English": in_order[0], "target": in_order[1]}
    return table


def select_flores(table, *, items: str = "shuffle", n: int | None = None, seed: int = 0):
    """The rows of a ``flores_table`` to evaluate (items.select_positions: ``paper`` = the reference's 500, in its
    sample order; ``first``; ``shuffle`` = ``n`` drawn with ``seed``, in release order), with a ``position`` column
    (0-based row of the release)."""
    if n is not None and n > len(table):
        raise UserError(f"too few FLORES sentences: {len(table)} available, n={n} asked for")
    positions = select_positions(len(table), items, n, seed)
    out = table.iloc[positions].copy()
    out.insert(0, "position", positions)
    return out.reset_index(drop=True)


def align_flores(en, tgt, *, n: int | None = None, seed: int = 0, items: str = "shuffle") -> list[tuple[str, str]]:
    """English→target pairs of two FLORES data frames joined on ``id``, selected as ``select_flores`` says (all rows
    in release order when ``n`` is None and ``items`` is not ``paper``)."""
    rows = select_flores(flores_table(en, tgt), items=items, n=n, seed=seed)
    return list(zip(rows["source"], rows["reference"], strict=True))


def load_flores_table(root_or_hub_id: str | Path, lang_code: str, split: str = "devtest"):
    """``flores_table`` of English and ``lang_code`` from a local ``openlanguagedata/flores_plus`` folder
    (``{split}/{iso_639_3}_{iso_15924}.parquet``) or that hub dataset."""
    code = flores_code(lang_code)
    root = _flores_root(root_or_hub_id, split, [FLORES_ENGLISH, code])
    en_files, tgt_files = _flores_files(root, split, FLORES_ENGLISH), _flores_files(root, split, code)
    return flores_table(_read_parquet(en_files), _read_parquet(tgt_files))


def load_flores_pairs(
    root_or_hub_id: str | Path,
    lang_code: str,
    split: str = "devtest",
    n: int | None = None,
    seed: int = 0,
    items: str = "shuffle",
) -> list[tuple[str, str]]:
    """English→target FLORES-200 pairs for the MT task (paper 002 §6.4: 500 random devtest sentences; ``items``
    paper: the reference's 500), from a local flores_plus folder or that hub dataset (``load_flores_table``)."""
    rows = select_flores(load_flores_table(root_or_hub_id, lang_code, split), items=items, n=n, seed=seed)
    return list(zip(rows["source"], rows["reference"], strict=True))


def flores_listing(table, rows, *, lang: str, root: str, split: str, items: str, seed: int) -> dict:
    """The ids file of the mt selection: which FLORES rows (id and 0-based position) were chosen, and how."""
    return {
        "task": "mt",
        "lang": lang,
        "items": items,
        "data": str(root),
        "split": split,
        "rows_in_pool": len(table),
        "files_in_id_order": table.attrs.get("files_in_id_order"),
        "n": len(rows),
        "selection": selection_note(items, len(rows), len(table), seed),
        "ids": rows["id"].tolist(),
        "positions": [int(p) for p in rows["position"].tolist()],
    }


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
    s.add_argument("--lang", help="the target language: its side must be mostly in its script (io.check_script)")
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
    c.add_argument("--lang", help="the corpus's language: its lines must be mostly in its script (io.check_script)")
    c.add_argument("--out-train", required=True)
    c.add_argument("--out-heldout", required=True)
    c.add_argument("--report", required=True)
    c.add_argument("--log")

    fl = sub.add_parser("flores", help="FLORES-200 English→target pairs (flores_plus parquet layout)")
    fl.add_argument("--root", required=True, help=f"local folder or hub id ({FLORES_HUB_ID})")
    fl.add_argument("--lang", required=True, help=f"one of {sorted(FLORES_CODES)} or a FLORES code")
    fl.add_argument("--split", default="devtest")
    fl.add_argument("--n", type=int, default=500, help="sentences to select; 0 = all")
    fl.add_argument("--seed", type=int, required=True, help="the shuffle selection's seed (paper: always 42)")
    fl.add_argument("--items", choices=["paper", "first", "shuffle"], default="shuffle", help="items.py")
    fl.add_argument("--out", required=True, help="TSV: English<TAB>target")
    fl.add_argument("--ids", help="JSON listing the chosen FLORES ids and positions")
    fl.add_argument("--log")

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
