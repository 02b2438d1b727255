"""Paired bootstrap intervals for a difference in held-out bits per character (docs/findings.md, "Seeds, intervals
and noise").

Two cells scored on the same held-out sentences (the ppl step keeps each sentence's NLL in nats and its characters,
workflow_scripts/perplexity.py) are compared by resampling the sentences with replacement, the same indices for both
cells: per resample, bits per character = sum of NLL / sum of characters / ln 2, and the difference of the two. The
95% interval is the 2.5th to 97.5th percentile of the resampled differences; the estimate is the difference on the
sentences as they are. A cell with several training seeds enters with each sentence's NLL averaged over its seeds
(``pool``): the interval is over the held-out sentences, the spread over seeds is reported beside it (mean ± sd).
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


def pool(nll_by_seed: Sequence[Sequence[float]]) -> np.ndarray:
    """Each sentence's NLL averaged over a cell's seeds (every seed scored the same sentences)."""
    lengths = {len(x) for x in nll_by_seed}
    if len(lengths) != 1:
        raise ValueError(f"the seeds scored different numbers of held-out sentences: {sorted(lengths)}")
    return np.mean(np.asarray(nll_by_seed, dtype=float), axis=0)


def bootstrap_resamples(n: int, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """The sentence indices of each resample, [resamples, n]: drawn once and shared by both cells of a pair."""
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def paired_bpc_diff(nll_a: Sequence[float], nll_b: Sequence[float], chars: Sequence[int], *,
                    resamples: int = RESAMPLES, seed: int = SEED) -> Interval:  # fmt: skip
    """bits per character of a minus b on the same sentences (``chars`` each), with its paired bootstrap interval."""
    a, b, c = (np.asarray(x, dtype=float) for x in (nll_a, nll_b, chars))
    if not (len(a) == len(b) == len(c)) or len(c) == 0:
        raise ValueError(f"paired cells need the same, non-empty sentences: {len(a)}, {len(b)} NLLs, {len(c)} lengths")
    idx = bootstrap_resamples(len(c), resamples, seed)
    chars_r = c[idx].sum(axis=1)
    diffs = (a[idx].sum(axis=1) - b[idx].sum(axis=1)) / chars_r / math.log(2)
    tail = (1 - LEVEL) / 2 * 100
    low, high = np.percentile(diffs, [tail, 100 - tail])
    diff = (a.sum() - b.sum()) / c.sum() / math.log(2)
    return Interval(float(diff), float(low), float(high), len(c))


def verdict(interval: Interval | None, fmt: str = "{:+.3f}") -> str:
    """ "better" / "worse" (lower bits per character is better) where the interval excludes zero, "within noise
    (95% interval [a, b])" where it does not; "" without an interval."""
    if interval is None:
        return ""
    if not interval.excludes_zero:
        return f"within noise ({interval.text(fmt)})"
    return f"{'better' if interval.high < 0 else 'worse'} ({interval.text(fmt)})"
