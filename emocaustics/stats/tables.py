"""The statistics under every score table: `config_stats(per_item)` -> (ci_table, pairs_table).

Input: one row per (config, item) with the item's score (`value`; null or NaN = the item was not scored for that
config: counted in `n_missing`, never silently dropped), and optionally the item's `cluster` (the unit its task says
items are not independent within: an AER topic). Output:

- ci_table: config, n, n_missing, mean, ci_low, ci_high, clusters -- the mean over the config's scored items and its
  percentile bootstrap interval (resampling the clusters, each with all its items; every item its own cluster without
  a `cluster` column; every config and pair shares the same draws, see `bootstrap.bootstrap_table` for configs that
  score only some items), and the number of clusters among its scored items.
- pairs_table: one row per unordered pair (configs in input order, a before b): config_a, config_b, n_common, clusters,
  n_only_a, n_only_b (items scored in one config only: excluded from the pair), diff = mean(a - b) over the common
  items, its bootstrap interval diff_low/diff_high, p_bootstrap (paired bootstrap, two-sided), p_randomisation
  (approximate randomisation, two-sided, one sign flip per cluster), p_wilcoxon (Wilcoxon signed-rank, on the
  clusters' mean differences when items cluster), p_holm (Holm over all pairs of the call,
  applied to the test named by `test`, default randomisation) and significant = p_holm < alpha.

Why randomisation by default: the shifted bootstrap test calls a difference measured on one or two items (or a
constant one) "significant" because its resamples cannot vary; the sign-flip test cannot (p >= ~2 / 2^n).

Means are unweighted (every item counts once); callers with weighted rows aggregate to one value per item first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import polars as pl

from emocaustics.stats.bootstrap import DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED, bootstrap_means, \
    bootstrap_table, cluster_index, percentile_interval
from emocaustics.stats.paired import holm, paired_bootstrap_p, randomisation_table, wilcoxon_p

CI_SCHEMA = {"config": pl.Utf8, "n": pl.Int64, "n_missing": pl.Int64, "mean": pl.Float64, "ci_low": pl.Float64,
             "ci_high": pl.Float64, "clusters": pl.Int64}
PAIRS_SCHEMA = {"config_a": pl.Utf8, "config_b": pl.Utf8, "n_common": pl.Int64, "clusters": pl.Int64,
                "n_only_a": pl.Int64,
                "n_only_b": pl.Int64, "diff": pl.Float64, "diff_low": pl.Float64, "diff_high": pl.Float64,
                "p_bootstrap": pl.Float64, "p_randomisation": pl.Float64, "p_wilcoxon": pl.Float64,
                "p_holm": pl.Float64, "significant": pl.Boolean}


TESTS = ("randomisation", "bootstrap", "wilcoxon")


class ConfigStats(NamedTuple):
    ci: pl.DataFrame
    pairs: pl.DataFrame


def config_matrix(per_item: pl.DataFrame) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """(configs in first-seen order, items in first-seen order, values (configs x items, NaN = not scored),
    n_missing per config). Raises ValueError on missing columns, null keys or a repeated (config, item)."""
    missing = [c for c in ("config", "item", "value") if c not in per_item.columns]
    if missing:
        raise ValueError(f"config_stats: per_item lacks column(s) {missing}; has {per_item.columns}")
    df = per_item.select(pl.col("config").cast(pl.Utf8), pl.col("item").cast(pl.Utf8),
                         pl.col("value").cast(pl.Float64))
    for key in ("config", "item"):
        nulls = df.filter(pl.col(key).is_null()).height
        if nulls:
            raise ValueError(f"config_stats: {nulls} row(s) with a null {key}")
    dup = df.group_by("config", "item").len().filter(pl.col("len") > 1)
    if dup.height:
        first = dup.row(0, named=True)
        raise ValueError(f"config_stats: {dup.height} (config, item) pair(s) repeated, e.g. config "
                         f"{first['config']!r} item {first['item']!r} x{first['len']}")
    configs = df.get_column("config").unique(maintain_order=True).to_list()
    items = df.get_column("item").unique(maintain_order=True).to_list()
    coded = df.with_columns(pl.col("config").cast(pl.Enum(configs)).to_physical().alias("ci"),
                            pl.col("item").cast(pl.Enum(items)).to_physical().alias("ii"))
    values = np.full((len(configs), len(items)), np.nan)
    ci = coded.get_column("ci").to_numpy()
    ii = coded.get_column("ii").to_numpy()
    v = coded.get_column("value").fill_null(np.nan).to_numpy()
    values[ci, ii] = v
    n_missing = np.bincount(ci[np.isnan(v)], minlength=len(configs))
    return configs, items, values, n_missing


def item_clusters(per_item: pl.DataFrame, items: list[str]) -> np.ndarray | None:
    """Each item's cluster index (`bootstrap.cluster_index`) from the `cluster` column, None without one. An item
    must sit in one cluster in every row: a null cluster or an item in two clusters is a ValueError naming it."""
    if "cluster" not in per_item.columns:
        return None
    df = per_item.select(pl.col("item").cast(pl.Utf8), pl.col("cluster").cast(pl.Utf8))
    nulls = df.filter(pl.col("cluster").is_null())
    if nulls.height:
        raise ValueError(f"config_stats: {nulls.height} row(s) with a null cluster, e.g. item {nulls['item'][0]!r}")
    of_item = df.unique(maintain_order=True)
    twice = of_item.filter(pl.col("item").is_duplicated())
    if twice.height:
        item = twice["item"][0]
        raise ValueError(f"config_stats: item {item!r} is in more than one cluster "
                         f"({', '.join(repr(c) for c in twice.filter(pl.col('item') == item)['cluster'])})")
    cluster = dict(of_item.iter_rows())
    return cluster_index([cluster[i] for i in items])


def _count_clusters(present: np.ndarray, clusters: np.ndarray | None) -> np.ndarray:
    """Clusters with at least one present item, per row of `present`."""
    if clusters is None:
        return present.sum(axis=1).astype(np.int64)
    return np.array([len(np.unique(clusters[row])) for row in present], dtype=np.int64)


def _cluster_means(d: np.ndarray, clusters: np.ndarray | None) -> np.ndarray:
    """The mean of `d` within each cluster that has an item in it (d itself without clusters)."""
    if clusters is None:
        return d
    size = np.bincount(clusters)
    return np.bincount(clusters, weights=d)[size > 0] / size[size > 0]


def config_stats(per_item: pl.DataFrame, *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                 level: float = DEFAULT_LEVEL, alpha: float = 0.05, test: str = "randomisation",
                 only: Sequence[tuple[str, str]] | None = None) -> ConfigStats:
    """Confidence intervals per config and paired tests between every two configs (see the module docstring), or
    only between the pairs of configs named in `only` (a, b; e.g. configs of different runs).
    `test` (randomisation | bootstrap | wilcoxon) is the test that Holm's correction and `significant` use.
    Resampling is seeded: the same input and seed give the same tables."""
    if test not in TESTS:
        raise ValueError(f"test must be one of {TESTS}, got {test!r}")
    configs, items, values, n_missing = config_matrix(per_item)
    clusters = item_clusters(per_item, items)
    present = ~np.isnan(values)
    k = len(configs)
    if only is None:
        pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    else:
        index = {c: i for i, c in enumerate(configs)}
        unknown = [c for pair in only for c in pair if c not in index]
        if unknown:
            raise ValueError(f"config_stats: `only` names config(s) without items: {sorted(set(unknown))}")
        pairs = [(index[a], index[b]) for a, b in only]
    m = len(pairs)
    # one stream of draws serves every config and pair (see bootstrap.bootstrap_table)
    if values.shape[1] == 0:
        cfg_boot, pair_boot = np.full((k, n_resamples), np.nan), np.full((m, n_resamples), np.nan)
    elif present.all():
        cfg_boot = bootstrap_means(values, n_resamples=n_resamples, seed=seed, clusters=clusters)
        pair_boot = np.array([cfg_boot[i] - cfg_boot[j] for i, j in pairs]).reshape(m, n_resamples)
    else:
        cfg_boot, pair_boot = bootstrap_table(values, present, pairs, n_resamples=n_resamples, seed=seed,
                                              clusters=clusters)

    n = present.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, np.where(present, values, 0.0).sum(axis=1) / np.maximum(n, 1), np.nan)
    low, high = percentile_interval(cfg_boot, level) if k else (np.zeros(0), np.zeros(0))
    low, high = np.where(n > 0, low, np.nan), np.where(n > 0, high, np.nan)

    in_a, in_b = present[[i for i, _ in pairs]], present[[j for _, j in pairs]]  # pairs x items, one row a pair
    both = in_a & in_b
    n_common = both.sum(axis=1).astype(np.int64)
    n_clus = _count_clusters(both, clusters)
    only_a = (in_a & ~in_b).sum(axis=1).astype(np.int64)
    only_b = (in_b & ~in_a).sum(axis=1).astype(np.int64)
    diff = np.full(m, np.nan)
    p_wil = np.full(m, np.nan)
    for p, (i, j) in enumerate(pairs):
        if n_common[p] == 0:
            continue
        d = values[i, both[p]] - values[j, both[p]]
        diff[p] = d.mean()
        p_wil[p] = wilcoxon_p(_cluster_means(d, None if clusters is None else clusters[both[p]]))
    p_boot = paired_bootstrap_p(pair_boot, diff)
    lo, hi = percentile_interval(pair_boot, level)  # a pair without common items: all NaN, so NaN bounds

    # the flips get their own stream, derived from the seed (independent of the bootstrap draws)
    flips = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
    p_rand = randomisation_table(values, present, pairs, n_permutations=n_resamples, seed=flips,
                                 clusters=clusters) if m else np.zeros(0)
    p_holm = holm({"randomisation": p_rand, "bootstrap": p_boot, "wilcoxon": p_wil}[test])
    ci = pl.DataFrame({"config": configs, "n": n.astype(np.int64), "n_missing": n_missing,
                       "mean": mean, "ci_low": low, "ci_high": high,
                       "clusters": _count_clusters(present, clusters)}, schema=CI_SCHEMA)
    table = pl.DataFrame({
        "config_a": [configs[i] for i, _ in pairs], "config_b": [configs[j] for _, j in pairs],
        "n_common": n_common,
        "clusters": n_clus,
        "n_only_a": only_a, "n_only_b": only_b, "diff": diff, "diff_low": lo,
        "diff_high": hi, "p_bootstrap": p_boot, "p_randomisation": p_rand, "p_wilcoxon": p_wil, "p_holm": p_holm,
        "significant": np.nan_to_num(p_holm, nan=1.0) < alpha}, schema=PAIRS_SCHEMA)
    return ConfigStats(ci, table)


def holm_family(pairs: pl.DataFrame, in_family: np.ndarray | list[bool], *, test: str = "randomisation",
                alpha: float = 0.05, family: str = "configs", outside: str = "calibration") -> pl.DataFrame:
    """Holm's correction over the pairs marked `in_family` only (the comparisons a reader draws conclusions from):
    their `p_holm` is adjusted over that family, `significant` = p_holm < alpha. The other pairs (e.g. a model against
    the oracle, whose difference is known before any test) do not inflate the family: their `p_holm` is null and
    their `significant` is the unadjusted test's verdict. Column `family` names which is which."""
    if test not in TESTS:
        raise ValueError(f"test must be one of {TESTS}, got {test!r}")
    mask = np.asarray(in_family, dtype=bool)
    if mask.shape != (pairs.height,):
        raise ValueError(f"holm_family: {mask.shape[0]} family flags for {pairs.height} pairs")
    raw = pairs.get_column(f"p_{test}").cast(pl.Float64).fill_null(np.nan).to_numpy()
    adjusted = np.full(pairs.height, np.nan)
    adjusted[mask] = holm(raw[mask])
    with np.errstate(invalid="ignore"):
        verdict = np.where(mask, np.nan_to_num(adjusted, nan=1.0) < alpha, np.nan_to_num(raw, nan=1.0) < alpha)
    return pairs.with_columns(
        pl.Series("family", np.where(mask, family, outside), dtype=pl.Utf8),
        pl.Series("p_holm", adjusted, dtype=pl.Float64).fill_nan(None),
        pl.Series("significant", verdict, dtype=pl.Boolean))

