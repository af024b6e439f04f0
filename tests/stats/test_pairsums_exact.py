"""The pair-sums engine on a worked example: which pairs are corrected item by item (sparse) or get their own
product (dense), the common-item counts, and the weighted sums, checked against sums written out directly
(issue 29, mutation testing)."""

from __future__ import annotations

import numpy as np
import pytest

from emocaustics.stats import pairsums as S


def example() -> tuple[np.ndarray, np.ndarray]:
    values = np.arange(4 * 16, dtype=np.float64).reshape(4, 16) % 7 - 3.0
    present = np.ones((4, 16), dtype=bool)
    present[1, [0]] = False  # config 1 misses 1 item
    present[2, [0, 5]] = False  # config 2 misses 2 items (item 0 also missed by config 1)
    present[3, [1, 2, 3]] = False  # config 3 misses 3 items
    return values, present


def test_plan_classifies_pairs_at_the_share_boundary():
    values, present = example()
    pairs = [(0, 1), (0, 2), (1, 2), (0, 3), (1, 1)]
    plan = S.plan_pairs(values, present, pairs)  # share 0.125 of 16 items: at most 2 missing from either
    assert plan.same == [4] and plan.sparse == [0, 1] and plan.dense == [2, 3]
    assert plan.both_missing[0].tolist() == [] and plan.both_missing[1].tolist() == []
    assert [m.tolist() for m in plan.missing] == [[], [0], [0, 5], [1, 2, 3]]
    assert plan.n_items == 16
    # common items: 16 - missing(a) - missing(b) + missing from both
    assert plan.n_common().tolist() == [15, 14, 14, 13, 15]
    # dense pairs carry their common-item mask and differences
    assert plan.dense_common.tolist()[0] == [0.0] + [1.0] * 4 + [0.0] + [1.0] * 10
    np.testing.assert_array_equal(plan.dense_diff[1], np.where(present[0] & present[3], values[0] - values[3], 0.0))
    wide = S.plan_pairs(values, present, [(1, 2)], sparse_share=3 / 16)  # 1 + 2 = 3 missing <= 3: sparse
    assert wide.sparse == [0] and wide.dense == [] and wide.both_missing[0].tolist() == [0]
    with pytest.raises(ValueError) as err:
        S.plan_pairs(values, present[:, :3], pairs)
    assert str(err.value) == "values (4, 16) and present (4, 3) differ in shape"


@pytest.mark.parametrize("share", [0.125, 3 / 16, 0.0])
def test_weighted_sums_match_direct_sums(share):
    values, present = example()
    pairs = [(0, 1), (0, 2), (1, 2), (0, 3), (2, 3), (1, 1)]
    plan = S.plan_pairs(values, present, pairs, sparse_share=share)
    w = np.random.default_rng(3).integers(0, 4, size=(5, 16)).astype(np.float64)
    sums = S.row_sums(plan, w)
    np.testing.assert_allclose(sums, (w[:, None, :] * np.where(present, values, 0.0)[None]).sum(axis=2), atol=1e-12)
    np.testing.assert_allclose(S.row_weights(plan, w), (w[:, None, :] * present[None]).sum(axis=2), atol=1e-12)
    num, den = S.pair_sums(plan, w, sums, weights=True)
    for p, (a, b) in enumerate(pairs):
        both = present[a] & present[b]
        np.testing.assert_allclose(num[:, p], w[:, both] @ (values[a, both] - values[b, both]), atol=1e-12)
        np.testing.assert_allclose(den[:, p], w[:, both].sum(axis=1), atol=1e-12)
    num2, den2 = S.pair_sums(plan, w, sums, weights=False)
    assert den2 is None
    np.testing.assert_allclose(num2, num, atol=1e-12)


def test_plan_reads_presence_flags_given_as_numbers():
    # 0/1 presence (as approximate_randomisation_p's ones would be without a dtype) is read as bool: config 0 misses
    # item 2 only (~1 on an int would be -2, "missing" everywhere). Common items of (0, 1): 3 - 1 - 0 + 0 = 2;
    # weights 1, 2, 4: config 0 scores 1 + 2 = 3 of them, config 1 all 7
    values = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    plan = S.plan_pairs(values, np.array([[1, 1, 0], [1, 1, 1]]), [(0, 1)])
    assert [m.tolist() for m in plan.missing] == [[2], []] and plan.n_common().tolist() == [2]
    assert plan.x.tolist() == [[1.0, 2.0, 0.0], [4.0, 5.0, 6.0]]
    assert S.row_weights(plan, np.array([[1.0, 2.0, 4.0]])).tolist() == [[3.0, 7.0]]
