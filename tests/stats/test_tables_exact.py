"""`config_stats` and `holm_family` on small worked examples with exact expected numbers: every
interval, p and verdict is recomputed here from numpy's draws (the same draws for every config and pair: a pair's
interval is the quantiles of its differences' resampled means), from the sign flips of the documented stream, from
scipy's Wilcoxon and from Holm's rule written out by hand (issue 29, mutation testing)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy import stats as sps

from emocaustics.stats import config_stats, holm_family
from emocaustics.stats.tables import config_matrix

A = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0]
B = [2.0, 1.0, 1.0, 2.0, 3.0, 5.0, 1.0]
C = [3.0, 2.0, 4.0, 0.0, 5.0, 8.0, 2.0]
N, RES, SEED = 7, 60, 5


def frame(values: dict[str, list[float | None]]) -> pl.DataFrame:
    rows = [{"config": c, "item": f"i{k}", "value": v} for c, vs in values.items() for k, v in enumerate(vs)]
    return pl.DataFrame(rows, schema={"config": pl.Utf8, "item": pl.Utf8, "value": pl.Float64})


def boot_means(x: np.ndarray, draws: np.ndarray, scored: np.ndarray | None = None) -> np.ndarray:
    """Mean of the drawn items a row scores, per resample (NaN when it drew none)."""
    out = []
    for row in draws:
        picked = [v for v in row if scored is None or scored[v]]
        out.append(np.mean(x[picked]) if picked else np.nan)
    return np.array(out)


def flip_p(d: np.ndarray, signs: np.ndarray) -> float:
    stat = np.abs(signs @ d / d.size)
    return (1 + int((stat >= abs(d.mean()) - 1e-9 * np.abs(d).mean()).sum())) / (signs.shape[0] + 1)


def holm_by_hand(p: list[float]) -> list[float]:
    order = sorted(range(len(p)), key=lambda i: p[i])
    out, running = [0.0] * len(p), 0.0
    for rank, i in enumerate(order):
        running = max(running, p[i] * (len(p) - rank))
        out[i] = min(1.0, running)
    return out


def test_worked_example_every_number():
    vals = {"a": np.array(A), "b": np.array(B), "c": np.array(C)}
    ci, pairs = config_stats(frame({"a": A, "b": B, "c": C}), n_resamples=RES, seed=SEED, level=0.9)
    draws = np.random.default_rng(SEED).integers(0, N, size=(RES, N), dtype=np.int64)
    for row in ci.iter_rows(named=True):
        x = vals[row["config"]]
        bm = boot_means(x, draws)
        assert (row["n"], row["n_missing"]) == (7, 0)
        assert row["mean"] == pytest.approx(x.mean(), abs=1e-12)
        assert row["ci_low"] == pytest.approx(np.quantile(bm, 0.05), abs=1e-12)
        assert row["ci_high"] == pytest.approx(np.quantile(bm, 0.95), abs=1e-12)
    signs = (np.random.default_rng(np.random.SeedSequence(SEED).spawn(1)[0])
             .integers(0, 2, size=(RES, N), dtype=np.int8).astype(np.float64) * 2.0 - 1.0)
    got = {(r["config_a"], r["config_b"]): r for r in pairs.iter_rows(named=True)}
    assert list(got) == [("a", "b"), ("a", "c"), ("b", "c")]
    p_rand = []
    for (a, b), r in got.items():
        d = vals[a] - vals[b]
        bd = boot_means(d, draws)  # the same draws for both configs: paired
        assert (r["n_common"], r["n_only_a"], r["n_only_b"]) == (7, 0, 0)
        assert r["diff"] == pytest.approx(d.mean(), abs=1e-12)
        assert r["diff_low"] == pytest.approx(np.quantile(bd, 0.05), abs=1e-12)
        assert r["diff_high"] == pytest.approx(np.quantile(bd, 0.95), abs=1e-12)
        tol = 1e-12 * max(1.0, abs(d.mean()))
        extreme = int((np.abs(bd - d.mean()) >= abs(d.mean()) - tol).sum())
        assert r["p_bootstrap"] == pytest.approx((1 + extreme) / (RES + 1), abs=1e-15)
        assert r["p_randomisation"] == pytest.approx(flip_p(d, signs), abs=1e-15)
        assert r["p_wilcoxon"] == pytest.approx(float(sps.wilcoxon(d).pvalue), abs=1e-15)
        p_rand.append(r["p_randomisation"])
    # Holm over the three randomisation p-values, and significant = p_holm < 0.05
    for r, want in zip(got.values(), holm_by_hand(p_rand)):
        assert r["p_holm"] == pytest.approx(want, abs=1e-15)
        assert r["significant"] == (want < 0.05)


def test_pairs_over_common_items_use_the_shared_draws():
    # c misses item 0 and b misses item 6: the pair b-c averages the drawn items both scored
    c = [None] + C[1:]
    b = B[:6] + [None]
    ci, pairs = config_stats(frame({"a": A, "b": b, "c": c}), n_resamples=RES, seed=SEED)
    draws = np.random.default_rng(SEED).integers(0, N, size=(RES, N), dtype=np.int64)
    present = {"a": np.ones(N, bool), "b": np.arange(N) != 6, "c": np.arange(N) != 0}
    vals = {"a": np.array(A), "b": np.array(B), "c": np.array(C)}
    for row in ci.iter_rows(named=True):
        k = row["config"]
        bm = boot_means(vals[k], draws, present[k])
        assert row["n"] == present[k].sum() and row["n_missing"] == N - present[k].sum()
        assert row["ci_low"] == pytest.approx(np.nanquantile(bm, 0.025), abs=1e-12)
        assert row["ci_high"] == pytest.approx(np.nanquantile(bm, 0.975), abs=1e-12)
    for r in pairs.iter_rows(named=True):
        a, b_ = r["config_a"], r["config_b"]
        both = present[a] & present[b_]
        bd = boot_means(vals[a] - vals[b_], draws, both)
        assert r["n_common"] == both.sum()
        assert (r["n_only_a"], r["n_only_b"]) == ((present[a] & ~present[b_]).sum(), (present[b_] & ~present[a]).sum())
        assert r["diff"] == pytest.approx((vals[a] - vals[b_])[both].mean(), abs=1e-12)
        assert r["diff_low"] == pytest.approx(np.nanquantile(bd, 0.025), abs=1e-12)
        assert r["diff_high"] == pytest.approx(np.nanquantile(bd, 0.975), abs=1e-12)


def test_significant_is_holm_p_strictly_below_alpha():
    # one pair, six positive differences: exact Wilcoxon p = 2 / 2^6 = 0.03125 = Holm's p (a family of one)
    df = frame({"a": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "b": [0.0] * 6})
    at = config_stats(df, n_resamples=50, test="wilcoxon", alpha=0.03125).pairs.row(0, named=True)
    assert at["p_holm"] == 0.03125 and not at["significant"]  # p == alpha: not below it
    above = config_stats(df, n_resamples=50, test="wilcoxon", alpha=0.0313).pairs.row(0, named=True)
    assert above["significant"]
    default = config_stats(df, n_resamples=50, test="wilcoxon").pairs.row(0, named=True)
    assert default["significant"]  # default alpha 0.05
    # three configs: Holm triples the smallest raw p (0.09375 >= 0.05): not significant although the raw p is
    three = config_stats(frame({"a": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "b": [0.0] * 6, "c": [7.0] * 6}),
                         n_resamples=50, test="wilcoxon").pairs
    ab = three.row(0, named=True)
    assert ab["p_wilcoxon"] == 0.03125 and ab["p_holm"] == pytest.approx(0.09375) and not ab["significant"]


def test_only_named_pairs_and_errors():
    df = frame({"a": A, "b": B, "c": C})
    _, pairs = config_stats(df, n_resamples=30, only=[("c", "a")])
    assert pairs.select("config_a", "config_b").rows() == [("c", "a")]
    assert pairs.row(0, named=True)["diff"] == pytest.approx(np.mean(np.array(C) - np.array(A)), abs=1e-12)
    with pytest.raises(ValueError) as err:
        config_stats(df, only=[("a", "zz"), ("yy", "zz")])
    assert str(err.value) == "config_stats: `only` names config(s) without items: ['yy', 'zz']"
    with pytest.raises(ValueError) as err:
        config_stats(df, test="t")
    assert str(err.value) == "test must be one of ('randomisation', 'bootstrap', 'wilcoxon'), got 't'"


def test_config_matrix_errors_name_the_problem():
    with pytest.raises(ValueError) as err:
        config_matrix(pl.DataFrame({"config": ["a"], "value": [1.0]}))
    assert str(err.value) == "config_stats: per_item lacks column(s) ['item']; has ['config', 'value']"
    with pytest.raises(ValueError) as err:
        config_matrix(pl.DataFrame({"config": ["a", None], "item": ["x", "y"], "value": [1.0, 2.0]}))
    assert str(err.value) == "config_stats: 1 row(s) with a null config"
    with pytest.raises(ValueError) as err:
        config_matrix(pl.DataFrame({"config": ["a", "a"], "item": [None, None], "value": [1.0, 2.0]}))
    assert str(err.value) == "config_stats: 2 row(s) with a null item"
    dup = pl.DataFrame({"config": ["a", "a", "a", "b"], "item": ["x", "x", "x", "x"], "value": [1.0, 2.0, 3.0, 4.0]})
    with pytest.raises(ValueError) as err:
        config_matrix(dup)
    assert str(err.value) == "config_stats: 1 (config, item) pair(s) repeated, e.g. config 'a' item 'x' x3"
    configs, items, values, n_missing = config_matrix(frame({"b": [1.0, None], "a": [None, None, 4.0]}))
    assert (configs, items) == (["b", "a"], ["i0", "i1", "i2"])
    np.testing.assert_array_equal(values, [[1.0, np.nan, np.nan], [np.nan, np.nan, 4.0]])
    assert n_missing.tolist() == [1, 2]


def test_holm_family_exact():
    pairs = pl.DataFrame({"config_a": ["a", "a", "b", "a"], "config_b": ["b", "c", "c", "oracle"],
                          "p_randomisation": [0.01, 0.04, 0.03, 0.02], "p_wilcoxon": [0.5, None, 0.01, 0.05]})
    fam = holm_family(pairs, np.array([1, 1, 1, 0]))  # 0/1 flags are flags, not row numbers
    # family of three: 0.01 x3 = 0.03, 0.03 x2 = 0.06, 0.04 x1 -> running max 0.06; the oracle pair: null p_holm,
    # its raw 0.02 < 0.05 is its verdict
    assert fam["family"].to_list() == ["configs", "configs", "configs", "calibration"]
    assert fam["p_holm"].to_list()[:3] == pytest.approx([0.03, 0.06, 0.06]) and fam["p_holm"][3] is None
    assert fam["significant"].to_list() == [True, False, False, True]
    assert fam.columns == pairs.columns + ["family", "p_holm", "significant"]
    assert fam.schema["significant"] == pl.Boolean and fam.schema["family"] == pl.Utf8
    # Holm's p equal to alpha is not below it; a null raw p outside the family is no evidence; names are settable
    w = holm_family(pairs, [False, True, True, False], test="wilcoxon", alpha=0.02, family="f", outside="o")
    assert w["p_holm"].to_list() == [None, None, pytest.approx(0.01), None]  # the null p is left out of m
    assert w["family"].to_list() == ["o", "f", "f", "o"] and w["significant"].to_list() == [False, False, True, False]
    at = holm_family(pairs, [True, False, False, False], alpha=0.01)
    assert at["p_holm"][0] == pytest.approx(0.01) and not at["significant"][0]  # 0.01 is not below 0.01
    outside_at = holm_family(pairs, [False, False, False, False], alpha=0.02)
    assert outside_at["significant"].to_list() == [True, False, False, False]  # raw 0.02 is not below 0.02
    with pytest.raises(ValueError) as err:
        holm_family(pairs, [True, False])
    assert str(err.value) == "holm_family: 2 family flags for 4 pairs"
    with pytest.raises(ValueError) as err:
        holm_family(pairs, [True] * 4, test="t")
    assert str(err.value) == "test must be one of ('randomisation', 'bootstrap', 'wilcoxon'), got 't'"


def test_one_item_configs_and_an_empty_input():
    # one item: every resample draws it, so the interval is the value itself (a config with one scored item and
    # one missing item too); the mean is that value, not NaN and not halved
    one = pl.DataFrame({"config": ["a", "b", "b"], "item": ["i0", "i0", "i1"], "value": [2.0, None, 3.0]})
    ci, pairs = config_stats(one, n_resamples=10)
    assert ci.select("n", "n_missing", "mean", "ci_low", "ci_high").rows() == [(1, 0, 2.0, 2.0, 2.0),
                                                                           (1, 1, 3.0, 3.0, 3.0)]
    assert pairs.row(0, named=True)["n_common"] == 0 and not pairs.row(0, named=True)["significant"]
    single = config_stats(frame({"a": [2.0], "b": [5.0]}), n_resamples=10)
    assert single.ci.select("mean", "ci_low", "ci_high").rows() == [(2.0, 2.0, 2.0), (5.0, 5.0, 5.0)]
    r = single.pairs.row(0, named=True)
    assert (r["diff"], r["diff_low"], r["diff_high"], r["p_randomisation"]) == (-3.0, -3.0, -3.0, 1.0)
    empty = pl.DataFrame({"config": [], "item": [], "value": []},
                         schema={"config": pl.Utf8, "item": pl.Utf8, "value": pl.Float64})
    ci, pairs = config_stats(empty, n_resamples=10)
    assert ci.height == 0 and pairs.height == 0 and list(ci.schema.values())[3] == pl.Float64
    assert pairs.columns[-2:] == ["p_holm", "significant"]


def test_holm_family_a_null_p_outside_the_family_is_not_significant():
    pairs = pl.DataFrame({"config_a": ["a", "a"], "config_b": ["b", "oracle"], "p_randomisation": [0.01, None]},
                         schema={"config_a": pl.Utf8, "config_b": pl.Utf8, "p_randomisation": pl.Float64})
    fam = holm_family(pairs, [True, False])
    assert fam["significant"].to_list() == [True, False] and fam["p_holm"].to_list() == [0.01, None]


def test_empty_tables_keep_their_schema_and_one_config_has_no_pairs():
    from emocaustics.stats.tables import CI_SCHEMA, PAIRS_SCHEMA

    empty = pl.DataFrame({"config": [], "item": [], "value": []},
                         schema={"config": pl.Utf8, "item": pl.Utf8, "value": pl.Float64})
    ci, pairs = config_stats(empty, n_resamples=10)
    assert dict(ci.schema) == CI_SCHEMA and dict(pairs.schema) == PAIRS_SCHEMA
    ci, pairs = config_stats(frame({"a": [1.0, 3.0]}), n_resamples=10)
    # two items 1 and 3: resample means 1, 2 or 3; the 95 % interval of 10 of them lies in [1, 3]
    row = ci.row(0, named=True)
    assert (row["n"], row["mean"]) == (2, 2.0) and 1.0 <= row["ci_low"] <= row["ci_high"] <= 3.0
    assert pairs.height == 0 and dict(pairs.schema) == PAIRS_SCHEMA


def test_a_pair_without_common_items_does_not_stop_the_next_pairs():
    ci, pairs = config_stats(frame({"a": [1.0, None, 2.0], "b": [None, 2.0, None], "c": [3.0, 4.0, 6.0]}),
                             n_resamples=20)
    got = {(r["config_a"], r["config_b"]): r for r in pairs.iter_rows(named=True)}
    assert got[("a", "b")]["n_common"] == 0 and math.isnan(got[("a", "b")]["diff"])
    assert got[("a", "c")]["diff"] == pytest.approx(-3.0) and got[("b", "c")]["diff"] == pytest.approx(-2.0)
    assert got[("b", "c")]["diff_low"] == got[("b", "c")]["diff_high"] == pytest.approx(-2.0)
    assert got[("a", "c")]["p_wilcoxon"] == pytest.approx(float(sps.wilcoxon([-2.0, -4.0]).pvalue))


def test_two_repeated_pairs_are_counted_and_one_is_named():
    import re

    dup = pl.DataFrame({"config": ["a", "a", "b", "b", "b"], "item": ["x", "x", "y", "y", "y"],
                        "value": [1.0, 2.0, 3.0, 4.0, 5.0]})
    with pytest.raises(ValueError) as err:
        config_matrix(dup)
    assert re.fullmatch(r"config_stats: 2 \(config, item\) pair\(s\) repeated, e\.g\. config "
                        r"('a' item 'x' x2|'b' item 'y' x3)", str(err.value))
