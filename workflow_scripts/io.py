"""Shared helpers for the step modules: atomic outputs, JSON, logging, seeding."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import shutil
import stat
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary sibling path; rename it onto ``path`` only if the block succeeds.

    Works for files and folders alike, so an interrupted job never leaves a half-written output that looks finished.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    target = tmp / path.name
    try:
        yield target
        if not target.exists():
            raise FileNotFoundError(f"step finished without writing {path}")
        if path.is_dir() and not path.is_symlink():
            # A folder cannot be renamed over a folder: move the old one aside first (it is removed with tmp).
            os.replace(path, tmp / ".replaced")
        elif target.is_dir() and (path.exists() or path.is_symlink()):
            path.unlink()
        # A file is renamed over the old one in one step, so a kill never leaves neither (a resumable checkpoint).
        os.replace(target, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (UTF-8)."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path: str | Path, obj: Any) -> None:
    """Write ``obj`` as indented JSON atomically."""
    write_text(path, json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=False) + "\n")


def read_json(path: str | Path) -> Any:
    """Read a JSON file."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


class UserError(ValueError):
    """An expected failure caused by the user's input (a missing, empty, compressed or wrong-language file): the
    step's command line prints its message as one line and exits 1 (``cli_main``), and a retry of the job in the same
    Snakemake run stops at once; any other exception is a bug and keeps its traceback. A ValueError, so callers that
    catch bad input as ValueError still do."""


# Snakemake retries a failed job (`retries` in profiles/default/) whatever made it fail, each attempt asking for more
# time and memory (workflow_scripts/plan/resources.py). A step that stopped on the user's input would stop the same way
# again, so a step the workflow runs records such a failure next to its rule's log, and a retry of that job in the
# same Snakemake run finds the record and stops in a second, printing the recorded message, instead of repeating the
# work. A new Snakemake run (once the input is fixed) runs the job afresh. Snakemake gives a rule's shell neither its
# attempt nor, in the shell prefix, its log (the prefix is formatted once, not per job), so the step's own command
# line (``cli_main``) does this, knowing its Snakemake run by the environment rules/common.smk sets up.
SNAKEMAKE_RUN_ENV = "VOCABEXP_SNAKEMAKE_RUN"
USER_ERROR_SUFFIX = ".user_error.json"


def mark_snakemake_run(main_process: bool) -> str:
    """Name the Snakemake run in the environment all its jobs inherit (local jobs; Slurm jobs, which sbatch starts
    with --export=ALL): a new id in Snakemake's main process, the inherited one in a cluster job's own snakemake
    process. Called by rules/common.smk with ``workflow.is_main_process``; returns the id."""
    if main_process or not os.environ.get(SNAKEMAKE_RUN_ENV):
        os.environ[SNAKEMAKE_RUN_ENV] = uuid.uuid4().hex
    return os.environ[SNAKEMAKE_RUN_ENV]


def job_log(argv: Sequence[str]) -> Path | None:
    """The rule's log a step's command line ``argv`` writes to: its ``--log`` argument, else the file its standard
    error appends to (the rules' ``2>> {log}``, found through /proc on Linux); None for a terminal or a pipe."""
    for i, arg in enumerate(argv):
        if arg == "--log" and i + 1 < len(argv):
            return Path(argv[i + 1])
        if arg.startswith("--log="):
            return Path(arg.split("=", 1)[1])
    try:
        if not stat.S_ISREG(os.fstat(2).st_mode):
            return None
        return Path(os.readlink("/proc/self/fd/2"))
    except OSError:
        return None


def user_error_record(log: str | Path) -> Path:
    """Where a job whose rule logs to ``log`` records a user error: beside the log, ``<log>.user_error.json``."""
    log = Path(log)
    return log.with_name(log.name + USER_ERROR_SUFFIX)


def record_user_error(record: Path, run: str, argv: Sequence[str], message: str) -> None:
    """Write (atomically) that the command line ``argv`` stopped on ``message`` in Snakemake run ``run``."""
    write_json(record, {"snakemake_run": run, "command": list(argv), "message": message})


