"""Paired tests of two score vectors on the same items, and Holm's correction across the pairs of a job.

- `paired_bootstrap_p`: two-sided bootstrap test of a mean difference. The bootstrap distribution of the mean
  difference is shifted to the null (centred on 0): p = (1 + #{|d* - d| >= |d|}) / (B + 1) (Efron & Tibshirani,
  ch. 16). Identical configurations (d = 0) get p = 1.
- `randomisation_table`: the sign-flip permutation test of the mean difference (under
  the null each item's two scores are exchangeable), p = (1 + #{|mean(s*d)| >= |mean(d)|}) / (R + 1), all pairs of
  a job from one stream of flips. Unlike the bootstrap test it cannot call a difference on one or two items
  significant (with n items no p falls below about 2 / 2^n), so it is the default test under Holm.
- Clusters (`clusters`, item -> cluster index, `bootstrap.cluster_index`): the paired bootstrap draws whole clusters
  (each cluster's items together) and the randomisation flips the sign of a whole cluster's differences at once
  (under the null the two configs are exchangeable cluster by cluster); every item its own cluster is the plain test.
- `wilcoxon_p`: Wilcoxon signed-rank through `scipy.stats.wilcoxon` (its defaults: zero differences dropped,
  exact for small samples); all-zero differences give p = 1 (no evidence of a difference), not an error.
- `holm`: Holm-Bonferroni step-down adjusted p-values; NaN stays NaN and is not counted in the family.
"""

from __future__ import annotations

import warnings

import numpy as np

from emocaustics.stats.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED, chunk_sizes, n_clusters
from emocaustics.stats.pairsums import SPARSE_SHARE, pair_sums, plan_pairs, row_sums
from emocaustics.stats.threads import blas_threads


def paired_bootstrap_p(diff_boot: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """p-values from bootstrap mean differences (pairs x B) and the observed mean differences (pairs)."""
    boot = np.atleast_2d(np.asarray(diff_boot, dtype=np.float64))
    obs = np.atleast_1d(np.asarray(observed, dtype=np.float64))
    # a tiny tolerance so that rounding in the resampled means cannot lose the d* == d cases (identical configs)
    tol = 1e-12 * np.maximum(1.0, np.abs(obs))
    valid = ~np.isnan(boot)  # a resample that drew none of the pair's common items says nothing
    extreme = (valid & (np.abs(boot - obs[:, None]) >= np.abs(obs)[:, None] - tol[:, None])).sum(axis=1)
    p = (1.0 + extreme) / (valid.sum(axis=1) + 1.0)
    return np.where(np.isnan(obs), np.nan, p)


def randomisation_table(values: np.ndarray, present: np.ndarray, pairs: list[tuple[int, int]], *,
                        n_permutations: int = DEFAULT_RESAMPLES,
                        seed: int | np.random.Generator | None = DEFAULT_SEED,
                        sparse_share: float = SPARSE_SHARE, clusters: np.ndarray | None = None) -> np.ndarray:
    """Approximate randomisation p-value of every pair (rows a, b of `values`, items both scored): under the null the
    two scores of an item are exchangeable, so each permutation flips the sign of each item's difference at random;
    p = (1 + #{|mean(s * d)| >= |mean(d)|}) / (R + 1). One stream of sign flips serves all pairs. A pair with one
    common item gets p = 1, a pair with none NaN. With `clusters`, one sign per cluster for all its items."""
    plan = plan_pairs(values, present, pairs, sparse_share)
    k, n = plan.x.shape
    pres = np.atleast_2d(np.asarray(present, dtype=bool))
    val = np.atleast_2d(np.asarray(values, dtype=np.float64))
    m = len(plan.pairs)
    n_common = plan.n_common()
    obs = np.full(m, np.nan)
    tol = np.zeros(m)
    for p, (a, b) in enumerate(plan.pairs):
        if n_common[p]:
            both = pres[a] & pres[b]
            d = val[a, both] - val[b, both]
            obs[p] = abs(d.mean())
            tol[p] = 1e-9 * max(float(np.abs(d).mean()), 1e-300)  # rounding of the corrected sums, not a real gap
    hits = np.zeros(m)
    rng = np.random.default_rng(seed)  # a Generator given is returned as it is
    groups = n_clusters(clusters, n)
    with np.errstate(invalid="ignore", divide="ignore"), blas_threads():
        for r in chunk_sizes(n, n_permutations if n else 0):  # no items: no flips
            signs = rng.integers(0, 2, size=(r, groups), dtype=np.int8).astype(np.float64) * 2.0 - 1.0
            if clusters is not None:
                signs = signs[:, clusters]
            num, _ = pair_sums(plan, signs, row_sums(plan, signs), weights=False)
            hits += (np.abs(num) / n_common >= obs - tol).sum(axis=0)
    p = (1.0 + hits) / (n_permutations + 1.0)
    return np.where(n_common > 0, p, np.nan)


def wilcoxon_p(d: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value of the paired differences `d` (a config's minus another's)."""
    from scipy import stats as sps  # ~0.7 s: a run of one config has no pair to test (start-up, issue 55)

    d = np.asarray(d, dtype=np.float64)
    if d.size == 0 or np.isnan(d).any():
        return float("nan")
    if not np.any(d != 0):
        return 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # scipy warns on tiny samples; the p-value stands
        return float(sps.wilcoxon(d).pvalue)


def holm(pvalues: np.ndarray) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values in the input order: sort ascending, p_(i) * (m - i + 1), running maximum,
    capped at 1. NaN entries stay NaN and are left out of m."""
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    m = int(ok.sum())
    if m == 0:
        return out
    vals = p[ok]
    order = np.argsort(vals, kind="stable")
    scaled = vals[order] * (m - np.arange(m))
    adjusted = np.minimum(1.0, np.maximum.accumulate(scaled))
    back = np.empty(m)
    back[order] = adjusted
    out[ok] = back
    return out
