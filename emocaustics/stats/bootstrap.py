"""Bootstrap over items: confidence intervals of means, many rows (configurations, pairs) at once.

Owns the resampling. One resample of the items is a vector of counts (how often each item was drawn); the means of
every row under that resample are one matrix product `values @ counts.T / n`, so 20 configurations share each
resample and the paired difference of two rows under a resample is the difference of their resampled means (the paired
bootstrap for free). Rows that score only some items (`bootstrap_masked_means`) take the same draws and average the
drawn items they score (a ratio of two products). Counts are drawn in chunks so memory stays bounded (about
`CHUNK_CELLS` cells at a time). Seeded with `numpy.random.default_rng(seed)`: the same seed, items and rows give the
same intervals, bit for bit.

Clusters (`clusters`: each item's cluster index, from `cluster_index`): a resample draws the clusters with replacement
and keeps each cluster's items together (every item of a cluster drawn c times counts c times), so an interval
respects samples that are not independent (AER questions of one topic). The resampled mean is then a weighted mean
of cluster totals, sum_g c_g T_g / sum_g c_g n_g (T_g: the cluster's sum of scores, n_g: its items), because the
items drawn vary in number; the point estimate is still the mean over items. Every item its own cluster is the
unclustered bootstrap, draw for draw (`cluster_index` gives None for it).

Why not `scipy.stats.bootstrap`: it gathers `rows x resamples x items` values for a paired multi-sample statistic
(2e9 for 20 configurations x 10,000 resamples x 10,000 items); the counts product does the same work in one BLAS call
per chunk.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence

import numpy as np

from emocaustics.stats.pairsums import SPARSE_SHARE, pair_sums, plan_pairs, row_sums, row_weights
from emocaustics.stats.threads import blas_threads

DEFAULT_RESAMPLES = 10_000  # enough for Holm over 190 pairs: the smallest p is 1/10,001, x190 still < 0.05
DEFAULT_SEED = 0
DEFAULT_LEVEL = 0.95
CHUNK_CELLS = 4_000_000  # resamples x items drawn per chunk (~32 MB of float64 counts)


def cluster_index(labels: Sequence[object] | None) -> np.ndarray | None:
    """Each item's cluster as an index 0..G-1 (clusters numbered in the order first seen), or None when there are
    no labels or every item is a cluster of its own (the plain bootstrap)."""
    if labels is None:
        return None
    _, first, index = np.unique(np.asarray(labels, dtype=object).astype(str), return_index=True,
                                return_inverse=True)
    if len(first) == len(index):
        return None
    order = np.argsort(np.argsort(first, kind="stable"), kind="stable")  # number clusters by first appearance
    return order[index.ravel()].astype(np.int64)


def n_clusters(clusters: np.ndarray | None, n_items: int) -> int:
    return n_items if clusters is None else int(clusters.max()) + 1 if len(clusters) else 0


def resample_counts(n_items: int, n_resamples: int, rng: np.random.Generator,
                    clusters: np.ndarray | None = None) -> Iterator[np.ndarray]:
    """Yield chunks of shape (b, n_items): row r counts how often each item was drawn in resample r (n draws with
    replacement, so every row sums to n_items). With `clusters` (item -> cluster index) the G clusters are drawn G
    times with replacement and each item counts as often as its cluster was drawn (rows sum to varying totals)."""
    if n_items <= 0:
        raise ValueError("cannot resample zero items")
    groups = n_clusters(clusters, n_items)
    for b in chunk_sizes(n_items, n_resamples):
        draws = rng.integers(0, groups, size=(b, groups), dtype=np.int64)
        draws += np.arange(b, dtype=np.int64)[:, None] * groups  # row offset: one bincount for the whole chunk
        counts = np.bincount(draws.ravel(), minlength=b * groups).reshape(b, groups).astype(np.float64)
        yield counts if clusters is None else counts[:, clusters]


def chunk_sizes(n_items: int, total: int) -> Iterator[int]:
    """How many of `total` resamples (or sign flips) of `n_items` items each chunk draws: about `CHUNK_CELLS` cells."""
    per_chunk = max(1, CHUNK_CELLS // max(n_items, 1))
    for done in range(0, total, per_chunk):
        yield min(per_chunk, total - done)


def bootstrap_means(values: np.ndarray, *, n_resamples: int = DEFAULT_RESAMPLES,
                    seed: int | np.random.Generator | None = DEFAULT_SEED,
                    clusters: np.ndarray | None = None) -> np.ndarray:
    """Means of each row of `values` (rows x items, no NaN) under `n_resamples` resamples of the items (of their
    clusters, when given), the same resamples for every row. Returns (rows, n_resamples). A 1-D input is one row
    (returns 1-D)."""
    arr = np.asarray(values, dtype=np.float64)
    one = arr.ndim == 1
    arr = np.atleast_2d(arr)
    if np.isnan(arr).any():
        raise ValueError("bootstrap_means: values contain NaN (use bootstrap_masked_means for missing items)")
    out = _resampled(arr, None if clusters is None else np.ones_like(arr), n_resamples, seed, clusters)
    return out[0] if one else out


def bootstrap_masked_means(values: np.ndarray, present: np.ndarray, *, n_resamples: int = DEFAULT_RESAMPLES,
                           seed: int | np.random.Generator | None = DEFAULT_SEED,
                           clusters: np.ndarray | None = None) -> np.ndarray:
    """Like `bootstrap_means` for rows that score only some items (`present`, rows x items, bool): every row is
    resampled with the same draws from the whole item pool and its mean is taken over the drawn items it scores
    (sum(count * value) / sum(count) over its items). A resample that draws none of a row's items gives NaN there.
    For a row that scores every item this is exactly `bootstrap_means`."""
    arr = np.atleast_2d(np.asarray(values, dtype=np.float64))
    mask = np.atleast_2d(np.asarray(present, dtype=bool))
    if arr.shape != mask.shape:
        raise ValueError(f"values {arr.shape} and present {mask.shape} differ in shape")
    return _resampled(np.where(mask, arr, 0.0), mask.astype(np.float64), n_resamples, seed, clusters)


def _resampled(num: np.ndarray, den: np.ndarray | None, n_resamples: int,
               seed: int | np.random.Generator | None, clusters: np.ndarray | None = None) -> np.ndarray:
    n = num.shape[1]
    out = np.empty((num.shape[0], n_resamples))
    at = 0
    with blas_threads():
        for counts in resample_counts(n, n_resamples, np.random.default_rng(seed), clusters):
            b = counts.shape[0]
            if den is None:
                out[:, at:at + b] = num @ counts.T / n
            else:
                with np.errstate(invalid="ignore", divide="ignore"):
                    out[:, at:at + b] = (num @ counts.T) / (den @ counts.T)
            at += b
    return out


def bootstrap_table(values: np.ndarray, present: np.ndarray, pairs: list[tuple[int, int]], *,
                    n_resamples: int = DEFAULT_RESAMPLES, seed: int | np.random.Generator | None = DEFAULT_SEED,
                    sparse_share: float = SPARSE_SHARE, clusters: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Resampled means of every row (config) and resampled mean differences of every pair over its common items,
    all from one stream of draws (of clusters, when given): (rows x B, pairs x B). Equal to `bootstrap_masked_means` on the rows and on each
    pair's difference row, at the cost of one product for all rows plus per-pair corrections (`pairsums`)."""
    plan = plan_pairs(values, present, pairs, sparse_share)
    k, n = plan.x.shape
    rows_out = np.empty((k, n_resamples))
    pairs_out = np.empty((len(plan.pairs), n_resamples))
    at = 0
    # a resample without any of a row's (a pair's common) items: NaN there, not the +-inf of a sum missing 0 by rounding
    with np.errstate(invalid="ignore", divide="ignore"), blas_threads():
        for counts in resample_counts(n, n_resamples, np.random.default_rng(seed), clusters):
            b = counts.shape[0]
            sums = row_sums(plan, counts)
            rows_out[:, at:at + b] = (sums / row_weights(plan, counts)).T
            num, den = pair_sums(plan, counts, sums, weights=True)
            pairs_out[:, at:at + b] = np.where(den > 0, num / den, np.nan).T  # type: ignore[operator]
            at += b
    return rows_out, pairs_out


def percentile_interval(boot: np.ndarray, level: float = DEFAULT_LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """The (1 - level)/2 and (1 + level)/2 quantiles of each row of bootstrap statistics (percentile interval)."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    tail = (1 - level) / 2
    boot = np.asarray(boot, dtype=np.float64)
    if np.isnan(boot).any():  # resamples that drew none of a row's items carry no value for that row
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a row with no value at all: NaN bounds, said once
            low, high = np.nanquantile(boot, [tail, 1 - tail], axis=-1)
    else:
        low, high = np.quantile(boot, [tail, 1 - tail], axis=-1)
    return low, high
