"""Weighted sums of many configurations and of their pairwise differences over common items, for one chunk of
weights (bootstrap counts or randomisation signs) at a time -- the shared engine of `bootstrap.bootstrap_table` and
`paired.randomisation_table`.

With x = a configuration's values (0 where it did not score the item), q = "not scored" and weights w, a pair's
weighted difference over the items both scored is
    sum w*(x_a - x_b)*(1-q_a)*(1-q_b) = S_a - S_b - sum_{q_b} w*x_a + sum_{q_a} w*x_b      (S = sum w*x)
and its weighted item count sum w*(1-q_a)*(1-q_b) = W - sum_{q_a} w - sum_{q_b} w + sum_{q_a and q_b} w. So a pair
costs one product for all configurations plus corrections on the few items either one misses ("sparse" pairs);
pairs of configurations that score the same items need no correction; pairs where many items are missing get a
product of their own ("dense").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

SPARSE_SHARE = 0.125  # a pair is corrected item by item while at most this share of items is missing from either


@dataclass
class PairPlan:
    x: np.ndarray  # configs x items, 0 where not scored
    missing: list[np.ndarray]  # per config: indices of the items it did not score
    pairs: list[tuple[int, int]]
    same: list[int] = field(default_factory=list)
    sparse: list[int] = field(default_factory=list)
    dense: list[int] = field(default_factory=list)
    both_missing: dict[int, np.ndarray] = field(default_factory=dict)
    dense_common: np.ndarray | None = None  # dense pairs x items (1.0 = both scored)
    dense_diff: np.ndarray | None = None  # dense pairs x items (x_a - x_b on common items, else 0)

    @property
    def n_items(self) -> int:
        return int(self.x.shape[1])

    def n_common(self) -> np.ndarray:
        return np.array([self.n_items - len(self.missing[a]) - len(self.missing[b])
                         + len(np.intersect1d(self.missing[a], self.missing[b])) for a, b in self.pairs])


def plan_pairs(values: np.ndarray, present: np.ndarray, pairs: list[tuple[int, int]],
               sparse_share: float = SPARSE_SHARE) -> PairPlan:
    val = np.atleast_2d(np.asarray(values, dtype=np.float64))
    pres = np.atleast_2d(np.asarray(present, dtype=bool))
    if val.shape != pres.shape:
        raise ValueError(f"values {val.shape} and present {pres.shape} differ in shape")
    plan = PairPlan(np.where(pres, val, 0.0), [np.flatnonzero(~row) for row in pres], list(pairs))
    n = plan.n_items
    for p, (a, b) in enumerate(plan.pairs):
        if np.array_equal(pres[a], pres[b]):
            plan.same.append(p)
        elif len(plan.missing[a]) + len(plan.missing[b]) <= sparse_share * n:
            plan.sparse.append(p)
            plan.both_missing[p] = np.intersect1d(plan.missing[a], plan.missing[b])
        else:
            plan.dense.append(p)
    common = np.zeros((len(plan.dense), n))
    diff = np.zeros((len(plan.dense), n))
    for q, p in enumerate(plan.dense):
        a, b = plan.pairs[p]
        both = pres[a] & pres[b]
        common[q] = both
        diff[q] = np.where(both, val[a] - val[b], 0.0)
    plan.dense_common, plan.dense_diff = common, diff
    return plan


def row_sums(plan: PairPlan, w: np.ndarray) -> np.ndarray:
    """(chunk x configs): sum of w * x per configuration."""
    return w @ plan.x.T


def row_weights(plan: PairPlan, w: np.ndarray) -> np.ndarray:
    """(chunk x configs): sum of w over the items each configuration scored."""
    total = w.sum(axis=1)
    return np.stack([total - w[:, m].sum(axis=1) for m in plan.missing], axis=1)


def pair_sums(plan: PairPlan, w: np.ndarray, sums: np.ndarray, *,
              weights: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """(chunk x pairs) sums of w * (x_a - x_b) over each pair's common items, and (if `weights`) the sums of w over
    those items. `sums` is `row_sums(plan, w)`."""
    b = w.shape[0]
    num = np.empty((b, len(plan.pairs)))
    den = np.empty((b, len(plan.pairs))) if weights else None
    total = w.sum(axis=1) if weights else None
    rw = row_weights(plan, w) if weights and plan.same else None
    for p in plan.same:
        i, j = plan.pairs[p]
        num[:, p] = sums[:, i] - sums[:, j]
        if den is not None:
            den[:, p] = rw[:, i]  # type: ignore[index]
    if plan.sparse:  # each configuration's missing columns gathered once per chunk, not once per pair
        gathered = [w[:, m] for m in plan.missing]
        gathered_sum = [g.sum(axis=1) for g in gathered] if weights else []
    for p in plan.sparse:
        i, j = plan.pairs[p]
        num[:, p] = (sums[:, i] - sums[:, j] - gathered[j] @ plan.x[i, plan.missing[j]]
                     + gathered[i] @ plan.x[j, plan.missing[i]])
        if den is not None:
            den[:, p] = total - gathered_sum[i] - gathered_sum[j] + w[:, plan.both_missing[p]].sum(axis=1)
    if plan.dense:
        num[:, plan.dense] = w @ plan.dense_diff.T  # type: ignore[union-attr]
        if den is not None:
            den[:, plan.dense] = w @ plan.dense_common.T  # type: ignore[union-attr]
    return num, den