def recorded_user_error(record: Path, run: str, argv: Sequence[str]) -> str | None:
    """The message of the user error ``record`` holds for this command line in this Snakemake run (an earlier attempt
    of this job), else None; a record of another run or command is stale and removed."""
    try:
        recorded = read_json(record)
    except (OSError, ValueError):
        return None
    if isinstance(recorded, dict) and recorded.get("snakemake_run") == run and recorded.get("command") == list(argv):
        return str(recorded.get("message", ""))
    record.unlink(missing_ok=True)
    return None


def _job_record() -> tuple[Path | None, str]:
    """The user-error record of the workflow job this process runs, and its Snakemake run; (None, "") outside one."""
    run = os.environ.get(SNAKEMAKE_RUN_ENV, "")
    log = job_log(sys.argv[1:]) if run else None
    return (user_error_record(log) if log else None), run


def _stop_on_user_error(message: str, record: Path | None, run: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    if record is not None:
        with contextlib.suppress(OSError):  # never hide the user's error behind a failed write
            record_user_error(record, run, sys.argv, message)
    sys.exit(1)


def cli_main(main: Callable[[], Any]) -> None:
    """Run a step's ``main()``; a UserError or a missing input file becomes one line ``error: ...`` on stderr (the
    rule's log) and exit status 1. In a workflow job that failure is recorded beside the rule's log, and a retry of
    the job in the same Snakemake run stops at once with the recorded message instead of running ``main`` again."""
    record, run = _job_record()
    if record is not None:
        message = recorded_user_error(record, run, sys.argv)
        if message is not None:
            print(f"error: {message}", file=sys.stderr)
            print(
                "error: not run again: an earlier attempt of this job in this Snakemake run stopped on this error "
                f"(recorded in {record}), and a retry would stop the same way; fix what it says and run snakemake "
                "again",
                file=sys.stderr,
            )
            sys.exit(1)
    try:
        code = main()
    except UserError as e:
        _stop_on_user_error(str(e), record, run)
    except FileNotFoundError as e:
        name = e.filename if e.filename is not None else str(e)
        _stop_on_user_error(f"{name}: no such file; check the path (or rerun the step that writes it)", record, run)
    code = code if isinstance(code, int) else 0
    if record is not None and code == 0:
        record.unlink(missing_ok=True)
    sys.exit(code)


# What a text reader can tell from a file's first bytes. Compressed data and UTF-16 are not UTF-8 text; read line by
# line they would be skipped as invalid UTF-8 (or, UTF-16 of ASCII-range text, kept with a NUL every other byte).
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bzip2"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"PK\x03\x04", "zip"),
)
_SNIFF_BYTES = 4096


def sniff_encoding(head: bytes) -> str | None:
    """What the first bytes of a file say it is, when that is not plain text: "xz", "gzip", "bzip2", "zstd", "zip",
    "UTF-16" (a byte order mark, or a NUL at every other byte of the first ones); None for anything else."""
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    # UTF-16 has its NUL bytes (the high byte of every ASCII-range character: Latin text, and the spaces and line ends
    # of any script) at one parity only; NULs in UTF-8 text fall anywhere. With a byte order mark, one UTF-16 line
    # end is enough (a stray FF FE before UTF-8 text is an invalid line, not UTF-16).
    even, odd = head[::2].count(0), head[1::2].count(0)
    if max(even, odd) >= max(4, 0.05 * len(head) / 2) and min(even, odd) <= 0.02 * max(even, odd):
        return "UTF-16"
    if (head.startswith(b"\xff\xfe") and b"\n\x00" in head) or (head.startswith(b"\xfe\xff") and b"\x00\n" in head):
        return "UTF-16"
    return None


def check_text_head(path: str | Path, head: bytes, *, what: str, expect: str | None = None) -> None:
    """Refuse (UserError naming the file) a file whose first bytes ``head`` show it is compressed in a way the reader
    does not expect (``expect``: the compression it decompresses, e.g. "xz" for a CC-100 file) or UTF-16 text."""
    kind = sniff_encoding(head)
    if kind is None or kind == expect:
        return
    if kind == "UTF-16":
        raise UserError(
            f"{path}: the {what} file is UTF-16 text, not UTF-8; convert it (iconv -f UTF-16 -t UTF-8) and rerun"
        )
    hint = {"zip": "unzip it", "gzip": "gunzip it", "bzip2": "bunzip2 it", "zstd": "unzstd it", "xz": "unxz it"}[kind]
    expected = f"{expect}-compressed or plain UTF-8 text" if expect else "plain UTF-8 text"
    raise UserError(f"{path}: the {what} file is {kind}-compressed, not {expected}; {hint} and give the text file")


