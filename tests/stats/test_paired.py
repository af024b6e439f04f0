"""Paired tests and Holm's correction."""

from __future__ import annotations

import numpy as np
import pytest

from emocaustics.stats import paired as P
from stats.pairwise import approximate_randomisation_p, paired_bootstrap


def test_holm_worked_example():
    # p = 0.01, 0.04, 0.03, 0.005 (m = 4). Sorted: 0.005 x4 = 0.02; 0.01 x3 = 0.03; 0.03 x2 = 0.06;
    # 0.04 x1 = 0.04 -> running max 0.06. Back in input order: 0.03, 0.06, 0.06, 0.02.
    got = P.holm(np.array([0.01, 0.04, 0.03, 0.005]))
    np.testing.assert_allclose(got, [0.03, 0.06, 0.06, 0.02], atol=1e-15)


def test_holm_caps_at_one_and_skips_nan():
    # NaN is not in the family: m = 2. Sorted: 0.2 x2 = 0.4; 0.6 x1 = 0.6 (running max 0.6)
    got = P.holm(np.array([0.6, np.nan, 0.2]))
    assert got[0] == pytest.approx(0.6) and np.isnan(got[1]) and got[2] == pytest.approx(0.4)
    # 0.6 x2 = 1.2 -> capped at 1; 0.7 x1 = 0.7, but the running max keeps 1.2 -> 1
    np.testing.assert_allclose(P.holm(np.array([0.6, 0.7])), [1.0, 1.0])
    assert np.all(np.isnan(P.holm(np.array([np.nan]))))


def test_paired_bootstrap_detects_a_real_difference():
    rng = np.random.default_rng(0)
    a = rng.normal(size=400)
    b = a - 0.1 + rng.normal(scale=0.2, size=400)  # b is 0.1 lower on the same items
    res = paired_bootstrap(a, b, n_resamples=5000, seed=1)
    assert res["diff"] == pytest.approx(0.1, abs=0.03)
    assert res["ci_low"] > 0 and res["p"] < 0.001
    assert P.wilcoxon_p(a - b) < 0.001
    assert approximate_randomisation_p(a - b, n_permutations=5000, seed=1) < 0.001


def test_identical_configs_are_not_flagged():
    a = np.random.default_rng(1).normal(size=200)
    res = paired_bootstrap(a, a.copy(), n_resamples=2000, seed=0)
    assert res["diff"] == 0 and res["p"] == 1.0
    assert P.wilcoxon_p(a - a.copy()) == 1.0
    assert float(approximate_randomisation_p(a - a, n_permutations=500)) == 1.0


def test_no_difference_gives_large_p():
    rng = np.random.default_rng(2)
    a = rng.normal(size=300)
    b = rng.normal(size=300)  # same distribution, independent noise
    assert paired_bootstrap(a, b, n_resamples=3000, seed=0)["p"] > 0.05
    assert P.wilcoxon_p(a - b) > 0.05


def test_bootstrap_p_formula():
    # observed diff 1; bootstrap diffs 0.9, 2.5, 1.2, -0.2: |d* - d| = 0.1, 1.5, 0.2, 1.2 -> 2 of 4 reach |d| = 1
    # p = (1 + 2) / (4 + 1) = 0.6
    assert P.paired_bootstrap_p(np.array([[0.9, 2.5, 1.2, -0.2]]), np.array([1.0]))[0] == pytest.approx(0.6)


def test_randomisation_table_paths_agree():
    # the same flips through the corrected sums (sparse), a product per pair (dense) and, for each pair, a direct
    # count on its own differences with those flips
    rng = np.random.default_rng(9)
    values = rng.normal(size=(3, 80)) + np.array([[0.0], [0.3], [0.05]])
    present = rng.random((3, 80)) > 0.04
    pairs = [(0, 1), (0, 2), (1, 2)]
    sparse = P.randomisation_table(values, present, pairs, n_permutations=400, seed=3)
    dense = P.randomisation_table(values, present, pairs, n_permutations=400, seed=3, sparse_share=0.0)
    np.testing.assert_array_equal(sparse, dense)
    signs = np.random.default_rng(3).integers(0, 2, size=(400, 80), dtype=np.int8).astype(float) * 2 - 1
    for p, (a, b) in enumerate(pairs):
        both = present[a] & present[b]
        d = values[a, both] - values[b, both]
        stats = np.abs(signs[:, both] @ d / both.sum())
        assert sparse[p] == pytest.approx((1 + (stats >= abs(d.mean()) - 1e-9).sum()) / 401)
