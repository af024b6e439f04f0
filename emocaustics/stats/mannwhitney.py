"""One-sided Mann-Whitney U tests (scipy.stats.mannwhitneyu, method "auto", continuity correction on), and the
matrix of them over ordered pairs of groups: cell [i, j] tests "group i is greater than group j"."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats as sps

ALTERNATIVES = ("less", "greater", "two-sided")


def mannwhitney_p(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, alternative: str) -> float:
    """p-value of scipy's Mann-Whitney U test of x against y; NaN when either side is empty or holds NaN (scipy
    raises there): a test that cannot be done is not evidence."""
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {ALTERNATIVES}, got {alternative!r}")
    xa, ya = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if xa.size == 0 or ya.size == 0 or np.isnan(xa).any() or np.isnan(ya).any():
        return float("nan")
    return float(sps.mannwhitneyu(xa, ya, alternative=alternative, method="auto").pvalue)


def mannwhitney_matrix(groups: Sequence[Sequence[float] | np.ndarray], alternative: str = "greater") -> np.ndarray:
    """(k x k) p-values: [i, j] = mannwhitney_p(groups[i], groups[j], alternative) for i != j, 1.0 on the diagonal
    (a group is never significantly different from itself)."""
    k = len(groups)
    out = np.ones((k, k))
    for i in range(k):
        for j in range(k):
            if i != j:
                out[i, j] = mannwhitney_p(groups[i], groups[j], alternative)
    return out
