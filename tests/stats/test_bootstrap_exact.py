"""Bootstrap on small worked examples with exact expected numbers: the counts, means and percentile intervals are
computed here straight from numpy's generator (resample r draws the items rng.integers(0, n, (B, n))[r]) and
numpy's quantile, independently of the counts-product code, so a wrong width, level, stream or chunking shows up
as a wrong number (issue 29, mutation testing)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from emocaustics.stats import bootstrap as B
from stats.pairwise import bootstrap_ci


def draws(n: int, n_resamples: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(n_resamples, n), dtype=np.int64)


def test_counts_worked_example_with_an_item_never_drawn_last():
    # seed 3, 4 items, 3 resamples draws [3,0,0,0], [0,3,3,2], [0,0,1,1]: the last resample never draws item 3
    # (the last column of the whole chunk is zero: the counts must still have 4 columns)
    assert draws(4, 3, 3).tolist() == [[3, 0, 0, 0], [0, 3, 3, 2], [0, 0, 1, 1]]
    counts = np.concatenate(list(B.resample_counts(4, 3, np.random.default_rng(3))))
    assert counts.dtype == np.float64
    assert counts.tolist() == [[3.0, 0.0, 0.0, 1.0], [1.0, 0.0, 1.0, 2.0], [2.0, 2.0, 0.0, 0.0]]


def test_counts_chunk_shapes(monkeypatch):
    monkeypatch.setattr(B, "CHUNK_CELLS", 10)  # 7 items: one resample per chunk (10 // 7 = 1)
    shapes = [c.shape for c in B.resample_counts(7, 3, np.random.default_rng(0))]
    assert shapes == [(1, 7), (1, 7), (1, 7)]
    monkeypatch.setattr(B, "CHUNK_CELLS", 15)  # 15 // 7 = 2 per chunk: 2 + 2 + 1
    chunks = list(B.resample_counts(7, 5, np.random.default_rng(0)))
    assert [c.shape for c in chunks] == [(2, 7), (2, 7), (1, 7)]
    want = np.stack([np.bincount(r, minlength=7) for r in draws(7, 5, 0)])
    np.testing.assert_array_equal(np.concatenate(chunks), want)


def test_zero_items_is_a_named_error_and_one_item_is_fine():
    with pytest.raises(ValueError) as err:
        next(B.resample_counts(0, 3, np.random.default_rng(0)))
    assert str(err.value) == "cannot resample zero items"
    one = np.concatenate(list(B.resample_counts(1, 2, np.random.default_rng(0))))
    assert one.tolist() == [[1.0], [1.0]]


def test_means_and_interval_worked_example(monkeypatch):
    x = np.array([2.0, 7.0, 1.0, 8.0, 2.0, 8.0])
    want = x[draws(6, 50, 9)].mean(axis=1)
    got = B.bootstrap_means(x, n_resamples=50, seed=9)
    assert got.shape == (50,)  # a 1-D input gives one row back as 1-D
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    two = B.bootstrap_means(np.stack([x, 2 * x]), n_resamples=50, seed=9)
    assert two.shape == (2, 50)
    np.testing.assert_allclose(two, np.stack([want, 2 * want]), rtol=0, atol=1e-12)
    # several chunks (4 resamples of 6 items per chunk): the same draws, the same means
    monkeypatch.setattr(B, "CHUNK_CELLS", 24)
    np.testing.assert_allclose(B.bootstrap_means(x, n_resamples=50, seed=9), want, rtol=0, atol=1e-12)
    mean, low, high = bootstrap_ci(x, n_resamples=50, seed=9, level=0.9)
    assert float(mean) == pytest.approx(14 / 3, abs=1e-15)
    assert float(low) == pytest.approx(np.quantile(want, 0.05), abs=1e-12)
    assert float(high) == pytest.approx(np.quantile(want, 0.95), abs=1e-12)
    # default level 95 %
    _, low95, high95 = bootstrap_ci(x, n_resamples=50, seed=9)
    assert float(low95) == pytest.approx(np.quantile(want, 0.025), abs=1e-12)
    assert float(high95) == pytest.approx(np.quantile(want, 0.975), abs=1e-12)
    assert float(high95 - low95) > float(high - low)


def test_defaults_are_10000_resamples_from_seed_0():
    x = np.array([1.0, 4.0, 2.0])
    got = B.bootstrap_means(x)
    assert got.shape == (10_000,)
    np.testing.assert_allclose(got, x[draws(3, 10_000, 0)].mean(axis=1), rtol=0, atol=1e-12)
    masked = B.bootstrap_masked_means(x[None, :], np.ones((1, 3), dtype=bool))
    np.testing.assert_allclose(masked[0], got, rtol=0, atol=1e-12)


def test_masked_means_worked_example():
    values = np.array([[1.0, 5.0, 100.0, 3.0], [2.0, 2.0, 4.0, 6.0]])
    present = np.array([[True, True, False, True], [True, True, True, True]])
    d = draws(4, 40, 1)
    got = B.bootstrap_masked_means(values, present, n_resamples=40, seed=1)
    for r in range(40):
        scored = [v for v in d[r] if present[0, v]]
        want0 = np.mean(values[0, scored]) if scored else np.nan
        assert got[0, r] == pytest.approx(want0, abs=1e-12, nan_ok=True)
        assert got[1, r] == pytest.approx(values[1, d[r]].mean(), abs=1e-12)
    with pytest.raises(ValueError) as err:
        B.bootstrap_masked_means(values, present[:, :3])
    assert str(err.value) == "values (2, 4) and present (2, 3) differ in shape"


def test_nan_values_are_refused_with_the_reason():
    with pytest.raises(ValueError) as err:
        B.bootstrap_means(np.array([[1.0, np.nan]]))
    assert str(err.value) == ("bootstrap_means: values contain NaN (use bootstrap_masked_means for missing "
                              "items)")


def test_percentile_interval_worked_example():
    boot = np.arange(101.0)  # quantiles of 0..100 are the percentages themselves
    low, high = B.percentile_interval(boot, 0.9)  # tail (1 - 0.9) / 2 rounds to 0.04999...: 5 to the last bit
    assert (float(low), float(high)) == pytest.approx((5.0, 95.0), abs=1e-12)
    low, high = B.percentile_interval(np.stack([boot, 2 * boot]))  # 95 %, per row
    np.testing.assert_allclose(low, [2.5, 5.0], atol=1e-12)
    np.testing.assert_allclose(high, [97.5, 195.0], atol=1e-12)
    # NaN resamples carry no value: the quantiles of the rest (0..100 again); an all-NaN row gives NaN bounds
    with_nan = np.concatenate([boot, [np.nan] * 7])
    low, high = B.percentile_interval(np.stack([with_nan, np.full(108, np.nan)]), 0.9)
    assert (float(low[0]), float(high[0])) == pytest.approx((5.0, 95.0), abs=1e-12) and math.isnan(low[1]) and math.isnan(high[1])
    for level in (0.0, 1.0, -0.5):
        with pytest.raises(ValueError) as err:
            B.percentile_interval(boot, level)
        assert str(err.value) == f"level must be in (0, 1), got {level}"


def test_table_worked_example_against_the_draws(monkeypatch):
    # configs a, b, c over 5 items; c misses item 4, b misses item 0
    # and d scores item 2 only: about a third of the resamples draw none of its items (NaN there)
    values = np.array([[1.0, 2.0, 3.0, 4.0, 10.0], [0.0, 1.0, 1.0, 5.0, 2.0], [2.0, 2.0, 0.0, 1.0, 0.0],
                       [9.0, 9.0, 7.0, 9.0, 9.0]])
    present = np.array([[True] * 5, [False, True, True, True, True], [True, True, True, True, False],
                        [False, False, True, False, False]])
    pairs = [(0, 1), (0, 2), (1, 2), (2, 3), (3, 0)]
    d = draws(5, 30, 4)
    monkeypatch.setattr(B, "CHUNK_CELLS", 10)  # 2 resamples per chunk: 15 chunks fill the table in order
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a resample without a row's items is NaN there, silently
        rows, diffs = B.bootstrap_table(values, present, pairs, n_resamples=30, seed=4)

    def mean_over(weights_row: np.ndarray, vals: np.ndarray, mask: np.ndarray) -> float:
        picked = [v for v in weights_row if mask[v]]
        return float(np.mean(vals[picked])) if picked else float("nan")

    for r in range(30):
        for k in range(4):
            assert rows[k, r] == pytest.approx(mean_over(d[r], values[k], present[k]), abs=1e-12, nan_ok=True)
        for p, (a, b) in enumerate(pairs):
            want = mean_over(d[r], values[a] - values[b], present[a] & present[b])
            assert diffs[p, r] == pytest.approx(want, abs=1e-12, nan_ok=True)
    assert 0 < int(np.isnan(rows[3]).sum()) < 30

def test_ci_per_row_and_unsigned_scores_in_the_table():
    x = np.array([[1.0, 2.0, 6.0], [4.0, 4.0, 7.0]])
    mean, low, high = bootstrap_ci(x, n_resamples=30, seed=2)
    assert mean.tolist() == [3.0, 5.0] and low.shape == high.shape == (2,)
    # scores stored as small unsigned integers: differences are taken as numbers (no wrap-around at 0)
    values = np.array([[1, 5, 2, 2], [3, 1, 4, 4]], dtype=np.uint8)
    present = np.array([[True, True, True, False], [True, False, True, True]])
    rows_u, diffs_u = B.bootstrap_table(values, present, [(0, 1)], n_resamples=20, seed=1, sparse_share=0.0)
    rows_f, diffs_f = B.bootstrap_table(values.astype(float), present, [(0, 1)], n_resamples=20, seed=1,
                                        sparse_share=0.0)
    np.testing.assert_array_equal(diffs_u, diffs_f)
    assert np.nanmin(diffs_u) >= -2.0  # common items 0 and 2: differences -2 and -2


def test_masked_means_resample_without_the_items_is_nan_silently():
    # one row scoring item 0 of 2: a resample's mean is 1.0 when it draws item 0 (1 x 1 / 1 or 2 x 1 / 2) and 0 / 0 =
    # NaN when it draws item 1 twice; that NaN is expected, so no RuntimeWarning
    d = draws(2, 20, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = B.bootstrap_masked_means(np.array([[1.0, 2.0]]), np.array([[True, False]]), n_resamples=20, seed=0)
    drew = (d == 0).any(axis=1)
    assert 0 < int((~drew).sum()) < 20
    assert (got[0, drew] == 1.0).all() and np.isnan(got[0, ~drew]).all()


def test_percentile_interval_one_row_with_nan():
    # a 1-D row with NaN resamples (the last axis is the resamples): the quantiles of 1, 3 at level 0.5, i.e. 25 %
    # and 75 % -> 1 + 0.25 x 2 = 1.5 and 1 + 0.75 x 2 = 2.5
    low, high = B.percentile_interval(np.array([1.0, np.nan, 3.0]), 0.5)
    assert (float(low), float(high)) == (1.5, 2.5)
