"""The paired bootstrap of a difference in bits per character (workflow_scripts/intervals.py), on hand-checkable
cases and against a direct reimplementation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workflow_scripts import intervals

CHARS = [12, 40, 7, 25, 31, 18, 9, 50]
NLL = [20.1, 55.0, 9.9, 30.2, 44.4, 21.7, 14.0, 60.3]


def test_identical_cells_differ_by_exactly_zero():
    iv = intervals.paired_bpc_diff(NLL, NLL, CHARS)
    assert (iv.diff, iv.low, iv.high, iv.n) == (0.0, 0.0, 0.0, len(CHARS))
    assert not iv.excludes_zero and intervals.verdict(iv) == "within noise (95% interval [+0.000, +0.000])"


def test_a_shift_per_character_is_the_interval():
    # every sentence 0.25 bits per character worse: every resample differs by exactly 0.25
    worse = [n + 0.25 * math.log(2) * c for n, c in zip(NLL, CHARS, strict=True)]
    iv = intervals.paired_bpc_diff(worse, NLL, CHARS)
    assert iv.diff == pytest.approx(0.25) and iv.low == pytest.approx(0.25) and iv.high == pytest.approx(0.25)
    assert intervals.verdict(iv).startswith("worse (95% interval [+0.250, +0.250])")
    assert intervals.verdict(intervals.paired_bpc_diff(NLL, worse, CHARS)).startswith("better")


def test_seeded_bootstrap_matches_a_direct_reimplementation():
    rng = np.random.default_rng(7)
    chars = rng.integers(5, 80, size=60)
    a = chars * rng.normal(2.2, 0.3, size=60)
    b = chars * rng.normal(2.25, 0.3, size=60)
    iv = intervals.paired_bpc_diff(a, b, chars, resamples=500, seed=3)
    # by hand: the same indices for both cells, bits per character = sum NLL / sum chars / ln 2 per resample
    draw = np.random.default_rng(3)
    diffs = []
    for _ in range(500):
        i = draw.integers(0, 60, size=60)
        diffs.append((a[i].sum() / chars[i].sum() - b[i].sum() / chars[i].sum()) / math.log(2))
    assert iv.low == pytest.approx(np.percentile(diffs, 2.5)) and iv.high == pytest.approx(np.percentile(diffs, 97.5))
    assert iv.diff == pytest.approx((a.sum() - b.sum()) / chars.sum() / math.log(2))
    assert iv.low < iv.diff < iv.high
    # the default seed makes the tables reproducible
    assert intervals.paired_bpc_diff(a, b, chars) == intervals.paired_bpc_diff(a, b, chars)


def test_seeds_must_score_the_same_sentences():
    assert intervals.stack([[1.0, 2.0], [3.0, 6.0]]).tolist() == [[1.0, 2.0], [3.0, 6.0]]
    with pytest.raises(ValueError, match="different numbers of held-out sentences"):
        intervals.stack([[1.0, 2.0], [3.0]])
    with pytest.raises(ValueError, match="same, non-empty sentences"):
        intervals.paired_bpc_diff([1.0], [1.0, 2.0], [3, 4])


def test_one_seed_as_a_list_of_one_is_the_sentence_bootstrap():
    assert intervals.paired_bpc_diff([NLL], [NLL[::-1]], CHARS) == intervals.paired_bpc_diff(NLL, NLL[::-1], CHARS)


def test_seeds_widen_the_interval_by_their_spread():
    # b: one seed. a: three seeds, each a constant shift of b per character (-0.3, 0.0, +0.3 bits): on the sentences
    # as they are, a - b is their mean, 0.0; each resample's seed draw averages three of the shifts, so the interval
    # spans what those averages do (-0.3 .. +0.3), which the seeds' mean alone (one shifted list) would hide.
    shifted = [[n + s * math.log(2) * c for n, c in zip(NLL, CHARS, strict=True)] for s in (-0.3, 0.0, 0.3)]
    iv = intervals.paired_bpc_diff(shifted, NLL, CHARS)
    assert iv.diff == pytest.approx(0.0, abs=1e-12)
    assert -0.3 - 1e-9 <= iv.low < -0.1 and 0.1 < iv.high <= 0.3 + 1e-9
    assert intervals.verdict(iv).startswith("within noise")
    pooled = intervals.paired_bpc_diff(np.mean(shifted, axis=0), NLL, CHARS)
    assert pooled.low == pytest.approx(0.0, abs=1e-9) and pooled.high == pytest.approx(0.0, abs=1e-9)
    # by hand: the seed draws of each resample (their own stream, seed + 1) and the shared sentence indices
    seeds = np.random.default_rng(intervals.SEED + 1).integers(0, 3, size=(intervals.RESAMPLES, 3))
    means = np.array([-0.3, 0.0, 0.3])[seeds].mean(axis=1)
    assert iv.low == pytest.approx(np.percentile(means, 2.5)) and iv.high == pytest.approx(np.percentile(means, 97.5))
