"""Paired tests on small worked examples with exact expected numbers, each computed independently of the code under
test (by hand, from the documented formula, or straight from numpy's generator / scipy), so that a changed constant,
comparison or stream shows up as a wrong number (issue 29, mutation testing)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from emocaustics.stats import bootstrap as B
from emocaustics.stats import paired as P
from stats.pairwise import approximate_randomisation_p, paired_bootstrap


def test_bootstrap_p_counts_ties_tolerance_and_nan_exactly():
    # observed d = 1, tolerance 1e-12 * max(1, |d|) = 1e-12: a resample is extreme when |d* - 1| >= 1 - 1e-12.
    #   1e-12  -> |d* - d| = 1 - 1e-12 exactly the bound (>=: counted)
    #   5e-13  -> 1 - 5e-13 (inside the tolerance: counted)
    #   1.5e-12 -> 1 - 1.5e-12 (beyond the tolerance: not counted)
    #   2.0    -> 1 (counted), 0.5 -> 0.5 (not), NaN -> not a resample at all
    # extreme 3 of 5 valid: p = (1 + 3) / (5 + 1) = 2/3
    boot = np.array([[1e-12, 5e-13, 1.5e-12, 2.0, 0.5, np.nan]])
    assert P.paired_bootstrap_p(boot, np.array([1.0]))[0] == pytest.approx(4 / 6, abs=1e-15)


def test_bootstrap_p_tolerance_scales_with_the_observed_difference():
    # d = -4: tolerance 4e-12; d* = -3e-12 -> |d* - d| = 4 - 3e-12 >= 4 - 4e-12 (counted); d* = -5e-12 -> not;
    # d* = -9 -> 5 (counted); d* = -4 -> 0 (not). p = (1 + 2) / (4 + 1) = 0.6
    got = P.paired_bootstrap_p(np.array([[-3e-12, -5e-12, -9.0, -4.0]]), np.array([-4.0]))
    assert got[0] == pytest.approx(0.6, abs=1e-15)


def test_bootstrap_p_rows_and_a_nan_observation():
    boot = np.array([[0.0, 3.0, 1.0], [1.0, 2.0, 3.0]])
    got = P.paired_bootstrap_p(boot, np.array([1.0, np.nan]))
    # row 0: |d* - 1| = 1, 2, 0 -> 2 of 3 reach 1: (1 + 2) / 4; row 1: no observed difference -> NaN
    assert got[0] == pytest.approx(0.75, abs=1e-15) and math.isnan(got[1])


def _means_of_draws(d: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """Bootstrap means straight from numpy's generator: resample r draws items rng.integers(0, n, (B, n))[r]."""
    draws = np.random.default_rng(seed).integers(0, d.size, size=(n_resamples, d.size), dtype=np.int64)
    return d[draws].mean(axis=1)


def test_paired_bootstrap_exact_interval_and_p():
    a = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0])
    b = np.array([2.0, 1.0, 1.0, 2.0, 3.0, 5.0])
    d = a - b  # 1, 0, 3, -1, 2, 4: mean 1.5
    boot = _means_of_draws(d, 40, 7)
    for level, got in ((0.8, paired_bootstrap(a, b, n_resamples=40, seed=7, level=0.8)),
                       (0.95, paired_bootstrap(a, b, n_resamples=40, seed=7))):
        tail = (1 - level) / 2
        assert got["diff"] == 1.5
        assert got["ci_low"] == pytest.approx(np.quantile(boot, tail), abs=1e-12)
        assert got["ci_high"] == pytest.approx(np.quantile(boot, 1 - tail), abs=1e-12)
        extreme = int((np.abs(boot - 1.5) >= 1.5 - 1e-12).sum())
        assert got["p"] == pytest.approx((1 + extreme) / 41, abs=1e-15)
    # the 80 % interval is strictly inside the 95 % one for this example (different quantiles, not one number)
    assert np.quantile(boot, 0.1) > np.quantile(boot, 0.025)


def _flip_p(d: np.ndarray, rows: list[np.ndarray]) -> float:
    """Sign-flip p from explicit sign rows (+1/-1): (1 + #{|mean(s*d)| >= |mean(d)| - 1e-9 mean|d|}) / (R + 1)."""
    obs = abs(d.mean())
    tol = 1e-9 * np.abs(d).mean()
    hits = sum(abs((s * d).mean()) >= obs - tol for s in rows)
    return (1 + hits) / (len(rows) + 1)


