"""Steps 1-6 by exact values where test_method_steps.py left mutants alive (issue 29): the reasons quality control
gives, the tables' types when nothing is rated, the HIT pass rate, ranking rules for the failing and all-worker
tables, and what `process` passes on. Rating sets from conftest.py (worker P passes, F and C fail)."""

from __future__ import annotations

import math
import warnings

import polars as pl
import pytest

from emocaustics.tasks.human import method as M
from emocaustics.tasks.human.data import parse_hits


def test_qc_test_gives_each_reason_exactly(monkeypatch):
    # one qc value below both system values, no ties: exact one-sided p = P(U <= 0) = 1 / C(3, 1) = 1/3; no reason
    p, reason = M.qc_test([0.0], [1.0, 2.0], 1.0)
    assert p == pytest.approx(1 / 3, abs=1e-12) and reason == ""
    assert M.qc_test([0.0], [1.0], 0.0) == (1.0, "constant ratings (sd = 0)")
    p, reason = M.qc_test([], [1.0], 1.0)
    assert math.isnan(p) and reason == "no qc rating: cannot be tested"
    p, reason = M.qc_test([0.0], [], 1.0)
    assert math.isnan(p) and reason == "no competing-system rating: cannot be tested"
    monkeypatch.setattr(M, "mannwhitney_p", lambda *a, **k: float("nan"))
    p, reason = M.qc_test([0.0], [1.0], 1.0)
    assert math.isnan(p) and reason == "test undefined (NaN)"


def test_worker_with_a_single_qc_conversation(kit):
    # F's assignment keeps only its qc conversation: one row for F, 2 qc z values (fun, clear), no system value
    data = kit.main_set()
    data["data"][2]["result"] = data["data"][2]["result"][2:]
    r = M.process(parse_hits(data))
    row = r.qc.filter(pl.col("worker") == "F").row(0, named=True)
    assert math.isnan(row["p_value"]) and (row["n_qc"], row["n_systems"]) == (2, 0) and not row["passed"]
    assert row["reason"] == "no competing-system rating: cannot be tested"
    rows = {w: (p, reason) for w, p, reason in r.qc.select("worker", "p_value", "reason").iter_rows()}
    assert rows["P"] == (pytest.approx(1 / 495, abs=1e-12), "")  # P as in test_method_steps: 1 / C(12, 4)


def test_single_rating_worker_moments(kit):
    # one score type, worker W rated one conversation: n = 1, mean = the value, sd undefined -> NaN (not null)
    meta = kit.metadata(score={"q": {"positive": True, "qc": True, "max": 10}})
    hits = parse_hits({"metadata": meta, "data": [
        {"result": [{"model": "alpha", "score": {"q": 4}}], "hit": "H1", "assignment": "A1", "worker": "W",
         "duration in seconds": 60}]})
    moments = M.worker_moments(M.conversation_table(hits), ("q",))
    assert moments.schema == pl.Schema({"worker": pl.Utf8, "n": pl.Int64, "mean": pl.Float64, "sd": pl.Float64})
    row = moments.row(0, named=True)
    assert (row["worker"], row["n"], row["mean"]) == ("W", 1, 4.0) and math.isnan(row["sd"])


def test_no_assignments(kit):
    hits = parse_hits({"metadata": kit.metadata(), "data": []}, file="empty.json")
    with pytest.raises(ValueError, match=r"^empty\.json: no assignments to process$"):
        M.process(hits)
    # the steps on their own: typed empty tables, NaN where a share or a mean has nothing to divide
    conv = M.conversation_table(hits)
    assert conv.height == 0 and conv.schema == pl.Schema({
        "record": pl.Int64, "hit": pl.Utf8, "assignment": pl.Utf8, "worker": pl.Utf8, "model": pl.Utf8,
        "raw:fun": pl.Float64, "raw:dull": pl.Float64, "raw:clear": pl.Float64})
    row = M.durations(hits, set()).row(0, named=True)
    assert all(math.isnan(row[g]) for g in ("passed", "failed", "all"))
    rates = M.pass_rates(conv, set())
    assert rates.select("", "passed", "total").rows() == [("HIT", 0, 0), ("Worker", 0, 0)]
    assert all(math.isnan(v) for v in rates.get_column("passrate").to_list())


def test_quality_control_of_no_conversations(ratings):
    conv = M.process(parse_hits(ratings)).conversations.clear()
    qc = M.quality_control(conv, parse_hits(ratings).metadata)
    assert qc.height == 0 and qc.schema == pl.Schema({"worker": pl.Utf8, "p_value": pl.Float64, "n_qc": pl.Int64,
                                                      "n_systems": pl.Int64, "passed": pl.Boolean,
                                                      "reason": pl.Utf8})


def test_hit_pass_rate_counts_failing_hits_apart(kit):
    # without C's assignment (H3): passing P did H1, H2; failing F did H1 only -> 2 / (2 + 1) = 2/3
    data = kit.main_set()
    del data["data"][3]
    rows = {row[""]: row for row in M.process(parse_hits(data)).passrate.iter_rows(named=True)}
    assert (rows["HIT"]["passed"], rows["HIT"]["total"]) == (2, 3)
    assert rows["HIT"]["passrate"] == pytest.approx(2 / 3, abs=1e-15)
    assert (rows["Worker"]["passed"], rows["Worker"]["total"], rows["Worker"]["passrate"]) == (1, 2, 0.5)


