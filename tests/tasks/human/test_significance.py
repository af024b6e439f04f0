"""Step 7 on hand-made inputs: system significance, rater agreement, score correlations, self-replication."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from emocaustics.stats.matrix import significance_frame
from emocaustics.tasks.human import significance as S
from emocaustics.tasks.human.data import parse_hits
from emocaustics.tasks.human.method import process


def test_system_significance_is_one_sided_greater():
    rows = pl.DataFrame({"model": ["a"] * 3 + ["b"] * 3, "z": [3.0, 4.0, 5.0, 0.0, 1.0, 2.0]})
    p = S.system_significance(rows, ["a", "b"])
    # a's three values all above b's, no ties, n <= 8 -> exact: P(U >= 9) = 1 / C(6, 3) = 1/20 = 0.05
    assert p[0, 1] == pytest.approx(0.05, abs=1e-12)
    assert p[1, 0] == pytest.approx(1.0)  # b greater than a: no evidence
    assert p[0, 0] == p[1, 1] == 1.0
    table = significance_frame(p, ["a", "b"], corner="")  # sig_test.csv's layout
    assert table.columns == ["", "a", "b"] and table.get_column("").to_list() == ["a", "b"]
    assert table.row(0, named=True)["b"] == pytest.approx(0.05)


def test_rater_agreement_groups_by_system_set():
    rows = pl.DataFrame({
        "assignment": ["A1"] * 3 + ["A2"] * 3 + ["A3"] * 3 + ["A4"] * 2 + ["A5"] * 3,
        "model": ["b", "a", "qc"] + ["a", "b", "qc"] + ["qc", "a", "b"] + ["a", "b"] + ["a", "b", "qc"],
        # sorted by system (a, b, qc): A1 (2, 1, 0); A2 (4, 2, 0); A3 (0, 1, 2); A5 (1, 1, 1) constant
        "z": [1.0, 2.0, 0.0] + [4.0, 2.0, 0.0] + [2.0, 0.0, 1.0] + [1.0, 2.0] + [1.0, 1.0, 1.0],
    })
    agr = S.rater_agreement(rows)
    got = {(r["assignment_a"], r["assignment_b"]): r["correlation"] for r in agr.pairs.iter_rows(named=True)}
    # A1 (2,1,0) vs A2 (4,2,0): exactly proportional -> r = 1; vs A3 (0,1,2): reversed -> r = -1
    assert got[("A1", "A2")] == pytest.approx(1.0) and got[("A1", "A3")] == pytest.approx(-1.0)
    assert got[("A2", "A3")] == pytest.approx(-1.0)
    # A4 rated another set ({a, b}): alone in its group; A5 is constant: its 3 pairs are undefined, counted
    assert len(got) == 3 and agr.undefined == 3
    assert set(agr.pairs.get_column("systems").to_list()) == {"a,b,qc"}


def test_pairwise_pearson_matches_scipy_pair_by_pair():
    from emocaustics.stats.correlation import correlate

    rng = np.random.default_rng(3)
    rows = rng.normal(size=(40, 6)) * rng.uniform(0.01, 100, size=(40, 1)) + rng.normal(0, 50, size=(40, 1))
    rows[5] = 7.25  # a constant worker: undefined against everyone
    rows[9] = rows[8] * 3 + 1  # exactly proportional: r = 1 (clipped, never 1 + 1e-16)
    r = S.pairwise_pearson(rows)
    for i in range(40):
        for j in range(i + 1, 40):
            expected = correlate(rows[i], rows[j], "pearson")
            if math.isnan(expected):
                assert math.isnan(r[i, j]), (i, j)
            else:
                assert r[i, j] == pytest.approx(expected, abs=1e-12), (i, j)
    assert np.isnan(r[5]).all() and r[8, 9] == pytest.approx(1.0, abs=1e-12) and np.abs(r[~np.isnan(r)]).max() <= 1
    assert np.isnan(S.pairwise_pearson(np.ones((3, 1)))).all()  # one system: no correlation


def test_score_correlations_pearson_above_spearman_below():
    table = pl.DataFrame({"model": ["x", "y", "w"], "N": [1, 1, 1], "z": [1.0, 2.0, 3.0], "fun": [1.0, 2.0, 4.0]})
    corr = S.score_correlations(table)
    assert corr.columns == ["", "z", "fun"]
    # Pearson(z, fun): deviations (-1, 0, 1) and (-4/3, -1/3, 5/3): 3 / sqrt(2 * 42/9) = 0.9819805
    assert corr.row(0, named=True)["fun"] == pytest.approx(3 / math.sqrt(2 * 42 / 9), abs=1e-12)
    assert corr.row(1, named=True)["z"] == pytest.approx(1.0)  # Spearman: same order
    assert math.isnan(corr.row(0, named=True)["z"])


def test_self_replication_aligns_to_run1():
    run1 = pl.DataFrame({"model": ["a", "b", "c"], "N": [3, 3, 3], "z": [0.5, 0.2, -0.1], "fun": [1.0, 2.0, 3.0]})
    run2 = pl.DataFrame({"model": ["c", "a", "b"], "N": [2, 2, 2], "z": [-0.3, 0.4, 0.3], "fun": [3.0, 1.0, 2.5]})
    out = S.self_replication(run1, run2)
    rows = {r[""]: r for r in out.iter_rows(named=True)}
    # aligned run 2: z (0.4, 0.3, -0.3) against (0.5, 0.2, -0.1): same order -> Spearman 1, Kendall 1
    assert rows["spearman"]["z"] == pytest.approx(1.0) and rows["kendall"]["z"] == pytest.approx(1.0)
    assert rows["pearson"]["z"] == pytest.approx(float(np.corrcoef([0.5, 0.2, -0.1], [0.4, 0.3, -0.3])[0, 1]))
    assert out.columns == ["", "z", "fun"]
    with pytest.raises(ValueError, match="different systems"):
        S.self_replication(run1, run2.with_columns(pl.Series("model", ["c", "a", "d"])))


def test_step7_on_the_hand_made_set(ratings):
    r = process(parse_hits(ratings))
    p = S.system_significance(r.group_rows("passed"), r.ranked_models)
    # passing worker P: alpha's two conversation z above beta's two -> exact p = 1 / C(4, 2) = 1/6
    assert p[0, 1] == pytest.approx(1 / 6, abs=1e-12) and p[1, 0] == pytest.approx(1.0)


def test_shipped_significance_table_uses_only_workers_who_passed_qc(ratings):
    from emocaustics.tasks.human.outputs import statistics

    sig = statistics(process(parse_hits(ratings))).sig
    # worker P alone (F and C failed quality control): alpha's two conversation z above beta's -> 1 / C(4, 2);
    # with every worker the same cell would be about 0.386
    assert sig.columns == ["", "alpha", "beta"]
    assert sig.filter(pl.col("") == "alpha")["beta"].item() == pytest.approx(1 / 6, abs=1e-12)
