"""Issue 44: the cluster decisions of the resampling functions themselves (`bootstrap`, `paired`; issue 43), pinned
for mutation testing by inputs whose right answer is exact and known by hand:

- every public entry that takes `clusters` passes them on to the draws: with one cluster holding every item a
  resample always draws that cluster whole, so every resampled mean is the sample mean and the interval collapses
  onto it (`bootstrap_ci`, `paired_bootstrap`: an item bootstrap of [0, 1] spreads over [0, 1]); with a cluster of two
  scored items and a cluster of one unscored item, a row's resampled mean over the items it scores is 0.5 or NaN,
  never 0 or 1 (`bootstrap_masked_means`, `bootstrap_table`: an item bootstrap of [0, 1] draws 0 and 1 alone too);
- `cluster_index` tells labels apart by their own text: two integers that a float64 cannot tell apart stay two
  clusters beside a float label;
- `n_clusters` of an empty cluster array (no items) is 0, and `randomisation_table` on no items with one is NaN;
- a bug found here and fixed (bootstrap.bootstrap_table): a resample that draws none of a pair's common items gave
  the pair +-inf instead of NaN when the pair is corrected item by item and its float sums did not cancel exactly
  (clusters make such resamples common: here one in four); the inf then spoilt the interval and p_bootstrap.

No Ray, no engine, tiny inputs: the file runs in about a second.
"""

from __future__ import annotations

import numpy as np

from emocaustics.stats.bootstrap import (bootstrap_ci, bootstrap_masked_means, bootstrap_table, cluster_index,
                                         n_clusters)
from emocaustics.stats.paired import paired_bootstrap, randomisation_table

R = 200  # enough resamples that an item bootstrap of two items draws each of its four outcomes
ONE = np.array([0, 0], dtype=np.int64)  # both items in cluster 0


def test_bootstrap_ci_of_one_cluster_is_the_mean_itself():
    mean, low, high = bootstrap_ci(np.array([0.0, 1.0]), n_resamples=R, clusters=ONE)
    assert (float(mean), float(low), float(high)) == (0.5, 0.5, 0.5)


def test_paired_bootstrap_of_one_cluster_has_no_spread():
    """d = [1, 0]: every cluster resample is the mean 0.5, so |d* - d| = 0 < |d| and p = 1 / (R + 1)."""
    got = paired_bootstrap(np.array([1.0, 0.0]), np.array([0.0, 0.0]), n_resamples=R, clusters=ONE)
    assert got == {"diff": 0.5, "ci_low": 0.5, "ci_high": 0.5, "p": 1 / (R + 1)}


def test_masked_means_draw_a_cluster_with_all_its_items():
    """Items 0, 1 (values 0, 1) in cluster 0, item 2 (not scored) in cluster 1: a resample that draws cluster 0
    averages 0 and 1 equally (0.5), one that draws only cluster 1 has nothing to average (NaN)."""
    boot = bootstrap_masked_means(np.array([[0.0, 1.0, 5.0]]), np.array([[True, True, False]]), n_resamples=R,
                                  clusters=np.array([0, 0, 1]))
    assert boot.shape == (1, R)
    assert set(boot[0][~np.isnan(boot[0])]) == {0.5}
    assert 0 < np.isnan(boot[0]).sum() < R  # both outcomes of two draws of two clusters occur in 200 resamples


def test_bootstrap_table_draws_a_cluster_with_all_its_items():
    """As above for the table: row 0 scores items 0, 1 (0, 1), row 1 all three (1, 1, 1); the pair's common items
    0, 1 differ by -1 and 0, so every resample that draws cluster 0 gives the pair -0.5 and row 1 exactly 1."""
    rows, pairs = bootstrap_table(np.array([[0.0, 1.0, 5.0], [1.0, 1.0, 1.0]]),
                                  np.array([[True, True, False], [True, True, True]]), [(0, 1)], n_resamples=R,
                                  clusters=np.array([0, 0, 1]))
    drew = ~np.isnan(rows[0])
    assert 0 < drew.sum() < R
    assert set(rows[0][drew]) == {0.5} and set(rows[1]) == {1.0}
    assert set(pairs[0][drew]) == {-0.5} and np.isnan(pairs[0][~drew]).all()


def test_cluster_labels_are_told_apart_by_their_own_text():
    """2**53 + 1 and 2**53 are different labels; read as float64 (beside the float 0.5) they would be one."""
    np.testing.assert_array_equal(cluster_index([2**53 + 1, 2**53, 0.5, 0.5]), [0, 1, 2, 2])


def test_no_items_make_no_clusters():
    assert n_clusters(np.zeros(0, dtype=np.int64), 0) == 0
    p = randomisation_table(np.zeros((2, 0)), np.zeros((2, 0), dtype=bool), [(0, 1)], n_permutations=10,
                            clusters=np.zeros(0, dtype=np.int64))
    assert p.shape == (1,) and np.isnan(p[0])


def test_pair_without_a_common_item_drawn_is_nan_not_inf():
    """48 items: config a scores items 0-41 (0.25 each), b all (0.5 on 0-41, six uneven values on 42-47); items
    42-47 are cluster 1, the rest cluster 0. A resample that draws cluster 1 twice (one in four) has no common item:
    the pair is NaN there, as config a is; every other resample has the difference -0.25 of every common item."""
    n = 48
    a, b = np.full(n, 0.25), np.full(n, 0.5)
    a[42:], b[42:] = 0.0, [0.9, 0.2, 0.6, 0.1, 0.7, 0.3]
    present = np.ones((2, n), dtype=bool)
    present[0, 42:] = False
    clusters = np.zeros(n, dtype=np.int64)
    clusters[42:] = 1
    rows, pairs = bootstrap_table(np.vstack([a, b]), present, [(0, 1)], n_resamples=R, clusters=clusters)
    none = np.isnan(rows[0])
    assert 0 < none.sum() < R
    assert not np.isinf(pairs).any()
    np.testing.assert_array_equal(np.isnan(pairs[0]), none)
    np.testing.assert_allclose(pairs[0][~none], -0.25, rtol=0, atol=1e-12)
