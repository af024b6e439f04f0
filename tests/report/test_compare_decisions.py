"""Issue 44: the decisions of cross-run `compare` (`report.compare`) pinned for mutation testing: how run folders are
named (`run_names`), which configs pair (`match`: by label, by `--pair`, never within a run or across tasks), which
samples pair (by id, and by content fingerprint where every config of the task recorded it), a failed sample counting
0, the means over the common samples only (`_common_mean`), the Holm family (calibration pairs outside it), and every
line `describe` prints. Run folders are hand-written scores.parquet and provenance.json files (no engine, no Ray),
built once for the module."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import polars as pl
import pytest

from emocaustics.core.errors import UsageError
from emocaustics.report.compare import (PAIR_COLUMNS, Comparison, _common_mean, compare_runs, describe, load_run,
                                        match, paired, run_names)
from emocaustics.report.tables import SCORE_COLUMNS

A, B = "x/job/20260101-000000", "y/job/20260101-000000"


def _rows(label: str, task: str, kind: str, scores: dict[str, float | None], cluster_by: str = "sample",
          failed: tuple[str, ...] = ()) -> list[dict]:
    return [{"run": label, "task": task, "method": label, "model": "m", "kind": kind, "sample_id": sid,
             "weight": 1.0, "score": None if sid in failed else s, "failed": sid in failed,
             "status": "failed" if sid in failed else "ok", "reason": "boom" if sid in failed else None,
             "llm_calls": 0, "cache_hits": 0, "prompt_tokens": 0, "generated_tokens": 0, "seconds": 0.0,
             "cluster": f"k{int(sid[1:]) // 2}" if cluster_by == "topic" else sid, "cluster_by": cluster_by}
            for sid, s in scores.items()]


def _write(run: Path, rows: list[dict], prints: dict[str, dict[str, str] | str]) -> Path:
    run.mkdir(parents=True)
    schema = {**SCORE_COLUMNS, "cluster": pl.Utf8, "cluster_by": pl.Utf8}
    pl.DataFrame(rows, schema=schema).write_parquet(run / "scores.parquet")
    for label, samples in prints.items():
        (run / "predictions" / label).mkdir(parents=True)
        text = samples if isinstance(samples, str) else json.dumps({"task": "t", "samples": samples})
        (run / "predictions" / label / "provenance.json").write_text(text, encoding="utf-8")
    return run


def _fp(ids, other: str = "") -> dict[str, str]:
    return {f"s{i}": f"f{i}{other if i == 4 else ''}" for i in ids}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path, Path]:
    """Runs x and y (the same `<job>/<timestamp>` tail): task t1 fingerprinted everywhere (y's s4 is other content;
    x's s5 failed, so it counts 0), a calibration config `oracle` in both, `lonely` only in x; task t2 without
    provenance (pairs by id; the runs disagree on the cluster unit); tasks t3 and t4 whose configs share no sample.
    Run z: t1's `m` with an unreadable provenance.json (so t1 pairs by id between x and z). Runs p and q: one config
    `c<task>` in each of 10 tasks (the pairs come in the order of the tasks)."""
    root = tmp_path_factory.mktemp("cmp")
    six = range(6)
    x = _write(root / "x" / "job" / "20260101-000000",
               _rows("m", "t1", "model", {"s0": 1.0, "s1": 1.0, "s2": 1.0, "s3": 0.0, "s4": 1.0, "s5": 1.0},
                     "topic", failed=("s5",))
               + _rows("oracle", "t1", "calibration", {f"s{i}": 1.0 for i in six}, "topic")
               + _rows("lonely", "t1", "model", {f"s{i}": 0.5 for i in six}, "topic")
               + _rows("m2", "t2", "model", {"s0": 1.0, "s1": 1.0, "s2": 1.0, "s3": 1.0}, "topic")
               + _rows("z", "t3", "model", {"s0": 1.0, "s1": 0.0})
               + _rows("w", "t4", "model", {"s0": 1.0}),
               {"m": _fp(six), "oracle": _fp(six), "lonely": _fp(six)})
    y = _write(root / "y" / "job" / "20260101-000000",
               _rows("m", "t1", "model", {"s0": 0.0, "s1": 0.0, "s2": 0.0, "s3": 0.0, "s4": 0.0, "s5": 0.0},
                     "topic")
               + _rows("oracle", "t1", "calibration", {f"s{i}": 1.0 for i in six}, "topic")
               + _rows("m2", "t2", "model", {"s0": 0.0, "s1": 0.0, "s2": 0.0, "s3": None}, "speaker")
               + _rows("z", "t3", "model", {"s8": 1.0, "s9": 0.0})
               + _rows("w", "t4", "model", {"s9": 1.0}),
               {"m": _fp(six, "'"), "oracle": _fp(six, "'")})
    z = _write(root / "z" / "job" / "20260101-000000",
               _rows("m", "t1", "model", {f"s{i}": 0.0 for i in six}, "topic"), {"m": "not json"})
    tasks = [f"t{i}" for i in (9, 1, 5, 3, 0, 7, 2, 8, 4, 6)]  # an order `unique` without maintain_order changes
    many = [_write(root / name / "job" / "20260101-000000",
                   [r for t in tasks for r in _rows(f"c{t}", t, "model", {"s0": 1.0, "s1": v, "s2": 0.0})], {})
            for name, v in (("p", 1.0), ("q", 0.0))]
    return x, y, z, *many


@pytest.fixture(scope="module")
def result(runs) -> Comparison:
    return compare_runs(list(runs[:2]))


# --- run_names ---------------------------------------------------------------------------------------------------

def _names(paths: list[Path]) -> list[str]:
    """`run_names` in a thread that must end within seconds: a naming loop that never grows its depth fails here
    rather than hanging the suite."""
    got: list = []
    worker = threading.Thread(target=lambda: got.append(run_names(paths)), daemon=True)
    worker.start()
    worker.join(5)
    assert got, f"run_names({paths}) did not return"
    return got[0]


def test_run_names_are_the_shortest_tails_of_at_least_two_parts_that_differ():
    assert _names([Path("/r/a/job/t1"), Path("/r/a/job/t2")]) == ["job/t1", "job/t2"]
    assert _names([Path("/r/x/job/t1"), Path("/r/y/job/t1")]) == ["x/job/t1", "y/job/t1"]
    assert _names([Path("/r/p/x/job/t"), Path("/r/q/x/job/t"), Path("/r/q/y/job/t")]) == [
        "p/x/job/t", "q/x/job/t", "q/y/job/t"]
    assert _names([Path("/job/t"), Path("/x/job/t")]) == ["//job/t", "x/job/t"]
    assert _names([Path("/r/a/b")]) == ["a/b"]


def test_a_run_folder_given_twice_is_a_usage_error_naming_it():
    with pytest.raises(UsageError) as err:
        run_names([Path("/r/b"), Path("/r/a"), Path("/r/x/../a")])
    assert str(err.value) == "compare: run folder /r/a is given twice; compare different runs"


# --- match -------------------------------------------------------------------------------------------------------

def _configs(*rows: tuple[str, str, str]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=["run", "config", "task"], orient="row")


CONFIGS = _configs(("r1", "a", "t"), ("r1", "b", "t"), ("r1", "only1", "t"), ("r1", "u", "t"),
                   ("r2", "a", "t"), ("r2", "b", "t"), ("r2", "u", "other"), ("r2", "c", "t"),
                   ("r3", "a", "t"), ("r3", "c", "t"))


def test_match_pairs_configs_of_one_label_in_each_two_runs_earlier_first():
    assert match(CONFIGS, ["r1", "r2", "r3"]) == [
        ("r1\ta", "r2\ta"), ("r1\tb", "r2\tb"), ("r1\ta", "r3\ta"), ("r2\ta", "r3\ta"), ("r2\tc", "r3\tc")]
    assert match(CONFIGS, ["r3", "r1"]) == [("r3\ta", "r1\ta")]
    assert match(CONFIGS, ["r1"]) == []


def test_match_with_pairs_tests_only_those_each_once_from_an_earlier_run_to_a_later():
    want = [("r1\ta", "r2\tc"), ("r1\tb", "r2\ta"), ("r1\ta", "r3\tc"), ("r1\tb", "r3\ta"), ("r2\ta", "r3\tc"),
            ("r2\tb", "r3\ta")]
    assert match(CONFIGS, ["r1", "r2", "r3"], {"a": "c", "b": "a"}) == want
    assert match(CONFIGS, ["r1", "r2", "r3"], [("a", "c"), ("b", "a"), ("a", "c")]) == want
    assert match(CONFIGS, ["r1", "r2"], {}) == []  # an empty mapping names no pair: nothing, not the namesakes
    assert match(CONFIGS, ["r1", "r2"], [("only1", "c"), ("c", "a")]) == [("r1\tonly1", "r2\tc")]


def test_match_refuses_unknown_labels_pairs_across_tasks_and_pairs_no_run_order_holds():
    with pytest.raises(UsageError) as err:
        match(CONFIGS, ["r1", "r2"], {"a": "nope"})
    assert str(err.value) == ("compare: pair a -> nope: no run has a config labelled nope "
                              "(labels: a, b, c, only1, u)")
    with pytest.raises(UsageError) as err:
        match(CONFIGS, ["r1", "r2"], [("gone", "a")])
    assert str(err.value) == ("compare: pair gone -> a: no run has a config labelled gone "
                              "(labels: a, b, c, only1, u)")
    many = _configs(*[("r1", f"l{i:02d}", "t") for i in range(13)])
    with pytest.raises(UsageError) as err:
        match(many, ["r1"], {"l00": "zz"})
    assert str(err.value) == ("compare: pair l00 -> zz: no run has a config labelled zz (labels: "
                              + ", ".join(f"l{i:02d}" for i in range(12)) + " ...)")
    twelve = _configs(*[("r1", f"l{i:02d}", "t") for i in range(12)])
    with pytest.raises(UsageError) as err:
        match(twelve, ["r1"], {"l00": "zz"})
    assert str(err.value).endswith("l11)")
    across = _configs(("r1", "a", "t"), ("r2", "b", "s"))
    with pytest.raises(UsageError) as err:
        match(across, ["r1", "r2"], {"a": "b"})
    assert str(err.value) == ("compare: pair a -> b: a config of task t with one of task s; only configs of one "
                              "task are compared")
    with pytest.raises(UsageError) as err:
        match(CONFIGS, ["r1", "r2"], [("c", "a"), ("only1", "only1")])
    assert str(err.value) == ("compare: no pair named holds a config of an earlier run and one of a later run "
                              "(c -> a, only1 -> only1; runs in the order given: r1, r2)")


# --- _common_mean ------------------------------------------------------------------------------------------------

def test_common_mean_is_each_sides_mean_over_the_items_both_sides_scored():
    per_item = pl.DataFrame({"config": ["a"] * 4 + ["b"] * 4 + ["c"],
                             "item": ["i1", "i2", "i3", "i4", "i1", "i2", "i3", "i5", "i9"],
                             "value": [1.0, 0.5, None, 0.25, 0.0, 0.25, 1.0, 1.0, 1.0]})
    pairs = [("a", "b"), ("b", "a"), ("a", "c")]
    assert _common_mean(per_item, pairs, 0).to_list() == [0.75, 0.125, None]
    assert _common_mean(per_item, pairs, 1).to_list() == [0.125, 0.75, None]
    assert _common_mean(per_item, pairs, 0).dtype == pl.Float64
    assert _common_mean(per_item, [("a", "c")], 1).dtype == pl.Float64  # no common item: an empty float, not Null


# --- load_run, paired --------------------------------------------------------------------------------------------

def test_load_run_gives_each_sample_its_fingerprint_and_a_failure_scores_0(runs):
    got = load_run(runs[0], "name")
    assert got.columns == ["run", "config", "task", "kind", "sample_id", "fingerprint", "gold", "score", "failed",
                           "cluster", "cluster_by"]
    m = got.filter(pl.col("config") == "m")
    assert (got["run"] == "name").all()
    assert m["fingerprint"].to_list() == [f"f{i}" for i in range(6)]
    assert m["score"].to_list() == [1.0, 1.0, 1.0, 0.0, 1.0, 0.0]  # s5 failed: 0, not left out
    assert m["cluster"].to_list() == ["k0", "k0", "k1", "k1", "k2", "k2"] and (m["cluster_by"] == "topic").all()
    assert got.filter(pl.col("config") == "m2")["fingerprint"].to_list() == [None] * 4
    unread = load_run(runs[2], "z")  # provenance.json not JSON: no fingerprints, not an error
    assert unread["fingerprint"].to_list() == [None] * 6 and unread["fingerprint"].dtype == pl.Utf8


def test_load_run_without_scores_or_with_an_old_table_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError) as err:
        load_run(tmp_path, "n")
    assert str(err.value) == (f"{tmp_path}: no scores.parquet (a finished run folder holds one); compare needs each "
                              "run's per-sample scores")
    pl.DataFrame({"run": ["a"], "dialogue": ["d"]}).write_parquet(tmp_path / "scores.parquet")
    with pytest.raises(UsageError) as err:
        load_run(tmp_path, "n")
    assert str(err.value).startswith(f"{tmp_path / 'scores.parquet'}: lacks column(s) ['task', ")


def test_paired_keys_items_by_content_only_where_every_config_of_the_task_recorded_it(runs):
    got = paired(list(runs[:2]))
    assert got.names == [A, B]
    rows = got.rows
    item = dict(zip(rows["key"] + "|" + rows["sample_id"], rows["item"]))
    assert item[f"{A}\tm|s4"] == "s4#f4" and item[f"{B}\tm|s4"] == "s4#f4'" and item[f"{B}\tm|s0"] == "s0#f0"
    assert item[f"{A}\tm2|s1"] == "s1" and item[f"{B}\tz|s8"] == "s8"
    assert got.configs.columns == ["run", "config", "task", "kind", "samples", "score", "failures"]  # the headline
    assert got.configs.rows() == [
        (A, "m", "t1", "model", 6, 4 / 6, 1), (A, "oracle", "t1", "calibration", 6, 1.0, 0),
        (A, "lonely", "t1", "model", 6, 0.5, 0), (A, "m2", "t2", "model", 4, 1.0, 0),
        (A, "z", "t3", "model", 2, 0.5, 0), (A, "w", "t4", "model", 1, 1.0, 0), (B, "m", "t1", "model", 6, 0.0, 0),
        (B, "oracle", "t1", "calibration", 6, 1.0, 0), (B, "m2", "t2", "model", 4, 0.0, 0),
        (B, "z", "t3", "model", 2, 0.5, 0), (B, "w", "t4", "model", 1, 1.0, 0)]
    assert got.matched == [(f"{A}\tm", f"{B}\tm"), (f"{A}\toracle", f"{B}\toracle"), (f"{A}\tm2", f"{B}\tm2"),
                           (f"{A}\tz", f"{B}\tz"), (f"{A}\tw", f"{B}\tw")]
    by_id = paired([runs[0], runs[2]], {"m": "m"})  # z's provenance unreadable: t1 pairs by id alone
    assert set(by_id.rows.filter(pl.col("task") == "t1")["item"]) == {f"s{i}" for i in range(6)}
    assert by_id.matched == [(f"x/job/20260101-000000\tm", f"z/job/20260101-000000\tm")]


# --- compare_runs ------------------------------------------------------------------------------------------------

def test_compare_runs_pairs_samples_of_the_same_content_and_holm_leaves_calibration_out(runs, result):
    pairs = result.pairs
    assert pairs.columns == list(PAIR_COLUMNS)
    assert result.unpaired == 2  # t3's z and t4's w: no sample in common
    assert result.configs.equals(paired(list(runs[:2])).configs)
    assert result.unmatched == (f"{A}: lonely",)
    got = {r["config_a"]: r for r in pairs.iter_rows(named=True)}
    assert list(got) == ["m", "oracle", "m2"]
    assert all(r["run_a"] == A and r["run_b"] == B and r["config_b"] == c for c, r in got.items())
    m = got["m"]  # s4 is other content in y: 5 common samples, 3 topics; s5 failed in x and counts 0
    assert (m["task"], m["n_common"], m["n_only_a"], m["n_only_b"]) == ("t1", 5, 1, 1)
    assert (m["clusters"], m["cluster_by"]) == (3, "topic")
    assert m["score_a"] == pytest.approx(0.6) and m["score_b"] == 0.0 and m["diff"] == pytest.approx(0.6)
    assert m["family"] == "configs"
    oracle = got["oracle"]
    assert oracle["family"] != "configs" and oracle["p_holm"] is None and oracle["diff"] == 0.0
    m2 = got["m2"]  # the runs disagree on t2's unit: each sample its own cluster; y's s3 is unscored
    assert (m2["task"], m2["cluster_by"], m2["clusters"], m2["n_common"]) == ("t2", "sample", 3, 3)
    assert m2["score_a"] == 1.0 and m2["score_b"] == 0.0
    fam = pairs.filter(pl.col("family") == "configs").sort("p_randomisation")
    p = fam["p_randomisation"].to_list()
    assert fam["p_holm"].to_list() == pytest.approx([min(1.0, 2 * p[0]), max(min(1.0, 2 * p[0]), p[1])])


def test_compare_runs_by_id_where_a_provenance_is_unreadable_and_nothing_tested_when_nothing_shared(runs):
    got = compare_runs([runs[0], runs[2]])
    assert got.pairs.select("config_a", "n_common", "n_only_a", "n_only_b").rows() == [("m", 6, 0, 0)]
    assert got.pairs["score_a"].to_list() == pytest.approx([4 / 6])
    assert got.unmatched == tuple(f"x/job/20260101-000000: {c}" for c in ("oracle", "lonely", "m2", "z", "w"))
    none = compare_runs(list(runs[:2]), {"z": "z"})
    assert none.pairs.height == 0 and none.pairs.columns == list(PAIR_COLUMNS) and none.unpaired == 1
    assert all(d == pl.Utf8 for d in none.pairs.dtypes)
    assert len(none.unmatched) == 9 and none.configs.height == 11
    ordered = compare_runs(list(runs[3:]))
    assert ordered.pairs["task"].to_list() == [f"t{i}" for i in (9, 1, 5, 3, 0, 7, 2, 8, 4, 6)]
    assert (ordered.pairs["n_common"] == 3).all() and ordered.pairs["diff"].to_list() == pytest.approx([1 / 3] * 10)


# --- describe ----------------------------------------------------------------------------------------------------

HEADER = ("| task | run_a | config_a | run_b | config_b | samples | clusters | score_a | score_b | diff | diff_ci | p "
          "| p_holm | verdict |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
METHOD = ("\nPaired approximate randomisation on the samples both configs scored, one sign flip per cluster "
          "(`clusters`: how many, and the unit; the interval resamples them too); Holm over the ")


def _pair(config: str, family: str, significant: bool, p: float, holm: float | None) -> dict:
    return {"task": "t", "run_a": "ra", "config_a": config, "run_b": "rb", "config_b": config + "2", "n_common": 10,
            "clusters": 5, "cluster_by": "topic", "n_only_a": 1, "n_only_b": 0, "score_a": 0.5, "score_b": 0.25,
            "diff": 0.25, "diff_low": 0.123449, "diff_high": 0.876549, "p_randomisation": p, "p_bootstrap": p,
            "p_wilcoxon": p, "family": family, "p_holm": holm, "significant": significant}


def _comparison(pairs: list[dict], unpaired: int = 0, unmatched: tuple[str, ...] = ()) -> Comparison:
    return Comparison(pl.DataFrame(), pl.DataFrame(pairs), unpaired, unmatched)


def test_describe_prints_each_pair_its_verdict_the_family_and_alpha():
    text = describe(_comparison([_pair("a", "configs", True, 0.01, 0.02), _pair("b", "configs", False, 0.2, 0.2),
                                 _pair("c", "calibration", True, 0.001, None),
                                 _pair("d", "calibration", False, 0.5, None)], 2, ("rb: solo", "ra: x")),
                    alpha=0.01)
    assert text == (
        HEADER
        + "| t | ra | a | rb | a2 | 10 | 5 (topic) | 0.5000 | 0.2500 | 0.2500 | [0.1234, 0.8765] | 0.0100 | 0.0200 "
          "| significant |\n"
        + "| t | ra | b | rb | b2 | 10 | 5 (topic) | 0.5000 | 0.2500 | 0.2500 | [0.1234, 0.8765] | 0.2000 | 0.2000 "
          "| NOT significant |\n"
        + "| t | ra | c | rb | c2 | 10 | 5 (topic) | 0.5000 | 0.2500 | 0.2500 | [0.1234, 0.8765] | 0.0010 |  "
          "| calibration: p < 0.05 unadjusted |\n"
        + "| t | ra | d | rb | d2 | 10 | 5 (topic) | 0.5000 | 0.2500 | 0.2500 | [0.1234, 0.8765] | 0.5000 |  "
          "| calibration: p >= 0.05 unadjusted |\n"
        + METHOD + "2 pairs of matched configs compared (all tasks): 1 significant at 0.01. 2 pairs with a calibration "
          "row (oracle, baseline) are outside the family: their p is unadjusted. 2 matched pairs share no sample: "
          "not compared.\n"
          "Not compared, no config of the same label in another run (pair them with --pair A B): rb: solo; ra: x.\n")


def test_describe_of_a_family_only_says_nothing_of_calibration_or_unshared_pairs():
    text = describe(_comparison([_pair("a", "configs", True, 0.01, 0.02), _pair("b", "configs", True, 0.02, 0.02)]))
    assert text.endswith(METHOD + "2 pairs of matched configs compared (all tasks): 2 significant at 0.05.\n")
    assert text.count("| significant |") == 2


def test_describe_says_why_nothing_was_compared():
    assert describe(_comparison([])) == (
        "No two configs of different runs are matched and share samples: nothing to compare.\n")
    assert describe(_comparison([], 3, ("ra: a",))) == (
        "No two configs of different runs are matched and share samples: nothing to compare (3 matched pairs share "
        "no sample).\nNot compared, no config of the same label in another run (pair them with --pair A B): "
        "ra: a.\n")


def test_describe_of_a_real_comparison(result):
    text = describe(result)
    assert text.count(f"| {A} |") == 3 and "| t2 | " in text and "3 (sample)" in text and "3 (topic)" in text
    assert (" 1 pairs with a calibration row (oracle, baseline) are outside the family: their p is unadjusted. "
            "2 matched pairs share no sample: not compared.\n") in text
    assert text.endswith(f"(pair them with --pair A B): {A}: lonely.\n")
