"""Step 7 by exact values where test_significance.py left mutants alive (issue 29): Pearson r of two-value vectors,
constant and near-constant rows, the clip at -1, warnings, the pair order of rater agreement, empty tables, and
self-replication's checks."""

from __future__ import annotations

import math
import warnings

import numpy as np
import polars as pl
import pytest

from emocaustics.tasks.human import significance as S


def test_pairwise_pearson_two_systems():
    # k = 2 is enough for r: (1, 2) against (4, 3) -> deviations (-0.5, 0.5), (0.5, -0.5) -> r = -1
    r = S.pairwise_pearson(np.array([[1.0, 2.0], [4.0, 3.0]]))
    np.testing.assert_allclose(r, [[1.0, -1.0], [-1.0, 1.0]], rtol=0, atol=1e-15)


def test_pairwise_pearson_constant_rows_are_undefined_even_when_the_mean_rounds():
    # (0.1, 0.1, 0.1): the float mean is 0.10000000000000002, so the centred row is not exactly 0 and the product
    # alone would give a number (r with itself 1); the row is constant, so r is undefined (NaN) against everyone
    rows = np.array([[0.1, 0.1, 0.1], [1.0, 2.0, 4.0]])
    assert rows[0].mean() != 0.1
    r = S.pairwise_pearson(rows)
    assert np.isnan(r[0]).all() and np.isnan(r[:, 0]).all() and r[1, 1] == pytest.approx(1.0, abs=1e-15)


def test_pairwise_pearson_is_clipped_at_minus_one_and_silent():
    # (0, 0, 1) against (0, 0, -2): exactly reversed; the unclipped product is -1.0000000000000002
    r = S.pairwise_pearson(np.array([[0.0, 0.0, 1.0], [0.0, 0.0, -2.0]]))
    assert r[0, 1] == r[1, 0] == -1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # an exactly constant row: 0 / 0 ('invalid'); a row whose spread underflows (norm 0, deviations not):
        # x / 0 ('divide'); both undefined, neither warns
        r = S.pairwise_pearson(np.array([[7.25, 7.25, 7.25], [0.0, 1e-200, 2e-200], [1.0, 2.0, 4.0]]))
    assert np.isnan(r[:2]).all() and np.isnan(r[:, :2]).all() and r[2, 2] == pytest.approx(1.0, abs=1e-15)


def test_rater_agreement_pairs_in_assignment_order():
    # eight assignments A1..A8 (given in reverse) over systems a, b, qc; z vector of A<i> = (i, 0, i*i % 5):
    # the pairs come in combinations order of the assignments sorted by id
    names = [f"A{i}" for i in range(8, 0, -1)]
    rows = pl.DataFrame({"assignment": [n for n in names for _ in range(3)],
                         "model": ["qc", "b", "a"] * 8,
                         "z": [v for i in range(8, 0, -1) for v in (float(i * i % 5), 0.0, float(i))]})
    agr = S.rater_agreement(rows)
    expected = [(f"A{i}", f"A{j}") for i in range(1, 9) for j in range(i + 1, 9)]
    assert agr.pairs.select("assignment_a", "assignment_b").rows() == expected and agr.undefined == 0
    got = {(a, b): r for a, b, r in agr.pairs.select("assignment_a", "assignment_b", "correlation").iter_rows()}
    # A1 (1, 0, 1) vs A2 (2, 0, 4): deviations (1/3, -2/3, 1/3), (0, -2, 2); products 0 + 4/3 + 2/3 = 2;
    # squared norms 6/9 and 8 -> r = 2 / sqrt(2/3 * 8) = 0.8660254
    assert got[("A1", "A2")] == pytest.approx(2 / math.sqrt(2 / 3 * 8), abs=1e-12)


def test_rater_agreement_with_no_pair_is_an_empty_typed_table():
    rows = pl.DataFrame({"assignment": ["A1", "A1", "A2", "A2"], "model": ["a", "b", "a", "c"],
                         "z": [1.0, 2.0, 3.0, 4.0]})
    agr = S.rater_agreement(rows)  # A1 rated {a, b}, A2 {a, c}: two groups of one, no pair
    assert agr.undefined == 0 and agr.pairs.height == 0
    assert agr.pairs.schema == pl.Schema({"assignment_a": pl.Utf8, "assignment_b": pl.Utf8, "systems": pl.Utf8,
                                          "correlation": pl.Float64})


def test_self_replication_names_the_missing_column():
    run1 = pl.DataFrame({"model": ["a", "b", "c"], "N": [3, 3, 3], "z": [0.5, 0.2, -0.1], "fun": [1.0, 2.0, 3.0]})
    run2 = run1.drop("fun")
    with pytest.raises(ValueError, match=r"^run 2's table lacks column\(s\) \['fun'\]$"):
        S.self_replication(run1, run2)


def test_self_replication_aligns_many_systems():
    # 40 systems; run 2 lists them in reverse with z = run 1's z (i / 10) plus 0.01 * (-1)^i: same order, so
    # Spearman and Kendall are exactly 1 only if each system meets its own row
    models = [f"s{i:02d}" for i in range(40)]
    run1 = pl.DataFrame({"model": models, "N": [1] * 40, "z": [i / 10 for i in range(40)]})
    run2 = pl.DataFrame({"model": models[::-1], "N": [1] * 40,
                         "z": [i / 10 + 0.01 * (-1) ** i for i in range(39, -1, -1)]})
    out = S.self_replication(run1, run2)
    rows = {r[""]: r["z"] for r in out.iter_rows(named=True)}
    assert rows["spearman"] == 1.0 and rows["kendall"] == pytest.approx(1.0, abs=1e-15)
    assert out.schema == pl.Schema({"": pl.Utf8, "z": pl.Float64})
