"""The row selections of ``evaluation.items`` (paper, first, shuffle), shared by the mt step (corpus.py) and the sum
step (items.py); docs/evaluation.md, "Which items"."""

from __future__ import annotations

import random

ITEMS = ("paper", "first", "shuffle")
# The reference's draw: pandas.DataFrame.sample(n=500, random_state=42) over the aligned devtest rows. pandas passes
# the seed to numpy's legacy RandomState, whose stream numpy keeps frozen, and draws permutation(rows)[:n], so a
# smaller n gives a prefix of the paper's 500.
PAPER_RANDOM_STATE = 42


def check_items(items: str) -> str:
    """``items`` if it names a selection; a clear error naming the config key otherwise."""
    if items not in ITEMS:
        raise ValueError(f"evaluation.items must be one of {ITEMS}, got {items!r}")
    return items


def select_positions(n_rows: int, items: str, n: int | None, seed: int) -> list[int]:
    """Row positions (0-based, release order) chosen from ``n_rows`` rows, in the order the selection yields them.

    ``paper``: the reference's ``DataFrame.sample(n, random_state=42)`` (sample order; ``seed`` is not used).
    ``first``: 0 .. n-1. ``shuffle``: ``n`` positions drawn with ``seed``, in release order. ``n`` None: all rows.
    """
    check_items(items)
    n = n_rows if n is None else n
    if not 0 < n <= n_rows:
        raise ValueError(f"cannot select {n} items from {n_rows} rows")
    if items == "paper":
        import pandas as pd

        return pd.RangeIndex(n_rows).to_frame().sample(n=n, random_state=PAPER_RANDOM_STATE).index.tolist()
    if items == "first":
        return list(range(n))
    return sorted(random.Random(seed).sample(range(n_rows), n))


def selection_note(items: str, n: int, n_rows: int, seed: int) -> str:
    """One line saying how the rows were chosen (written next to the ids)."""
    if items == "paper":
        return f"pandas.DataFrame.sample(n={n}, random_state={PAPER_RANDOM_STATE}) over {n_rows} aligned rows"
    if items == "first":
        return f"the first {n} of {n_rows} rows in the release's order"
    return f"{n} of {n_rows} rows drawn by random.Random({seed}).sample, kept in the release's order"