def test_only_passing_workers_nothing_empty_warns(kit):
    # P alone: the failing group is empty -> its duration and its table are NaN, without numpy warnings
    data = kit.main_set()
    data["data"] = data["data"][:2]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "Mean of empty slice" would be one
        r = M.process(parse_hits(data))
    row = r.duration.row(0, named=True)
    # (600 + 900) / 2 = 750 s over 3 conversations -> 750 / 3 / 60 = 4.1667 min, for passed and all
    assert (row["passed"], row["all"]) == (pytest.approx(750 / 3 / 60), pytest.approx(750 / 3 / 60))
    assert math.isnan(row["failed"])
    failed = r.scores["failed"][0]
    assert failed.get_column("N").to_list() == [0, 0] and all(math.isnan(v) for v in failed.get_column("z"))


def test_a_system_nobody_rated_is_nan_and_last(kit):
    # gamma is listed first in the metadata but never rated: N 0, NaN means, ranked after the rated systems
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "Mean of empty slice" would be one
        r = M.process(parse_hits(kit.main_set(model=["gamma", "alpha", "beta"])))
    z_table, raw_table = r.scores["passed"]
    assert z_table.get_column("model").to_list() == ["alpha", "beta", "gamma"]
    assert z_table.get_column("N").to_list() == [6, 6, 0] and math.isnan(z_table.row(2, named=True)["z"])
    assert raw_table.get_column("N").to_list() == [6, 6, 0] and math.isnan(raw_table.row(2, named=True)["raw"])


def test_ranking_by_z_is_not_the_metadata_order(kit):
    # listed beta first; P's z: alpha 0.9696 > beta 0.2983 -> alpha first in the passing table
    r = M.process(parse_hits(kit.main_set(model=["beta", "alpha"])))
    assert r.ranked_models == ["alpha", "beta"]
    assert r.scores["passed"][1].get_column("N").to_list() == [6, 6]  # raw table: 2 conversations x 3 types


def test_ranking_must_list_each_system_once(ratings):
    hits = parse_hits(ratings)
    with pytest.raises(ValueError, match=r"missing \[\], unknown \['gamma'\]"):
        M.process(hits, ranking=["alpha", "beta", "gamma"])
    with pytest.raises(ValueError, match=r"missing \[\], unknown \[\]"):
        M.process(hits, ranking=["alpha", "alpha", "beta"])


def test_failing_and_all_tables_follow_the_given_ranking(kit):
    # by their own z the failing workers (F, C) put beta first (-0.154 > -0.479) and all workers alpha first
    # (0.245 > 0.072); a ranking, given or in the metadata, orders every table instead
    own = M.process(parse_hits(kit.main_set()))
    assert own.scores["failed"][0].get_column("model").to_list() == ["beta", "alpha"]
    assert own.scores["all"][0].get_column("model").to_list() == ["alpha", "beta"]
    for r, order in ((M.process(parse_hits(kit.main_set()), ranking=["alpha", "beta"]), ["alpha", "beta"]),
                     (M.process(parse_hits(kit.main_set()), ranking=["beta", "alpha"]), ["beta", "alpha"]),
                     (M.process(parse_hits(kit.main_set(ranking=["alpha", "beta"]))), ["alpha", "beta"]),
                     (M.process(parse_hits(kit.main_set(ranking=["beta", "alpha"]))), ["beta", "alpha"]),
                     (M.process(parse_hits(kit.main_set(ranking=["beta", "alpha"])), ranking=["alpha", "beta"]),
                      ["alpha", "beta"])):
        for group, n in (("passed", 6), ("failed", 6), ("all", 12)):  # F + C: 2 conversations x 3; all 4 x 3
            z_table, raw_table = r.scores[group]
            assert z_table.get_column("model").to_list() == order, group
            assert raw_table.get_column("model").to_list() == order, group
            assert z_table.get_column("N").to_list() == [n, n], group
        # the failing table's values are the failing workers' own, whatever the order
        assert dict(r.scores["failed"][0].select("model", "z").iter_rows()) == pytest.approx(
            dict(own.scores["failed"][0].select("model", "z").iter_rows()), abs=1e-15)


def test_quality_control_threshold_is_passed_on(ratings):
    # P's p = 1/495 = 0.0020202: fails under 0.001, passes under 0.0021
    assert M.process(parse_hits(ratings), threshold=0.001).passed_workers == []
    assert M.process(parse_hits(ratings), threshold=0.0021).passed_workers == ["P"]


def test_group_rows_and_what_process_keeps(kit):
    data = kit.main_set()
    data["data"][2]["result"] = data["data"][2]["result"][:2]  # F without qc: one no_qc_rating defect
    hits = parse_hits(data)
    r = M.process(hits)
    assert r.metadata is hits.metadata
    assert r.moments.equals(M.worker_moments(M.conversation_table(hits), hits.metadata.score_names))
    assert r.moments.get_column("worker").to_list() == ["C", "F", "P"]
    assert [d.kind for d in r.defects] == ["no_qc_rating"] and r.defects == hits.defects
    # 3 + 3 + 2 + 3 = 11 conversations: P 6 (A1, A2), F 2 (A3 without qc), C 3 (A4)
    assert r.group_rows("all").height == 11
    assert sorted(r.group_rows("passed").get_column("worker").unique().to_list()) == ["P"]
    assert r.group_rows("passed").height == 6
    assert sorted(r.group_rows("failed").get_column("worker").unique().to_list()) == ["C", "F"]
    assert r.group_rows("failed").height == 5
