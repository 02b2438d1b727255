"""Shared helpers for the step modules: atomic outputs, JSON, logging, seeding."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any


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
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
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


def read_lines(path: str | Path) -> list[str]:
    """Read a one-sentence-per-line UTF-8 text file, without the line ends."""
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def read_pairs(path: str | Path, n: int | None = None) -> list[tuple[str, str]]:
    """The first ``n`` (all when None) pairs of an ``English<TAB>target`` file; blank lines are skipped, and a line
    without exactly one tab, or a file without pairs, is an error naming the file (and line)."""
    pairs = []
    for i, line in enumerate(read_lines(path), 1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            raise ValueError(f"{path}:{i}: expected 'English<TAB>target', found {len(fields)} tab-separated field(s)")
        pairs.append((fields[0], fields[1]))
        if n is not None and len(pairs) >= n:
            break
    if not pairs:
        raise ValueError(f"{path}: no sentence pairs")
    return pairs


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
