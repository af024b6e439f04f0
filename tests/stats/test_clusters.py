"""Intervals and paired tests that resample clusters (issue 43 point 2), checked three ways:

- exactly: every item its own cluster is the plain bootstrap and randomisation, draw for draw; equal-sized clusters
  whose items are equal are the plain ones on the clusters' means, draw for draw (so the items stay together);
- against an independent computation: statsmodels' cluster-robust standard error of an OLS of score on a constant
  (`cov_type="cluster"`, CR0: `use_correction=False`, the plug-in variance the bootstrap estimates) on a hand-made
  dataset and on AER's sample split (the published questions and their topics, scored for the `random` baseline);
- on AER, the clustered interval against the naive one (wider when topics are correlated).

Tolerance: the bootstrap's standard error is a Monte Carlo estimate from B resamples; the SD of B near-normal draws
has a relative standard error of about 1 / sqrt(2 (B - 1)) (0.71 % at B = 10,000), so 4 of those (2.8 %) for equal
cluster sizes, where the resampled mean is linear in the draws. With unequal sizes (AER's topics) the resampled mean
is a ratio (sum of drawn totals / sum of drawn sizes), whose variance differs from the linearised CR0 one by terms of
order 1/G: we allow 2 % more (measured at B = 100,000: 0.8 % on the sample split's 10 topics, 0.8 % on the dev
split's 36).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from emocaustics.stats import bootstrap as B
from emocaustics.stats import config_stats
from stats.pairwise import approximate_randomisation_p, bootstrap_ci

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tasks.aer.aer_fixtures import published_root  # noqa: E402

sm = pytest.importorskip("statsmodels.api")  # the dev extra: production code never needs it

RESAMPLES = 10_000
MC = 4 / np.sqrt(2 * (RESAMPLES - 1))  # 4 Monte Carlo standard errors of a bootstrap SD, relative
RATIO = 0.02  # the ratio estimator's second-order term with unequal cluster sizes (see the module docstring)


def cr0_se(y: np.ndarray, groups: list[str]) -> float:
    """statsmodels' cluster-robust SE of the mean (OLS on a constant), without the G/(G-1) small-sample factor."""
    fit = sm.OLS(y, np.ones((len(y), 1))).fit(
        cov_type="cluster", cov_kwds={"groups": np.unique(groups, return_inverse=True)[1], "use_correction": False})
    return float(fit.bse[0])


def test_cluster_index_numbers_clusters_as_first_seen_and_singletons_are_none():
    np.testing.assert_array_equal(B.cluster_index(["t9", "t2", "t9", "t5", "t2"]), [0, 1, 0, 2, 1])
    assert B.cluster_index(["a", "b", "c"]) is None and B.cluster_index(None) is None


def test_every_item_its_own_cluster_is_the_plain_tables_bit_for_bit():
    rng = np.random.default_rng(3)
    rows = [{"config": c, "item": f"q{i}", "value": float(v)}
            for c in ("a", "b", "c") for i, v in enumerate(rng.integers(0, 3, 40) / 2)]
    missing = (pl.col("item") == "q3") & (pl.col("config") == "a")  # a config that misses an item: the masked path
    plain = pl.DataFrame(rows).with_columns(pl.when(missing).then(None).otherwise(pl.col("value")).alias("value"))
    own = config_stats(plain.with_columns(pl.col("item").alias("cluster")), n_resamples=2000)
    base = config_stats(plain, n_resamples=2000)
    assert own.ci.equals(base.ci) and own.pairs.equals(base.pairs)
    assert base.ci["clusters"].to_list() == [39, 40, 40] and base.pairs["clusters"].to_list() == [39, 39, 40]


def test_a_cluster_is_drawn_whole():
    """Four clusters of three equal items: the clustered resampled means are the plain bootstrap's on the four
    clusters' means, the same draws (a resample that split a cluster would differ)."""
    means = np.array([0.1, 0.9, 0.4, 0.7])
    items = np.repeat(means, 3)
    clusters = B.cluster_index(np.repeat(["w", "x", "y", "z"], 3))
    np.testing.assert_allclose(B.bootstrap_means(items, n_resamples=500, seed=4, clusters=clusters),
                               B.bootstrap_means(means, n_resamples=500, seed=4), rtol=0, atol=1e-12)
    counts = next(B.resample_counts(12, 50, np.random.default_rng(0), clusters))
    assert np.all(counts.reshape(50, 4, 3).std(axis=2) == 0) and np.all(counts.sum(axis=1) % 3 == 0)


def test_the_sign_flip_is_one_per_cluster():
    d = np.array([0.5, -0.2, 0.3, 0.4, -0.1])
    clusters = B.cluster_index(np.repeat(["a", "b", "c", "d", "e"], 4))
    p = approximate_randomisation_p(np.repeat(d, 4), n_permutations=3000, seed=9, clusters=clusters)
    assert p == approximate_randomisation_p(d, n_permutations=3000, seed=9)
    # flipped item by item instead, 20 "independent" differences look far more significant
    assert approximate_randomisation_p(np.repeat(d, 4), n_permutations=3000, seed=9) < p / 3


def test_clustered_se_matches_statsmodels_on_a_hand_made_dataset():
    """12 clusters of 8 items, a cluster effect of SD 0.3 and item noise of SD 0.2: equal sizes, so the resampled
    mean is linear and only Monte Carlo error separates the bootstrap from CR0."""
    rng = np.random.default_rng(7)
    groups = [f"g{g}" for g in range(12) for _ in range(8)]
    y = np.repeat(rng.normal(0.5, 0.3, 12), 8) + rng.normal(0, 0.2, 96)
    boot = B.bootstrap_means(y, n_resamples=RESAMPLES, seed=0, clusters=B.cluster_index(groups))
    assert boot.std(ddof=1) == pytest.approx(cr0_se(y, groups), rel=MC)
    naive = B.bootstrap_means(y, n_resamples=RESAMPLES, seed=0)
    assert boot.std(ddof=1) > 2 * naive.std(ddof=1)  # the items of a cluster are not 8 independent draws


