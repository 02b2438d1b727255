"""Paired bootstrap intervals for a difference in held-out bits per character (docs/findings.md, "Seeds, intervals
and noise").

Two cells scored on the same held-out sentences (the ppl step keeps each sentence's NLL in nats and its characters,
workflow_scripts/perplexity.py) are compared by resampling the sentences with replacement, the same indices for both
cells: per resample, bits per character = sum of NLL / sum of characters / ln 2, and the difference of the two. The
95% interval is the 2.5th to 97.5th percentile of the resampled differences; the estimate is the difference on the
sentences as they are. A cell with several training seeds enters with all of them (a two-level bootstrap): each
resample first draws the cell's seeds with replacement and averages their per-sentence NLL, then resamples the
sentences, so the interval holds the spread over seeds as well as over sentences. With one seed a cell the seed level
draws nothing and the interval is the sentence bootstrap's alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

RESAMPLES = 2000
LEVEL = 0.95
SEED = 0  # the bootstrap's own seed: the same sentences are drawn for every pair of cells and every run of the tables


@dataclass(frozen=True)
class Interval:
    """A difference (a − b, bits per character; negative: a is better) and its bootstrap interval."""

    diff: float
    low: float
    high: float
    n: int  # held-out sentences

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0

    def text(self, fmt: str = "{:+.3f}") -> str:
        """ "95% interval [a, b]"."""
        return f"{round(LEVEL * 100)}% interval [{fmt.format(self.low)}, {fmt.format(self.high)}]"


def stack(nll_by_seed: Sequence[Sequence[float]]) -> np.ndarray:
    """A cell's seeds' per-sentence NLL as one [seeds, sentences] array (every seed scored the same sentences)."""
    lengths = {len(x) for x in nll_by_seed}
    if len(lengths) != 1:
        raise ValueError(f"the seeds scored different numbers of held-out sentences: {sorted(lengths)}")
    return np.asarray(nll_by_seed, dtype=float)


def bootstrap_resamples(n: int, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """The sentence indices of each resample, [resamples, n]: drawn once and shared by both cells of a pair."""
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


NLL = Sequence[float] | Sequence[Sequence[float]]  # one seed's per-sentence NLL, or one such list per seed


def _by_seed(nll: NLL) -> np.ndarray:
    """A cell's per-sentence NLL as [seeds, sentences]: one seed's list, or one list per seed."""
    arr = np.asarray(nll, dtype=float)
    return arr[None, :] if arr.ndim == 1 else arr


def _seed_means(by_seed: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Per resample, the per-sentence NLL averaged over the cell's seeds drawn with replacement, [resamples, n]; the
    one seed's NLL as it is (a view, drawing nothing) for a cell of one seed."""
    n_seeds = by_seed.shape[0]
    if n_seeds == 1:
        return np.broadcast_to(by_seed[0], (resamples, by_seed.shape[1]))
    picks = rng.integers(0, n_seeds, size=(resamples, n_seeds))
    return by_seed[picks].mean(axis=1)


def paired_bpc_diff(
    nll_a: NLL, nll_b: NLL, chars: Sequence[int], *, resamples: int = RESAMPLES, seed: int = SEED
) -> Interval:
    """bits per character of a minus b on the same sentences (``chars`` each), with its paired bootstrap interval.

    ``nll_a`` and ``nll_b`` are one list of per-sentence NLL (one seed) or one such list per training seed (every seed
    scored the same sentences); the estimate is the difference of the seeds' means, the interval the two-level
    bootstrap's (module docstring)."""
    a, b, c = _by_seed(nll_a), _by_seed(nll_b), np.asarray(chars, dtype=float)
    if not (a.shape[1] == b.shape[1] == len(c)) or len(c) == 0:
        raise ValueError(
            f"paired cells need the same, non-empty sentences: {a.shape[1]}, {b.shape[1]} NLLs, {len(c)} lengths"
        )
    idx = bootstrap_resamples(len(c), resamples, seed)
    seed_rng = np.random.default_rng(seed + 1)  # its own stream: one-seed cells draw the same sentences as before
    a_r, b_r = _seed_means(a, resamples, seed_rng), _seed_means(b, resamples, seed_rng)
    chars_r = c[idx].sum(axis=1)
    diffs = np.take_along_axis(a_r, idx, axis=1).sum(axis=1) - np.take_along_axis(b_r, idx, axis=1).sum(axis=1)
    diffs = diffs / chars_r / math.log(2)
    tail = (1 - LEVEL) / 2 * 100
    low, high = np.percentile(diffs, [tail, 100 - tail])
    diff = (a.mean(axis=0).sum() - b.mean(axis=0).sum()) / c.sum() / math.log(2)
    return Interval(float(diff), float(low), float(high), len(c))


def verdict(interval: Interval | None, fmt: str = "{:+.3f}") -> str:
    """ "better" / "worse" (lower bits per character is better) where the interval excludes zero, "within noise
    (95% interval [a, b])" where it does not; "" without an interval."""
    if interval is None:
        return ""
    if not interval.excludes_zero:
        return f"within noise ({interval.text(fmt)})"
    return f"{'better' if interval.high < 0 else 'worse'} ({interval.text(fmt)})"
