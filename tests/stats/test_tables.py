"""`config_stats`: the table every score table gets."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from emocaustics.stats import config_stats


def frame(values: dict[str, list[float | None]]) -> pl.DataFrame:
    rows = [{"config": c, "item": f"i{k}", "value": v} for c, vs in values.items() for k, v in enumerate(vs)]
    return pl.DataFrame(rows, schema={"config": pl.Utf8, "item": pl.Utf8, "value": pl.Float64})


def test_ci_and_pairs_tables():
    rng = np.random.default_rng(0)
    base = rng.normal(size=300)
    df = frame({"a": list(base), "b": list(base + 0.3 + rng.normal(scale=0.1, size=300)), "c": list(base)})
    ci, pairs = config_stats(df, n_resamples=3000, seed=0)
    assert ci.columns == ["config", "n", "n_missing", "mean", "ci_low", "ci_high", "clusters"]
    assert ci.get_column("config").to_list() == ["a", "b", "c"]  # input order
    sd = {c: float(np.std(v, ddof=1)) for c, v in df.group_by("config").agg("value").iter_rows()}
    for row in ci.iter_rows(named=True):
        assert row["n"] == 300 and row["ci_low"] < row["mean"] < row["ci_high"]
        # the width, not only the order: 95% of a mean of 300 is about 2 * 1.96 * sd / sqrt(300)
        assert row["ci_high"] - row["ci_low"] == pytest.approx(2 * 1.96 * sd[row["config"]] / np.sqrt(300), rel=0.15)
    got = {(r["config_a"], r["config_b"]): r for r in pairs.iter_rows(named=True)}
    # paired: the a-b difference varies only by the noise (sd 0.1), so its interval is about 2 * 1.96 * 0.1 /
    # sqrt(300) = 0.023 wide (unpaired draws would make it about 0.3); a-c differ by nothing: a zero-width interval
    ab_width = got[("a", "b")]["diff_high"] - got[("a", "b")]["diff_low"]
    assert ab_width == pytest.approx(2 * 1.96 * 0.1 / np.sqrt(300), rel=0.2)
    assert got[("a", "c")]["diff_low"] == pytest.approx(0.0, abs=1e-12)
    assert got[("a", "c")]["diff_high"] == pytest.approx(0.0, abs=1e-12)
    assert list(got) == [("a", "b"), ("a", "c"), ("b", "c")]
    ab, ac = got[("a", "b")], got[("a", "c")]
    assert ab["diff"] == pytest.approx(-0.3, abs=0.03) and ab["significant"] and ab["p_wilcoxon"] < 1e-6
    assert ab["p_randomisation"] == pytest.approx(1 / 3001)  # no flip reaches the observed difference
    assert ab["diff_high"] < 0
    # a and c are the same scores: no difference, p = 1, never significant
    assert ac["diff"] == 0 and ac["p_bootstrap"] == 1.0 and ac["p_wilcoxon"] == 1.0 and not ac["significant"]
    assert ac["p_randomisation"] == 1.0
    # Holm over 3 pairs: the smallest p is multiplied by 3
    smallest = min(r["p_randomisation"] for r in got.values())
    assert min(r["p_holm"] for r in got.values()) == pytest.approx(min(1.0, 3 * smallest))


def test_reproducible_and_seed_dependent():
    df = frame({"a": list(np.arange(50.0)), "b": list(np.arange(50.0)[::-1] * 0.9)})
    one = config_stats(df, n_resamples=1000, seed=3)
    two = config_stats(df, n_resamples=1000, seed=3)
    assert one.ci.equals(two.ci) and one.pairs.equals(two.pairs)
    other = config_stats(df, n_resamples=1000, seed=4)
    assert not one.ci.equals(other.ci)


def test_items_scored_in_one_config_only_are_excluded_with_a_count():
    # a scores i0..i4; b scores i0..i2 and has i3 unscored (null) and no row for i4
    df = frame({"a": [1.0, 2.0, 3.0, 4.0, 5.0], "b": [1.0, 1.0, 1.0, None]})
    ci, pairs = config_stats(df, n_resamples=500)
    rows = {r["config"]: r for r in ci.iter_rows(named=True)}
    assert (rows["a"]["n"], rows["a"]["n_missing"]) == (5, 0)
    assert (rows["b"]["n"], rows["b"]["n_missing"]) == (3, 1)
    assert rows["a"]["mean"] == 3.0 and rows["b"]["mean"] == 1.0
    pair = pairs.row(0, named=True)
    # common items i0..i2: differences 0, 1, 2 -> mean 1; i3 and i4 only in a
    assert (pair["n_common"], pair["n_only_a"], pair["n_only_b"]) == (3, 2, 0)
    assert pair["diff"] == pytest.approx(1.0)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="lacks column"):
        config_stats(pl.DataFrame({"config": ["a"], "value": [1.0]}))
    dup = pl.DataFrame({"config": ["a", "a"], "item": ["x", "x"], "value": [1.0, 2.0]})
    with pytest.raises(ValueError, match="repeated"):
        config_stats(dup)
    with pytest.raises(ValueError, match="test must be"):
        config_stats(frame({"a": [1.0]}), test="t")


def test_the_test_under_holm_is_chosen():
    rng = np.random.default_rng(5)
    base = rng.normal(size=100)
    df = frame({"a": list(base), "b": list(base + 0.5 + rng.normal(scale=0.3, size=100))})
    for test in ("randomisation", "bootstrap", "wilcoxon"):
        row = config_stats(df, n_resamples=500, test=test).pairs.row(0, named=True)
        assert row["p_holm"] == row[f"p_{test}"]  # one pair: Holm leaves p unchanged


def test_one_common_item_is_never_significant():
    # a difference seen on a single item: the bootstrap resamples cannot vary (p_bootstrap tiny), the sign-flip
    # test knows one item says nothing (every flip gives the same |mean|: p = 1), and it drives `significant`
    df = frame({"a": [1.0, 5.0], "b": [None, 3.0]})
    row = config_stats(df, n_resamples=500).pairs.row(0, named=True)
    assert row["n_common"] == 1 and row["p_bootstrap"] < 0.01
    assert row["p_randomisation"] == 1.0 and not row["significant"]


def test_a_config_without_scores():
    df = frame({"a": [1.0, 2.0], "b": [None, None]})
    ci, pairs = config_stats(df, n_resamples=100)
    b = ci.row(1, named=True)
    assert b["n"] == 0 and b["n_missing"] == 2 and b["mean"] is None or np.isnan(b["mean"])
    row = pairs.row(0, named=True)
    assert row["n_common"] == 0 and np.isnan(row["p_bootstrap"]) and np.isnan(row["p_randomisation"])
    assert not row["significant"]


def test_configs_scoring_different_items_share_one_pass_and_stay_paired():
    rng = np.random.default_rng(7)
    base = rng.normal(size=2000)
    a = list(base)
    b = list(base + 0.2)
    c = [None if k % 10 == 0 else v for k, v in enumerate(base)]  # c leaves every tenth item unscored
    ci, pairs = config_stats(frame({"a": a, "b": b, "c": c}), n_resamples=2000, seed=1)
    got = {(r["config_a"], r["config_b"]): r for r in pairs.iter_rows(named=True)}
    ac, bc = got[("a", "c")], got[("b", "c")]
    # a and c agree on every common item: diff 0, interval [0, 0] (to rounding), p = 1
    assert ac["n_common"] == 1800 and ac["n_only_a"] == 200 and ac["diff"] == 0.0
    assert ac["diff_low"] == pytest.approx(0, abs=1e-12) and ac["diff_high"] == pytest.approx(0, abs=1e-12)
    assert ac["p_bootstrap"] == 1.0 and ac["p_randomisation"] == 1.0
    # b is 0.2 above c on every common item: the pair sees the constant shift, not the items' spread
    assert bc["diff"] == pytest.approx(0.2) and bc["diff_low"] == pytest.approx(0.2)
    assert bc["diff_high"] == pytest.approx(0.2) and bc["significant"]
    assert bc["p_randomisation"] == pytest.approx(1 / 2001)
    c_row = ci.row(2, named=True)
    assert c_row["n"] == 1800 and c_row["n_missing"] == 200 and c_row["ci_low"] < c_row["mean"] < c_row["ci_high"]
    # its interval is about as wide as a plain bootstrap of its own 1800 items would be (2 * 1.96 * sd / sqrt(n))
    width = c_row["ci_high"] - c_row["ci_low"]
    assert width == pytest.approx(2 * 1.96 * np.std(base) / np.sqrt(1800), rel=0.15)


def test_config_stats_from_long_rows():
    rows = pl.DataFrame({"run": ["a", "a", "b", "b", "a"], "sample_id": ["1", "2", "1", "2", "1"],
                         "metric": ["f1", "f1", "f1", "f1", "other"], "value": [1.0, 0.0, None, 0.5, 9.0],
                         "status": ["ok", "failed", "unscored", "ok", "ok"]})
    df = rows.filter(pl.col("metric") == "f1").select(pl.col("run").alias("config"), pl.col("sample_id").alias("item"),
                                                      "value")
    assert df.columns == ["config", "item", "value"] and df.height == 4
    ci, pairs = config_stats(df, n_resamples=200)
    assert ci.row(1, named=True)["n_missing"] == 1  # b's unscored item 1
    # common item 2 only: a 0.0 - b 0.5 = -0.5; item 1 scored by a only
    row = pairs.row(0, named=True)
    assert pairs.height == 1 and row["diff"] == -0.5 and row["n_only_a"] + row["n_only_b"] == 1
    assert not row["significant"]  # one common item: the randomisation p is 1


def test_significant_reads_holms_p_not_the_raw_one():
    from emocaustics.stats.tables import holm_family

    a = [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    b = [x + d for x, d in zip(a, (0.1, 0.2, 0.3, 0.4, 0.5, 0.6))]  # every difference positive
    _, pairs = config_stats(frame({"a": a, "b": b, "c": list(a)}), n_resamples=200, test="wilcoxon")
    got = {(r["config_a"], r["config_b"]): r for r in pairs.iter_rows(named=True)}
    # exact Wilcoxon, 6 positive differences: p = 2 / 2^6 = 0.03125 < 0.05; Holm over 3 pairs: 3 * 0.03125
    assert got[("a", "b")]["p_wilcoxon"] == 0.03125 and got[("a", "b")]["p_holm"] == pytest.approx(0.09375)
    assert not any(r["significant"] for r in got.values())
    fam = holm_family(pairs, [True, True, True], test="wilcoxon")
    assert fam["p_holm"].to_list() == pytest.approx([0.09375, 1.0, 0.09375]) and not fam["significant"].any()
