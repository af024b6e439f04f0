"""Steps 1-6 pinned on hand-made rating sets (arithmetic in the comments)."""

from __future__ import annotations

import math
import statistics

import polars as pl
import pytest

from emocaustics.tasks.human import method as M
from emocaustics.tasks.human.data import ScoreSpec, parse_hits


def test_reversal_of_negative_score_types(ratings):
    # dull is negative with max 100: 30 -> 100 - 30 = 70; positive types are unchanged
    assert M.reverse_value(30, ScoreSpec("dull", False, False, 100)) == 70
    assert M.reverse_value(30, ScoreSpec("fun", True, True, 100)) == 30
    assert M.reverse_value(2, ScoreSpec("x", False, False, 5)) == 3  # max 5: 5 - 2
    conv = M.conversation_table(parse_hits(ratings))
    first = conv.row(0, named=True)  # A1 alpha: fun 80, dull 30, clear 90
    assert (first["raw:fun"], first["raw:dull"], first["raw:clear"]) == (80, 70, 90)
    assert conv.height == 12 and conv.get_column("model").to_list()[:3] == ["alpha", "beta", "qc"]


def test_worker_sd_is_sample_sd_over_all_assignments_and_systems(kit):
    # one score type q (0..10). Worker W rates alpha 4, beta 2, qc 0 in two assignments: values 4,2,0,4,2,0.
    # mean = 12/6 = 2; squared deviations 4,0,4,4,0,4 -> 16; ddof=1: 16/5 = 3.2, sd = sqrt(3.2) = 1.7888544
    # (ddof=0 would be sqrt(16/6) = 1.6329932). z(4) = (4 - 2) / (sqrt(3.2) + 1e-6).
    meta = {"score": {"q": {"positive": True, "qc": True, "max": 10}}, "model": ["alpha", "beta"],
            "qc-model": "qc"}
    one = [{"model": "alpha", "score": {"q": 4}}, {"model": "beta", "score": {"q": 2}},
           {"model": "qc", "score": {"q": 0}}]
    hits = parse_hits({"metadata": meta, "data": [
        {"result": one, "hit": "H1", "assignment": "A1", "worker": "W", "duration in seconds": 1},
        {"result": one, "hit": "H2", "assignment": "A2", "worker": "W", "duration in seconds": 1}]})
    conv = M.conversation_table(hits)
    moments = M.worker_moments(conv, ("q",))
    row = moments.row(0, named=True)
    assert row["n"] == 6 and row["mean"] == pytest.approx(2.0, abs=1e-12)
    assert row["sd"] == pytest.approx(math.sqrt(3.2), abs=1e-12)
    assert abs(row["sd"] - math.sqrt(16 / 6)) > 0.1
    z = M.standardise(conv, moments, ("q",))
    assert z.get_column("z:q").to_list()[:3] == pytest.approx(
        [2 / (math.sqrt(3.2) + 1e-6), 0.0, -2 / (math.sqrt(3.2) + 1e-6)], abs=1e-12)


def test_conversation_z_and_raw_are_means_over_score_types(ratings):
    r = M.process(parse_hits(ratings))
    conv = r.conversations
    # worker P's 18 reversed values: A1 80,70,90 60,50,70 10,10,20; A2 85,75,95 65,55,75 15,15,25
    vals = [80, 70, 90, 60, 50, 70, 10, 10, 20, 85, 75, 95, 65, 55, 75, 15, 15, 25]
    m, sd = statistics.mean(vals), statistics.stdev(vals)  # 965/18 = 53.6111...
    first = conv.row(0, named=True)
    assert first["mean"] == pytest.approx(965 / 18, abs=1e-12) and first["sd"] == pytest.approx(sd, abs=1e-9)
    zs = [(v - m) / (sd + 1e-6) for v in (80, 70, 90)]
    assert first["z"] == pytest.approx(sum(zs) / 3, abs=1e-12)
    assert first["raw"] == pytest.approx(80.0, abs=1e-12)  # (80 + 70 + 90) / 3


def test_quality_control_pass_fail_and_constant_worker(ratings):
    r = M.process(parse_hits(ratings))
    qc = {row["worker"]: row for row in r.qc.iter_rows(named=True)}
    # P: 4 qc values (fun, clear of 2 qc conversations) all below the 8 system values, no ties -> scipy's exact
    # method; p = 1 / C(12, 4) = 1/495 = 0.0020202 < 0.05
    assert qc["P"]["p_value"] == pytest.approx(1 / 495, abs=1e-12) and qc["P"]["passed"]
    assert (qc["P"]["n_qc"], qc["P"]["n_systems"]) == (4, 8)
    # F: qc above every system value -> p = 1 (the tail holds all C(6, 2) = 15 orderings)
    assert qc["F"]["p_value"] == pytest.approx(1.0) and not qc["F"]["passed"]
    # C: every rating 50 -> sd 0, z = 0 everywhere, p set to 1, fails
    assert qc["C"]["p_value"] == 1.0 and not qc["C"]["passed"] and "constant" in qc["C"]["reason"]
    constant = r.conversations.filter(pl.col("worker") == "C")
    assert constant.get_column("z").to_list() == [0.0, 0.0, 0.0]
    assert r.passed_workers == ["P"] and r.failed_workers == ["C", "F"]
    assert r.passed_assignments == ["A1", "A2"] and r.failed_assignments == ["A3", "A4"]


