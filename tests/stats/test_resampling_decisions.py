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
- a missing value given as None (what polars' `to_list()` gives for a null) is read as NaN, the missing value each
  function documents: `holm` leaves it out of the family, `wilcoxon_p` (one or two vectors) returns NaN,
  `percentile_interval` and `paired_bootstrap_p` skip such a resample, an observed None gives p NaN,
  `significance_frame` writes a NaN cell; none of them raises a TypeError on None;
- the same for `bootstrap_masked_means`: a None value where the row does not score the item is never read, a None
  presence flag is "not scored"; `bootstrap_means` rejects a None with its own message (use the masked means);
- `mannwhitney_p` with an empty side is NaN by its own guard, quietly: scipy would warn (SmallSampleWarning);
- a bug found here and fixed (bootstrap.bootstrap_table): a resample that draws none of a pair's common items gave
  the pair +-inf instead of NaN when the pair is corrected item by item and its float sums did not cancel exactly
  (clusters make such resamples common: here one in four); the inf then spoilt the interval and p_bootstrap.
  Such a resample is also silent: no divide-by-zero warning.

No Ray, no engine, tiny inputs: the file runs in about a second.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from emocaustics.stats.bootstrap import (bootstrap_masked_means, bootstrap_means, bootstrap_table,
                                         cluster_index, n_clusters, percentile_interval)
from emocaustics.stats.mannwhitney import mannwhitney_p
from emocaustics.stats.matrix import significance_frame
from emocaustics.stats.paired import holm, paired_bootstrap_p, randomisation_table, wilcoxon_p
from stats.pairwise import bootstrap_ci, paired_bootstrap

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


def test_holm_leaves_a_none_out_of_the_family():
    """Two p-values in the family: 0.25 * 2 = 0.5, then max(0.5, 0.5 * 1) = 0.5."""
    np.testing.assert_array_equal(holm([0.25, None, 0.5]), [0.5, np.nan, 0.5])


def test_wilcoxon_of_a_none_is_nan():
    assert np.isnan(wilcoxon_p([1.0, None]))


def test_percentile_interval_skips_a_none_resample():
    """[0, 1] left: the 25 % and 75 % quantiles (linear) are 0.25 and 0.75."""
    low, high = percentile_interval([[0.0, None, 1.0]], 0.5)
    assert (low.tolist(), high.tolist()) == ([0.25], [0.75])


def test_paired_bootstrap_p_reads_none_as_no_value():
    """d = 1; resamples None, 1, 3: |1 - 1| = 0 < 1, |3 - 1| = 2 >= 1, so p = (1 + 1) / (2 + 1)."""
    assert paired_bootstrap_p([[None, 1.0, 3.0]], [1.0]).tolist() == [2 / 3]
    assert np.isnan(paired_bootstrap_p([[1.0, 2.0]], [None])).all()


def test_significance_frame_writes_a_none_cell_as_nan():
    frame = significance_frame([[1.0, None], [0.25, 1.0]], ["a", "b"])
    assert frame.columns == ["", "a", "b"] and frame[""].to_list() == ["a", "b"]
    assert frame["a"].to_list() == [1.0, 0.25]
    assert np.isnan(frame["b"][0]) and frame["b"][1] == 1.0


def test_masked_means_read_none_as_not_scored():
    """Item 0 (1.0) scored, item 1 not: a resample is 1.0 when it draws item 0, NaN when it draws item 1 twice."""
    for values, present in (([[1.0, None]], [[True, False]]), ([[1.0, 2.0]], [[True, None]])):
        boot = bootstrap_masked_means(values, present, n_resamples=R)[0]
        assert set(boot[~np.isnan(boot)]) == {1.0}
        assert 0 < np.isnan(boot).sum() < R


def test_bootstrap_means_send_a_none_to_the_masked_means():
    with pytest.raises(ValueError, match="values contain NaN .use bootstrap_masked_means for missing items"):
        bootstrap_means([1.0, None], n_resamples=4)


def test_mann_whitney_with_an_empty_side_is_nan_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(mannwhitney_p([], [1.0, 2.0], "greater"))
        assert np.isnan(mannwhitney_p([1.0, 2.0], [], "greater"))


def _no_common_item_drawn() -> tuple[np.ndarray, np.ndarray]:
    """48 items: config a scores items 0-41 (0.25 each), b all (0.5 on 0-41, six uneven values on 42-47); items
    42-47 are cluster 1, the rest cluster 0. A resample that draws cluster 1 twice (one in four) has no common item;
    the pair's corrected sums there need not cancel to exactly 0 (they do not with this machine's BLAS)."""
    n = 48
    a, b = np.full(n, 0.25), np.full(n, 0.5)
    a[42:], b[42:] = 0.0, [0.9, 0.2, 0.6, 0.1, 0.7, 0.3]
    present = np.ones((2, n), dtype=bool)
    present[0, 42:] = False
    clusters = np.zeros(n, dtype=np.int64)
    clusters[42:] = 1
    return bootstrap_table(np.vstack([a, b]), present, [(0, 1)], n_resamples=R, clusters=clusters)


def test_pair_without_a_common_item_drawn_is_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _no_common_item_drawn()


def test_pair_without_a_common_item_drawn_is_nan_not_inf():
    """The pair is NaN where no common item was drawn, as config a is; every other resample has the difference
    -0.25 of every common item."""
    rows, pairs = _no_common_item_drawn()
    none = np.isnan(rows[0])
    assert 0 < none.sum() < R
    assert not np.isinf(pairs).any()
    np.testing.assert_array_equal(np.isnan(pairs[0]), none)
    np.testing.assert_allclose(pairs[0][~none], -0.25, rtol=0, atol=1e-12)