def test_randomisation_p_exact_from_the_flip_stream():
    values = np.array([[1.0, 2.0, 5.0, 3.0, 2.5], [0.0, 2.5, 1.0, 1.0, 1.0]])
    present = np.ones_like(values, dtype=bool)
    d = values[0] - values[1]  # 1, -0.5, 4, 2, 1.5: mean 1.6, mean |d| 1.8
    signs = np.random.default_rng(11).integers(0, 2, size=(30, 5), dtype=np.int8).astype(np.float64) * 2.0 - 1.0
    want = _flip_p(d, list(signs))
    got = P.randomisation_table(values, present, [(0, 1)], n_permutations=30, seed=11)
    assert got[0] == pytest.approx(want, abs=1e-15) and want < 1.0
    # the same through the one-row API (a 1-D input gives a 0-d answer) and with a Generator for the seed
    one = approximate_randomisation_p(d, n_permutations=30, seed=11)
    assert np.ndim(one) == 0 and float(one) == pytest.approx(want, abs=1e-15)
    rows = approximate_randomisation_p(np.stack([d, -d]), n_permutations=30, seed=np.random.default_rng(11))
    assert rows.shape == (2,) and rows[0] == pytest.approx(want, abs=1e-15) and rows[1] == pytest.approx(want)


def test_randomisation_counts_the_flips_that_only_tie_the_observed_difference():
    # d = 2, 2, 2: only the all-plus and all-minus flips reach |mean| = 2, and they reach it exactly (a tie)
    values = np.array([[3.0, 3.0, 3.0], [1.0, 1.0, 1.0]])
    signs = np.random.default_rng(2).integers(0, 2, size=(50, 3), dtype=np.int8).astype(np.float64) * 2.0 - 1.0
    ties = int((np.abs(signs.sum(axis=1)) == 3).sum())
    got = P.randomisation_table(values, np.ones_like(values, dtype=bool), [(0, 1)], n_permutations=50, seed=2)
    assert ties > 0 and got[0] == pytest.approx((1 + ties) / 51, abs=1e-15)


def test_randomisation_chunks_follow_the_generator(monkeypatch):
    # 5 items, room for 3 cells per chunk: one permutation per chunk, so the int8 signs come from one draw of
    # (1, 5) per permutation (a chunk of 2 would take the bytes of the stream differently)
    monkeypatch.setattr(B, "CHUNK_CELLS", 3)  # the chunks of bootstrap.chunk_sizes
    d = np.array([1.0, -0.5, 4.0, 2.0, 1.5])
    rng = np.random.default_rng(5)
    rows = [rng.integers(0, 2, size=(1, 5), dtype=np.int8).astype(np.float64)[0] * 2.0 - 1.0 for _ in range(25)]
    got = approximate_randomisation_p(d, n_permutations=25, seed=5)
    assert float(got) == pytest.approx(_flip_p(d, rows), abs=1e-15)


def test_randomisation_one_common_item_and_none():
    values = np.array([[1.0, 7.0, 2.0], [0.0, 3.0, 9.0], [5.0, 5.0, 5.0]])
    present = np.array([[True, True, False], [False, True, True], [True, False, False]])
    # (0, 1) share item 1 only: every flip gives |mean| = 4 = the observed: p = 1; (1, 2) share nothing: NaN
    got = P.randomisation_table(values, present, [(0, 1), (1, 2)], n_permutations=20, seed=0)
    assert got[0] == 1.0 and math.isnan(got[1])


def test_wilcoxon_exact_values_and_refusals():
    # five positive differences, no ties: exact two-sided p = 2 / 2^5
    assert P.wilcoxon_p([1.0, 2.0, 3.0, 4.0, 5.0]) == 0.0625
    # equal differences of 1 are not "no difference": scipy's test, not the shortcut p = 1
    from scipy import stats as sps

    assert P.wilcoxon_p(np.ones(6)) == pytest.approx(float(sps.wilcoxon(np.ones(6)).pvalue)) and \
        P.wilcoxon_p(np.ones(6)) < 1.0
    assert math.isnan(P.wilcoxon_p(np.array([])))
    assert math.isnan(P.wilcoxon_p(np.array([1.0, np.nan, 2.0])))
    assert P.wilcoxon_p(np.zeros(4)) == 1.0


def test_holm_ties_and_a_single_p():
    # two equal p = 0.01 and 0.2 (m = 3): 0.01 x3 = 0.03, 0.01 x2 = 0.02 -> running max 0.03, 0.2 x1 = 0.2
    np.testing.assert_allclose(P.holm(np.array([0.2, 0.01, 0.01])), [0.2, 0.03, 0.03], atol=1e-15)
    assert P.holm(np.array([0.3]))[0] == 0.3
    assert P.holm(np.array([])).shape == (0,)


def test_randomisation_tolerance_is_relative_to_the_differences():
    # d = 1000, 1e-7: the mixed-sign flips fall 1e-7 short of |mean(d)|, within 1e-9 x mean|d| = 5e-7 (rounding of
    # the corrected sums, by design): every flip counts, p = 1
    big = np.array([[1000.0, 1e-7], [0.0, 0.0]])
    assert P.randomisation_table(big, np.ones((2, 2), bool), [(0, 1)], n_permutations=40, seed=1)[0] == 1.0
    # d = 1e-3, 1e-10: the mixed flips fall 1e-10 short, beyond 1e-9 x 5e-4 = 5e-13: only the same-sign flips count
    small = np.array([[1e-3, 1e-10], [0.0, 0.0]])
    signs = np.random.default_rng(1).integers(0, 2, size=(40, 2), dtype=np.int8).astype(np.float64) * 2.0 - 1.0
    same = int((signs[:, 0] == signs[:, 1]).sum())
    got = P.randomisation_table(small, np.ones((2, 2), bool), [(0, 1)], n_permutations=40, seed=1)[0]
    assert 0 < same < 40 and got == pytest.approx((1 + same) / 41, abs=1e-15)