def check_text_file(path: str | Path, *, what: str, expect: str | None = None) -> None:
    """``check_text_head`` on the first bytes of ``path``; a missing file raises FileNotFoundError."""
    with open(path, "rb") as f:
        check_text_head(path, f.read(_SNIFF_BYTES), what=what, expect=expect)


def read_lines(path: str | Path) -> list[str]:
    """Read a one-sentence-per-line UTF-8 text file, without the line ends."""
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


# Corpus text: every step that reads a corpus (one sentence or paragraph a line) goes through `corpus_lines`, so
# they all handle bad input alike, with the policy of `corpus sample` (workflow_scripts/corpus.py): a line that is not
# valid UTF-8 is skipped and counted; blank and whitespace-only lines are skipped and counted; a carriage return
# inside a line becomes a space; a file left with no line is an error naming it.
#
# Lines longer than MAX_LINE_CHARS characters are skipped and counted as well. A CC-100 line is a paragraph (a few
# hundred to a few thousand characters); a much longer "line" is a table, a base64 blob or text that lost its line
# breaks. It would not break LAPT (text is packed into seq_len blocks), but the auxiliary tokenizer would learn from
# it as one pre-token in a script without spaces, at a cost that grows with its length (SentencePiece drops sentences
# over 4,192 bytes on its own). Skipping rather than cutting keeps D made of whole paragraphs.
MAX_LINE_CHARS = 10_000

_log = logging.getLogger("vocabexp.io")


def _new_corpus_stats(path: str | Path, max_chars: int, what: str) -> dict[str, Any]:
    return {
        "file": str(path),
        "what": what,
        "lines_total": 0,
        "lines_kept": 0,
        "skipped_blank": 0,
        "skipped_invalid_utf8": 0,
        "skipped_long": 0,
        "skipped_nul": 0,
        "max_chars": max_chars,
        "carriage_returns_replaced": 0,
        "first_invalid_utf8_line": None,
        "first_long_line": None,
        "first_nul_line": None,
    }


def _scan_corpus(path: str | Path, stats: dict[str, Any], max_chars: int) -> Iterator[tuple[int, str]]:
    """(line number, text) of each usable line of ``path``, counting what is skipped into ``stats`` as it goes."""
    check_text_file(path, what=stats["what"])
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            stats["lines_total"] += 1
            raw = raw[:-1] if raw.endswith(b"\n") else raw
            raw = raw[:-1] if raw.endswith(b"\r") else raw  # CRLF files
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]  # a UTF-8 byte order mark is not text
            if b"\x00" in raw:  # valid UTF-8, but no text: a binary record or a stray NUL breaks tokenizers
                stats["skipped_nul"] += 1
                stats["first_nul_line"] = stats["first_nul_line"] or number
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                stats["skipped_invalid_utf8"] += 1
                stats["first_invalid_utf8_line"] = stats["first_invalid_utf8_line"] or number
                continue
            if not text.strip():
                stats["skipped_blank"] += 1
                continue
            if len(text) > max_chars:
                stats["skipped_long"] += 1
                stats["first_long_line"] = stats["first_long_line"] or number
                continue
            if "\r" in text:  # read back in text mode it would split the line
                stats["carriage_returns_replaced"] += 1
                text = text.replace("\r", " ")
            stats["lines_kept"] += 1
            yield number, text


def _skipped_summary(stats: dict[str, Any]) -> str:
    return (
        f"{stats['lines_total']} line(s) ({stats['skipped_blank']} blank or whitespace-only, "
        f"{stats['skipped_invalid_utf8']} not valid UTF-8, {stats['skipped_nul']} with NUL bytes, "
        f"{stats['skipped_long']} longer than {stats['max_chars']} characters)"
    )