def test_unequal_clusters_match_statsmodels():
    rng = np.random.default_rng(11)
    sizes = rng.integers(1, 30, 15)
    groups = [f"g{g}" for g, s in enumerate(sizes) for _ in range(s)]
    y = np.repeat(rng.normal(0, 1, 15), sizes) + rng.normal(0, 1, sizes.sum())
    boot = B.bootstrap_means(y, n_resamples=RESAMPLES, seed=1, clusters=B.cluster_index(groups))
    assert boot.std(ddof=1) == pytest.approx(cr0_se(y, groups), rel=MC + RATIO)


def aer_sample_split(topic_known: bool, split: str = "sample") -> tuple[np.ndarray, list[str]]:
    """The published sample split's 200 questions and their topics, scored for the `random` baseline (seed 0), or,
    with `topic_known`, for a predictor that answers the gold on even-numbered topics and like `random` elsewhere
    (a model that knows some topics: its scores are correlated within a topic)."""
    from emocaustics.tasks.aer.data import load_split, to_sample
    from emocaustics.tasks.aer.predictors import random_subset
    from emocaustics.tasks.aer.scoring import question_score

    data = load_split(published_root(), split)
    y = np.array([1.0 if topic_known and q.topic_id % 2 == 0 else question_score(random_subset(q.id, 0), q.gold)
                  for q in data.questions])
    return y, [to_sample(q, data).meta["cluster"] for q in data.questions]  # the loader's cluster: the topic


@pytest.mark.parametrize("split,questions,topics", [("sample", 200, 10), ("dev", 400, 36)])
def test_aer_splits_against_statsmodels(split, questions, topics):
    y, of = aer_sample_split(topic_known=False, split=split)
    assert len(y) == questions and len(set(of)) == topics
    boot = B.bootstrap_means(y, n_resamples=RESAMPLES, seed=0, clusters=B.cluster_index(of))
    assert boot.std(ddof=1) == pytest.approx(cr0_se(y, of), rel=MC + RATIO)  # 0.01649 vs 0.01656; 0.01266 vs 0.01265


def test_aer_clustered_interval_is_wider_when_topics_are_correlated():
    y, topics = aer_sample_split(topic_known=True)
    clusters = B.cluster_index(topics)
    boot = B.bootstrap_means(y, n_resamples=RESAMPLES, seed=0, clusters=clusters)
    assert boot.std(ddof=1) == pytest.approx(cr0_se(y, topics), rel=MC + RATIO)  # 0.1577 vs 0.1560
    _, lo, hi = bootstrap_ci(y, clusters=clusters)
    _, nlo, nhi = bootstrap_ci(y)
    assert hi - lo > 3 * (nhi - nlo)  # [0.197, 0.806] against [0.397, 0.530] around 0.4625
    frame = pl.DataFrame({"config": ["knows-topics"] * 200 + ["random"] * 200,
                          "item": [f"q{i}" for i in range(200)] * 2,
                          "value": np.concatenate([y, aer_sample_split(topic_known=False)[0]]), "cluster": topics * 2})
    clustered, naive = config_stats(frame), config_stats(frame.drop("cluster"))
    assert clustered.ci["clusters"].to_list() == [10, 10] and clustered.pairs["clusters"].to_list() == [10]
    # the 0.38 gain comes from 5 topics, not 90 independent questions: the clustered test is far less sure
    assert naive.pairs["p_randomisation"][0] < 1e-3 < 0.01 < clustered.pairs["p_randomisation"][0]
    got = clustered.pairs.row(0, named=True)
    assert [round(got[k], 4) for k in ("diff", "diff_low", "diff_high", "p_holm")] == [0.3825, 0.1103, 0.7379, 0.0629]
    assert got["n_common"] == 200 and naive.pairs["clusters"][0] == 200


def test_an_item_in_two_clusters_or_none_is_named():
    frame = pl.DataFrame({"config": ["a", "b"], "item": ["q1", "q1"], "value": [1.0, 0.0], "cluster": ["t1", "t2"]})
    with pytest.raises(ValueError, match=r"item 'q1' is in more than one cluster \('t1', 't2'\)"):
        config_stats(frame)
    with pytest.raises(ValueError, match="1 row\\(s\\) with a null cluster, e.g. item 'q1'"):
        config_stats(frame.with_columns(pl.Series("cluster", ["t1", None])))


def test_wilcoxon_ranks_the_clusters_mean_differences():
    """Three clusters: a's minus b's mean differences per cluster are +0.5, +0.2 and -0.1 (sizes 3, 1, 2); the
    clustered Wilcoxon is scipy's on those three numbers, not on the six items."""
    from scipy.stats import wilcoxon

    frame = pl.DataFrame({"config": ["a"] * 6 + ["b"] * 6, "item": [f"q{i}" for i in range(6)] * 2,
                          "value": [0.9, 0.7, 0.8, 0.6, 0.3, 0.1] + [0.3, 0.4, 0.2, 0.4, 0.3, 0.3],
                          "cluster": ["x", "x", "x", "y", "z", "z"] * 2})
    got = config_stats(frame, n_resamples=200).pairs
    assert got["p_wilcoxon"][0] == pytest.approx(wilcoxon([0.5, 0.2, -0.1]).pvalue, abs=1e-15)
    assert got["p_wilcoxon"][0] != pytest.approx(wilcoxon([0.6, 0.3, 0.6, 0.2, 0.0, -0.2]).pvalue)
