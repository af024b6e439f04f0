"""Correlations through scipy.stats (pearsonr, spearmanr, kendalltau), and the split matrix that shows Pearson above
the diagonal and Spearman below it. Fewer than two points or a constant input give NaN (scipy warns there), never
an exception."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np
from scipy import stats as sps

METHODS = ("pearson", "spearman", "kendall")


def correlate(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, method: str = "pearson") -> float:
    """The correlation coefficient of x and y by `method` (pearson | spearman | kendall)."""
    xa, ya = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if xa.shape != ya.shape:
        raise ValueError(f"correlation needs two vectors of one length, got {xa.shape} and {ya.shape}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if xa.size < 2 or np.all(xa == xa[0]) or np.all(ya == ya[0]):
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method == "pearson":
            return float(sps.pearsonr(xa, ya).statistic)
        if method == "spearman":
            return float(sps.spearmanr(xa, ya).statistic)
        return float(sps.kendalltau(xa, ya).statistic)


def split_correlation_matrix(columns: Mapping[str, Sequence[float] | np.ndarray]) -> np.ndarray:
    """(k x k) over the named columns: [i, j] = Pearson for i < j, Spearman for i > j, NaN on the diagonal."""
    names = list(columns)
    k = len(names)
    out = np.full((k, k), np.nan)
    for i in range(k):
        for j in range(k):
            if i != j:
                out[i, j] = correlate(columns[names[i]], columns[names[j]], "pearson" if i < j else "spearman")
    return out
