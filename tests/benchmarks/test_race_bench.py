"""The fair race (benchmarks/race_bench.py) end to end at a tiny size: both sides as whole processes against one
stand-in endpoint (10 ms per call), no model engine."""

from __future__ import annotations

from benchmarks.race_bench import race, race_ids


def test_race_ids_are_paper_100_by_id_then_the_rest(published_root, monkeypatch):
    monkeypatch.setenv("EMOCAUSTICS_DATA", str(published_root))
    from emocaustics.tasks.longdialogue.data.subsets import resolve

    paper = sorted(d.id for d in resolve("paper-100", None, root=str(published_root))[0])
    ids = race_ids(400)
    assert ids[:100] == paper  # the reference's sizes take reference_bench's dialogues
    assert len(set(ids)) == 400 and ids[100:] == sorted(ids[100:])  # ten times them: distinct, deterministic


def test_race_runs_both_sides_as_processes_on_the_same_work(published_root, monkeypatch, tmp_path):
    monkeypatch.setenv("EMOCAUSTICS_DATA", str(published_root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from emocaustics.tasks.longdialogue.data.subsets import resolve

    dialogues, _ = resolve("all", [1, 2], root=str(published_root))
    utterances = sum(len(d.utterances) for d in dialogues)  # 9 + 16: sextuple direct asks once per utterance
    assert utterances == 25

    res = race({"sextuple/direct": 2}, (1,), latency=0.01, slots=64, repeats=1, work=tmp_path)
    fig = res["figures"]
    one = fig["per_size"]["1x"]["sextuple/direct"]
    run = one["runs"][0]
    assert run["first"] == "ours"  # repeat 0, method 0, size 0
    for side in ("ours", "reference"):
        r = run[side]
        assert r["rc"] == 0, r.get("stderr_tail")
        assert r["predicted_ids"] == [1, 2]
        assert r["calls"] == 25  # counted by the endpoint, reset before each side
        assert r["wall_s"] > r["phases"]["process_start"] > 0  # timed from process start, not from a mark inside
        assert len(r["load_avg_1m"]) == 2
    assert run["reference"]["phases"]["calls"] is not None and run["ours"]["phases"]["dataset_load"] is not None
    assert run["identical_predictions"] == 2 and one["same_work"]  # the stand-in answers alike: same predictions
    assert run["speedup"] == round(run["reference"]["wall_s"] / run["ours"]["wall_s"], 3)
    assert fig["speedup"]["1x"]["sextuple/direct"] == run["speedup"]
    assert fig["calls"]["1x"]["sextuple/direct"] == 25 and fig["reference_threads"]["sextuple/direct"] == 16
    floor = res["floors"]["1x:sextuple/direct:speedup"]
    assert floor["floor"] == 1.0 and floor["ok"] == (run["speedup"] >= 1.0)