def test_nan_p_value_fails(kit, monkeypatch):
    # a worker with no qc rating at all: the test cannot be done -> p NaN -> fails (and a defect says so)
    data = kit.main_set()
    data["data"][2]["result"] = data["data"][2]["result"][:2]  # F's assignment without its qc conversation
    hits = parse_hits(data)
    r = M.process(hits)
    row = r.qc.filter(pl.col("worker") == "F").row(0, named=True)
    assert math.isnan(row["p_value"]) and not row["passed"] and "cannot be tested" in row["reason"]
    assert [d.kind for d in hits.defects] == ["no_qc_rating"] and "cannot be tested" in hits.defects[0].message
    # a NaN coming out of the test itself also fails
    monkeypatch.setattr(M, "mannwhitney_p", lambda *a, **k: float("nan"))
    r = M.process(parse_hits(kit.main_set()))
    assert r.passed_workers == []


def test_pass_rates_count_a_hit_done_by_both_in_both(ratings):
    r = M.process(parse_hits(ratings))
    rows = {row[""]: row for row in r.passrate.iter_rows(named=True)}
    # passing worker P did H1, H2; failing workers did H1 (F) and H3 (C): 2 / (2 + 2) = 0.5 -- H1 counts twice
    assert (rows["HIT"]["passed"], rows["HIT"]["total"], rows["HIT"]["passrate"]) == (2, 4, 0.5)
    # workers: 1 of 3
    assert (rows["Worker"]["passed"], rows["Worker"]["total"]) == (1, 3)
    assert rows["Worker"]["passrate"] == pytest.approx(1 / 3)
    assert r.passed_hits == ["H1", "H2"] and r.failed_hits == ["H1", "H3"]


def test_system_scores_from_passing_workers(ratings):
    r = M.process(parse_hits(ratings))
    z_table, raw_table = r.scores["passed"]
    assert z_table.columns == ["model", "N", "z", "fun", "dull", "clear"]  # sorted_scores null -> file order
    assert raw_table.columns == ["model", "N", "raw", "fun", "dull", "clear"]
    vals = [80, 70, 90, 60, 50, 70, 10, 10, 20, 85, 75, 95, 65, 55, 75, 15, 15, 25]
    m, sd = statistics.mean(vals), statistics.stdev(vals)

    def z(v: float) -> float:
        return (v - m) / (sd + 1e-6)

    alpha = z_table.row(0, named=True)
    # alpha (P only): fun 80, 85; dull 70, 75 (reversed); clear 90, 95 -> N = 2 conversations x 3 types = 6
    assert alpha["model"] == "alpha" and alpha["N"] == 6
    assert alpha["fun"] == pytest.approx((z(80) + z(85)) / 2, abs=1e-12)
    assert alpha["z"] == pytest.approx(sum(z(v) for v in (80, 85, 70, 75, 90, 95)) / 6, abs=1e-12)
    assert raw_table.row(0, named=True)["raw"] == pytest.approx((80 + 85 + 70 + 75 + 90 + 95) / 6)
    assert z_table.get_column("model").to_list() == ["alpha", "beta"]  # ranked by z
    # all workers: 4 alpha conversations -> N 12
    assert r.scores["all"][0].row(0, named=True)["N"] == 12


def test_sorted_scores_choose_the_columns(kit):
    r = M.process(parse_hits(kit.main_set(sorted_scores=["clear", "fun"])))
    table = r.scores["passed"][0]
    assert table.columns == ["model", "N", "z", "clear", "fun"]
    assert table.row(0, named=True)["N"] == 4  # 2 conversations x 2 listed types


def test_ranking_override(kit):
    # by z alpha leads; metadata.ranking, then the explicit override, fix the order instead
    by_z = M.process(parse_hits(kit.main_set()))
    assert by_z.ranked_models == ["alpha", "beta"]
    given = M.process(parse_hits(kit.main_set(ranking=["beta", "alpha"])))
    assert given.ranked_models == ["beta", "alpha"]
    assert given.scores["passed"][1].get_column("model").to_list() == ["beta", "alpha"]  # raw follows
    z_by = dict(by_z.scores["passed"][0].select("model", "z").iter_rows())
    assert dict(given.scores["passed"][0].select("model", "z").iter_rows()) == z_by  # same values, new order
    forced = M.process(parse_hits(kit.main_set(ranking=["alpha", "beta"])), ranking=["beta", "alpha"])
    assert forced.ranked_models == ["beta", "alpha"]
    with pytest.raises(ValueError, match="missing"):
        M.process(parse_hits(kit.main_set()), ranking=["beta"])


def test_durations_minutes_per_conversation(ratings):
    r = M.process(parse_hits(ratings))
    row = r.duration.row(0, named=True)
    # 3 conversations per HIT. passed (A1, A2): (600 + 900) / 2 = 750 s -> 750 / 3 / 60 = 4.1667 min
    # failed (A3, A4): (360 + 1200) / 2 = 780 -> 4.3333; all: (600 + 900 + 360 + 1200) / 4 = 765 -> 4.25
    assert row["passed"] == pytest.approx(750 / 3 / 60)
    assert row["failed"] == pytest.approx(780 / 3 / 60)
    assert row["all"] == pytest.approx(765 / 3 / 60)


def test_threshold_is_strict(ratings, monkeypatch):
    # pass iff p < threshold: p exactly at the threshold fails
    monkeypatch.setattr(M, "mannwhitney_p", lambda *a, **k: 0.05)
    r = M.process(parse_hits(ratings))
    assert r.passed_workers == []
