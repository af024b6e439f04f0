"""Bootstrap intervals: reproducible with a seed, around the mean, narrower with more items."""

from __future__ import annotations

import numpy as np
import pytest

from emocaustics.stats import bootstrap as B
from stats.pairwise import bootstrap_ci


def test_counts_are_resamples_of_n_items():
    rng = np.random.default_rng(0)
    chunks = list(B.resample_counts(7, 10, rng))
    counts = np.concatenate(chunks)
    assert counts.shape == (10, 7) and np.all(counts.sum(axis=1) == 7) and np.all(counts >= 0)


def test_chunks_do_not_change_the_draws(monkeypatch):
    values = np.random.default_rng(1).normal(size=(3, 50))
    whole = B.bootstrap_means(values, n_resamples=200, seed=5)
    monkeypatch.setattr(B, "CHUNK_CELLS", 50 * 7)  # 7 resamples per chunk
    chunked = B.bootstrap_means(values, n_resamples=200, seed=5)
    assert whole.shape == (3, 200)
    # a chunk draws (b, n) integers at once; same generator, same stream -> the same resamples (the matrix product
    # may round differently in another blocking: equal to the last bits, not bit for bit)
    np.testing.assert_allclose(whole, chunked, rtol=0, atol=1e-12)


def test_reproducible_with_a_seed():
    x = np.random.default_rng(2).exponential(size=300)
    a = bootstrap_ci(x, seed=11, n_resamples=2000)
    b = bootstrap_ci(x, seed=11, n_resamples=2000)
    c = bootstrap_ci(x, seed=12, n_resamples=2000)
    assert [float(v) for v in a] == [float(v) for v in b]
    assert float(a[1]) != float(c[1])


def test_interval_contains_the_mean_and_narrows_with_n():
    rng = np.random.default_rng(3)
    widths = []
    for n in (100, 10_000):
        x = rng.normal(loc=5.0, scale=2.0, size=n)
        mean, low, high = bootstrap_ci(x, n_resamples=2000, seed=0)
        assert low < mean < high and float(mean) == pytest.approx(x.mean())
        widths.append(float(high - low))
        # 95% of a normal mean: about 2 * 1.96 * sd / sqrt(n)
        assert widths[-1] == pytest.approx(2 * 1.96 * 2.0 / np.sqrt(n), rel=0.15)
    assert widths[1] < widths[0] / 5  # sqrt(100) = 10 times narrower, up to noise


def test_rows_share_resamples():
    x = np.random.default_rng(4).normal(size=100)
    boot = B.bootstrap_means(np.stack([x, x + 1.0]), n_resamples=500, seed=0)
    # the same resampled items for both rows: the shift survives every resample exactly
    np.testing.assert_allclose(boot[1] - boot[0], 1.0, atol=1e-12)


def test_nan_and_level_are_refused():
    with pytest.raises(ValueError, match="NaN"):
        B.bootstrap_means(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="level"):
        B.percentile_interval(np.zeros((1, 10)), level=1.5)


def test_masked_means_equal_plain_means_for_full_rows():
    x = np.random.default_rng(6).normal(size=(2, 40))
    plain = B.bootstrap_means(x, n_resamples=300, seed=2)
    masked = B.bootstrap_masked_means(x, np.ones_like(x, dtype=bool), n_resamples=300, seed=2)
    np.testing.assert_allclose(masked, plain, atol=1e-12)


def test_masked_means_average_the_drawn_items_a_row_scores():
    # row scores items 0 and 1 only (values 2 and 4): every resample mean lies in [2, 4], and the interval is
    # close to the bootstrap of its own items
    values = np.array([[2.0, 4.0, 99.0, 99.0]])
    present = np.array([[True, True, False, False]])
    boot = B.bootstrap_masked_means(values, present, n_resamples=2000, seed=0)
    finite = boot[~np.isnan(boot)]
    assert finite.min() >= 2.0 and finite.max() <= 4.0
    # P(no draw of items 0/1 among 4 draws) = (1/2)^4 = 1/16: those resamples are NaN (no value), ~125 of 2000
    assert 60 < int(np.isnan(boot).sum()) < 200
    low, high = B.percentile_interval(boot)
    assert (float(low[0]), float(high[0])) == (2.0, 4.0)


@pytest.mark.parametrize("share", [0.125, 0.0])  # the sparse corrections, and the plain product for every pair
def test_table_matches_masked_means_of_rows_and_pair_differences(share):
    rng = np.random.default_rng(8)
    values = rng.normal(size=(4, 60))
    present = rng.random((4, 60)) > 0.05
    present[3] = present[2]  # rows 2 and 3 score the same items
    present[1, :30] = False  # row 1 misses half: its pairs go through the product
    pairs = [(0, 1), (0, 2), (1, 2), (2, 3), (0, 3)]
    rows, diffs = B.bootstrap_table(values, present, pairs, n_resamples=300, seed=4, sparse_share=share)
    np.testing.assert_allclose(rows, B.bootstrap_masked_means(values, present, n_resamples=300, seed=4), atol=1e-12)
    for p, (a, b) in enumerate(pairs):
        common = present[a] & present[b]
        want = B.bootstrap_masked_means((values[a] - values[b])[None, :], common[None, :], n_resamples=300, seed=4)
        np.testing.assert_allclose(diffs[p], want[0], atol=1e-12, err_msg=str((a, b)))
