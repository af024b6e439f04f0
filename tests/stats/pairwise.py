"""One-row and one-pair forms of the package's statistics, for the tests: each is composed of the functions the score
tables use (`bootstrap_means`, `percentile_interval`, `paired_bootstrap_p`, `randomisation_table`), so that a test
written for one row or one pair checks those functions. They were the package's own until no caller was left there."""

from __future__ import annotations

import numpy as np

from emocaustics.stats.bootstrap import DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED, bootstrap_means, \
    percentile_interval
from emocaustics.stats.paired import paired_bootstrap_p, randomisation_table


def bootstrap_ci(values, *, level=DEFAULT_LEVEL, n_resamples=DEFAULT_RESAMPLES, seed=DEFAULT_SEED, clusters=None):
    """(mean, ci_low, ci_high) per row of `values` (no NaN); 0-d arrays for a 1-D input."""
    arr = np.asarray(values, dtype=np.float64)
    low, high = percentile_interval(bootstrap_means(arr, n_resamples=n_resamples, seed=seed, clusters=clusters), level)
    return arr.mean(axis=-1), low, high


def paired_bootstrap(a, b, *, n_resamples=DEFAULT_RESAMPLES, seed=DEFAULT_SEED, level=0.95, clusters=None):
    """Paired bootstrap of mean(a - b): {diff, ci_low, ci_high, p}."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"paired test needs the same items on both sides, got {x.shape} and {y.shape}")
    d = x - y
    boot = bootstrap_means(d, n_resamples=n_resamples, seed=seed, clusters=clusters)
    tail = (1 - level) / 2
    low, high = np.quantile(boot, [tail, 1 - tail])
    obs = float(d.mean())
    return {"diff": obs, "ci_low": float(low), "ci_high": float(high),
            "p": float(paired_bootstrap_p(boot[None, :], np.array([obs]))[0])}


def approximate_randomisation_p(diffs, *, n_permutations=DEFAULT_RESAMPLES, seed=DEFAULT_SEED, clusters=None):
    """`randomisation_table` of each row of paired differences against a row of zeros; 0-d for a 1-D input."""
    d = np.asarray(diffs, dtype=np.float64)
    one = d.ndim == 1
    d = np.atleast_2d(d)
    rows = np.vstack([d, np.zeros((1, d.shape[1]))])
    p = randomisation_table(rows, np.ones_like(rows, dtype=bool), [(i, d.shape[0]) for i in range(d.shape[0])],
                            n_permutations=n_permutations, seed=seed, clusters=clusters)
    return p[0] if one else p
