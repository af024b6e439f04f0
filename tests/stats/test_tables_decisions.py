"""Issue 44: the cluster decisions of `config_stats` (issue 43) pinned for mutation testing, by inputs whose right
answer is exact and known by hand:

- one cluster holding every item: a cluster bootstrap always draws that cluster whole, so every resampled mean is the
  sample mean and the interval collapses onto it (an item bootstrap of [0, 1] spreads over [0, 1]); a sign flip per
  cluster flips every difference together, so |mean| never drops and p_randomisation is exactly 1 (flipping items,
  [1, -1] gives 0 half the time); the `clusters` columns count 1 (not the 2 items). Both bootstrap paths are covered:
  every config scoring every item (`bootstrap_means`) and a config that misses one (`bootstrap_table`);
- a pair whose common items leave out a whole cluster in the middle of the numbering: the clustered Wilcoxon ranks
  the two present clusters' means (two positive differences: exact two-sided p = 2 * 1/4 = 0.5), the empty cluster
  neither a zero difference nor a shape mismatch;
- the error that names the first item found in two clusters.

No Ray, no engine, tiny inputs: the file runs in about a second.
"""

from __future__ import annotations

import polars as pl
import pytest

from emocaustics.stats import config_stats

R = 200  # enough resamples that an item bootstrap of [0, 1] reaches both ends of its 95 % interval


def _frame(rows: list[tuple[str, str, float | None, str]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"config": pl.Utf8, "item": pl.Utf8, "value": pl.Float64,
                                      "cluster": pl.Utf8}, orient="row")


def test_one_cluster_every_item_scored_collapses_the_interval_and_flips_together():
    """a = [0, 1], b = [-1, 0], both items in cluster t: a - b = [1, 1]."""
    got = config_stats(_frame([("a", "q1", 0.0, "t"), ("a", "q2", 1.0, "t"),
                               ("b", "q1", -1.0, "t"), ("b", "q2", 0.0, "t")]), n_resamples=R)
    ci = got.ci.rows(named=True)
    assert [(r["config"], r["n"], r["mean"], r["ci_low"], r["ci_high"], r["clusters"]) for r in ci] == [
        ("a", 2, 0.5, 0.5, 0.5, 1), ("b", 2, -0.5, -0.5, -0.5, 1)]
    pair = got.pairs.row(0, named=True)
    assert (pair["n_common"], pair["clusters"], pair["diff"]) == (2, 1, 1.0)
    assert pair["p_randomisation"] == 1.0  # (1 + R) / (R + 1): every flip keeps |mean| = 1
    assert pair["p_wilcoxon"] == 1.0  # one cluster mean difference (+1): the exact two-sided p of n = 1
    assert pair["p_holm"] == 1.0 and pair["significant"] is False


def test_one_cluster_with_a_missing_score_still_draws_the_cluster_whole():
    """b misses q2 (the masked path, `bootstrap_table`): a's interval is still its mean, b's its only value."""
    got = config_stats(_frame([("a", "q1", 0.0, "t"), ("a", "q2", 1.0, "t"),
                               ("b", "q1", -1.0, "t"), ("b", "q2", None, "t")]), n_resamples=R)
    assert [(r["config"], r["n"], r["n_missing"], r["mean"], r["ci_low"], r["ci_high"], r["clusters"])
            for r in got.ci.rows(named=True)] == [("a", 2, 0, 0.5, 0.5, 0.5, 1), ("b", 1, 1, -1.0, -1.0, -1.0, 1)]
    pair = got.pairs.row(0, named=True)
    assert (pair["n_common"], pair["clusters"], pair["n_only_a"], pair["n_only_b"], pair["diff"]) == (1, 1, 1, 0, 1.0)


def test_item_bootstrap_without_clusters_spreads_where_the_cluster_one_does_not():
    """The same a, b without the cluster column: the control for the two tests above (item draws, 2 clusters)."""
    got = config_stats(_frame([("a", "q1", 0.0, "t"), ("a", "q2", 1.0, "t"),
                               ("b", "q1", -1.0, "t"), ("b", "q2", 0.0, "t")]).drop("cluster"), n_resamples=R)
    a = got.ci.row(0, named=True)
    assert (a["ci_low"], a["ci_high"], a["clusters"]) == (0.0, 1.0, 2)
    assert got.pairs["clusters"][0] == 2 and got.pairs["p_randomisation"][0] < 0.75


def test_wilcoxon_skips_a_cluster_the_pair_has_no_common_item_in():
    """Clusters x (q0), y (q1, q2), z (q3); b misses q0, so the pair's common items fill y and z only (cluster 0 is
    empty). Differences per cluster: y +0.2, z +0.4: two positive ranks, exact two-sided p = 0.5 (items: 0.25)."""
    a = [("a", "q0", 1.0, "x"), ("a", "q1", 0.5, "y"), ("a", "q2", 0.7, "y"), ("a", "q3", 0.9, "z")]
    b = [("b", "q0", None, "x"), ("b", "q1", 0.3, "y"), ("b", "q2", 0.5, "y"), ("b", "q3", 0.5, "z")]
    pair = config_stats(_frame(a + b), n_resamples=R).pairs.row(0, named=True)
    assert (pair["n_common"], pair["clusters"], pair["n_only_a"]) == (3, 2, 1)
    assert pair["diff"] == pytest.approx((0.2 + 0.2 + 0.4) / 3, abs=1e-15)
    assert pair["p_wilcoxon"] == pytest.approx(0.5, abs=1e-12)


def test_the_first_item_in_two_clusters_is_the_one_named():
    """q1 and q2 both change cluster between configs: the message names q1 (first seen), with its two clusters."""
    frame = _frame([("a", "q1", 1.0, "t1"), ("a", "q2", 1.0, "t1"), ("b", "q1", 0.0, "t2"), ("b", "q2", 0.0, "t2")])
    with pytest.raises(ValueError, match=r"^config_stats: item 'q1' is in more than one cluster \('t1', 't2'\)$"):
        config_stats(frame)