def _report_skips(stats: dict[str, Any], what: str) -> None:
    if stats["skipped_invalid_utf8"]:
        _log.warning(
            "%s (%s): skipped %d line(s) that are not valid UTF-8 (first: line %d); re-encode the file as UTF-8 "
            "to keep them",
            stats["file"],
            what,
            stats["skipped_invalid_utf8"],
            stats["first_invalid_utf8_line"],
        )
    if stats["skipped_nul"]:
        _log.warning(
            "%s (%s): skipped %d line(s) that contain NUL bytes (first: line %d)",
            stats["file"],
            what,
            stats["skipped_nul"],
            stats["first_nul_line"],
        )
    if stats["skipped_long"]:
        _log.warning(
            "%s (%s): skipped %d line(s) longer than %d characters (first: line %d)",
            stats["file"],
            what,
            stats["skipped_long"],
            stats["max_chars"],
            stats["first_long_line"],
        )


def corpus_lines(path: str | Path, *, what: str, max_chars: int = MAX_LINE_CHARS) -> tuple[list[str], dict[str, Any]]:
    """The usable lines of a corpus file and the counts of what was skipped (see MAX_LINE_CHARS above).

    ``what`` names the file's role in messages (e.g. "corpus D", "held-out text"). Raises ValueError naming the file
    when no line is left: an empty, whitespace-only or non-UTF-8 corpus is never passed on as an empty one.
    """
    stats = _new_corpus_stats(path, max_chars, what)
    lines = [text for _, text in _scan_corpus(path, stats, max_chars)]
    if not lines:
        raise UserError(
            f"{path}: the {what} is empty: no usable line among {_skipped_summary(stats)}; it must hold UTF-8 "
            "text, one sentence a line: check the file or rerun the step that wrote it"
        )
    _report_skips(stats, what)
    return lines, stats


def read_corpus(path: str | Path, *, what: str, max_chars: int = MAX_LINE_CHARS) -> list[str]:
    """``corpus_lines`` for steps that need only the lines: the counts go to the log (a warning when lines were
    skipped). Refuses an empty or whitespace-only corpus with an error naming the file and ``what``."""
    lines, stats = corpus_lines(path, what=what, max_chars=max_chars)
    _log.info("%s (%s): %d usable lines of %s", path, what, len(lines), _skipped_summary(stats))
    return lines


def read_pairs_with_stats(
    path: str | Path, n: int | None = None, *, max_chars: int = MAX_LINE_CHARS
) -> tuple[list[tuple[str, str]], dict[str, Any]]:
    """``read_pairs`` and the counts of the lines it skipped (blank, not valid UTF-8, too long), as ``corpus_lines``."""
    stats = _new_corpus_stats(path, max_chars, "sentence pairs")
    pairs = []
    for i, line in _scan_corpus(path, stats, max_chars):
        fields = line.split("\t")
        if len(fields) != 2:
            raise UserError(f"{path}:{i}: expected 'English<TAB>target', found {len(fields)} tab-separated field(s)")
        pairs.append((fields[0], fields[1]))
        if n is not None and len(pairs) >= n:
            break
    if not pairs:
        raise UserError(
            f"{path}: no sentence pairs among {_skipped_summary(stats)}; expected UTF-8 lines 'English<TAB>target'"
        )
    _report_skips(stats, "sentence pairs")
    return pairs, stats


def read_pairs(path: str | Path, n: int | None = None) -> list[tuple[str, str]]:
    """The first ``n`` (all when None) pairs of an ``English<TAB>target`` file; blank lines are skipped, and a line
    without exactly one tab, or a file without pairs, is an error naming the file (and line). Lines that are not valid
    UTF-8 or longer than MAX_LINE_CHARS are skipped with a warning, as in every corpus reader (``corpus_lines``)."""
    return read_pairs_with_stats(path, n)[0]


def setup_logging(log_file: str | None = None) -> logging.Logger:
    """Log to stderr and, when given, to ``log_file`` (the rule's log)."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file:
        Path(log_file).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_file, mode="a", encoding="utf-8"))
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s", handlers=handlers, force=True
    )
    return logging.getLogger("vocabexp")


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and (if imported) torch."""
    random.seed(seed)
    with contextlib.suppress(ImportError):
        import numpy as np

        np.random.seed(seed)
    if "torch" in sys.modules:
        import torch

        torch.manual_seed(seed)


def set_threads(threads: int | None) -> None:
    """Bound torch's CPU threads to the rule's ``threads`` so parallel jobs do not oversubscribe the cores."""
    if threads:
        import torch

        torch.set_num_threads(max(1, int(threads)))