def test_randomisation_reads_presence_flags_given_as_numbers():
    values = np.array([[1.0, 2.0, 5.0, 3.0, 2.5], [0.0, 2.5, 1.0, 1.0, 1.0]])
    present = np.array([[1, 1, 1, 0, 1], [1, 0, 1, 1, 1]])  # 0/1 flags, not item numbers
    got = P.randomisation_table(values, present, [(0, 1)], n_permutations=30, seed=11)
    want = P.randomisation_table(values, present.astype(bool), [(0, 1)], n_permutations=30, seed=11)
    both = np.array([True, False, True, False, True])
    signs = np.random.default_rng(11).integers(0, 2, size=(30, 5), dtype=np.int8).astype(np.float64) * 2.0 - 1.0
    assert got[0] == want[0] == pytest.approx(_flip_p((values[0] - values[1])[both], list(signs[:, both])))


def test_randomisation_pair_without_common_items_is_nan_silently():
    import warnings

    values = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    present = np.array([[True, True, False], [False, False, True]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = P.randomisation_table(values, present, [(0, 1)], n_permutations=10, seed=0)
    assert math.isnan(got[0])


def test_randomisation_unsigned_scores_are_differenced_as_numbers():
    values = np.array([[1, 5, 2, 2, 0], [3, 1, 4, 4, 2]], dtype=np.uint8)
    present = np.ones((2, 5), dtype=bool)
    got = P.randomisation_table(values, present, [(0, 1)], n_permutations=30, seed=11)
    signs = np.random.default_rng(11).integers(0, 2, size=(30, 5), dtype=np.int8).astype(np.float64) * 2.0 - 1.0
    d = values[0].astype(float) - values[1].astype(float)  # -2, 4, -2, -2, -2 (not 254, ...)
    assert got[0] == pytest.approx(_flip_p(d, list(signs)), abs=1e-15)


def test_randomisation_last_chunk_is_cut_to_the_remaining_permutations(monkeypatch):
    # 3 items, room for 6 cells: 2 permutations per chunk, so 5 permutations are chunks of 2, 2 and 1 (not 2, 2, 2)
    monkeypatch.setattr(B, "CHUNK_CELLS", 6)
    values = np.array([[1.0, 7.0, 2.0], [0.0, 3.0, 9.0], [4.0, 1.0, 3.0]])
    present = np.array([[True, True, True], [False, True, True], [True, True, True]])
    rng = np.random.default_rng(8)
    signs = np.concatenate([rng.integers(0, 2, size=(r, 3), dtype=np.int8) for r in (2, 2, 1)]) * 2.0 - 1.0
    got = P.randomisation_table(values, present, [(0, 1), (0, 2)], n_permutations=5, seed=8)
    # (0, 1) share items 1 and 2: d = 4, -7, mean -1.5; (0, 2) share all: d = -3, 6, -1, mean 2/3
    assert got[0] == pytest.approx(_flip_p(np.array([4.0, -7.0]), list(signs[:, 1:])), abs=1e-15)
    assert got[1] == pytest.approx(_flip_p(np.array([-3.0, 6.0, -1.0]), list(signs)), abs=1e-15)
    # one common item (row 0 scores item 0 only): every flip ties, 5 hits of 5 permutations: p = 6 / 6
    one = np.array([[True, False, False], [True, True, True]])
    assert P.randomisation_table(values[:2], one, [(0, 1)], n_permutations=5, seed=8)[0] == 1.0


def test_randomisation_flip_exactly_one_tolerance_below_still_counts():
    # d = 1999999999, 1: |mean(d)| = 1e9, tol = 1e-9 x mean|d| = 1.0 exactly, so the bar is 1e9 - 1 = 999999999.
    # The mixed flips give |1999999999 - 1| / 2 = 999999999, on the bar (all exact in float64): they count, like the
    # same-sign flips (1e9), so every flip counts and p = (1 + 30) / (30 + 1) = 1
    values = np.array([[1999999999.0, 1.0], [0.0, 0.0]])
    signs = np.random.default_rng(0).integers(0, 2, size=(30, 2), dtype=np.int8)
    assert 0 < int((signs[:, 0] != signs[:, 1]).sum()) < 30  # the stream does draw mixed flips
    assert P.randomisation_table(values, np.ones((2, 2), bool), [(0, 1)], n_permutations=30, seed=0)[0] == 1.0
