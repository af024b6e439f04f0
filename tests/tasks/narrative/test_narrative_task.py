"""The `narrative` task: loading the sample, the calibration predictors, score rows, failures, finalize, data
location, solving through the task with a double."""

import asyncio
import dataclasses
import json
import shutil

import pytest
from tasks.narrative.test_narrative_solver import Double

import emocaustics.tasks.narrative  # noqa: F401  (registers the task)
from emocaustics.core.errors import UsageError
from emocaustics.core.task import Failure, ScoreContext, SolveFailed, get_task, needs_model, parse_options
from emocaustics.tasks.narrative.composite import COMPONENTS
from emocaustics.tasks.narrative.data import ENV_VAR, SAMPLE_DIR, locate
from emocaustics.tasks.narrative.io import read_story

TASK = get_task("narrative")
UNSCORED = {"clockmaker_en": {"characters"}, "well_zh": {"relationships", "sentiment"}, "kite_en": {"actions", "spans"}}


def load(method="oracle", **dataset):
    opts = parse_options(TASK, {"method": method})
    return opts, TASK.load(TASK.Dataset(**dataset), opts)


def rows_of(scored):
    return {(r["sample_id"], r["metric"]): r for r in scored.rows.to_dicts()}


def test_load_the_sample():
    _, loaded = load()
    ids = [s.id for s in loaded.samples]
    assert ids == ["clockmaker_en", "ferry_en", "kite_en", "lantern_zh", "market_zh", "orchard_zh", "well_zh"]
    s = loaded.samples[1]
    assert s.input["text"].startswith("Tom Hale") and s.target["version"] == "3.0"
    assert s.meta["pred_file"].endswith("ferry_en_pred.json")
    kinds = sorted(d.kind for d in loaded.defects)  # market_zh's deliberate defects, reported as data
    assert kinds == ["out_of_taxonomy", "out_of_taxonomy", "span_out_of_range", "span_text_mismatch"]
    json.dumps([dataclasses.asdict(x) for x in loaded.samples])  # a sample is plain data


def test_oracle_rows():
    opts, loaded = load()
    scored = TASK.score(loaded.samples, TASK.predict("oracle", loaded.samples, opts), opts, ScoreContext())
    rows = rows_of(scored)
    for s in loaded.samples:
        for c in COMPONENTS:
            r = rows[(s.id, c)]
            if c in UNSCORED.get(s.id, ()):
                assert r["value"] is None and r["status"] == "unscored" and r["reason"]
            else:
                assert (r["value"], r["status"]) == (1.0, "ok")
        assert rows[(s.id, "overall")]["value"] == 1.0
    assert scored.summary["overall"] == 1.0 and scored.summary["characters_files_unscored"] == 1
    assert scored.items.height == 7 * len(COMPONENTS)
    issues = scored.tables["issues"]  # market_zh's 4 issues, once for the GT and once for the identical prediction
    assert issues.height == 8 and sorted(set(issues["role"])) == ["gt", "pred"]


def test_files_and_empty_methods():
    opts, loaded = load("files")
    scored = TASK.score(loaded.samples, TASK.predict("files", loaded.samples, opts), opts, ScoreContext())
    assert 0.5 < scored.summary["overall"] < 1 and scored.summary["files_scored"] == 7
    opts, loaded = load("empty")
    scored = TASK.score(loaded.samples, TASK.predict("empty", loaded.samples, opts), opts, ScoreContext())
    assert scored.summary["overall"] == 0.0


def test_failures_and_unreadable_files(tmp_path):
    root = tmp_path / "data"
    shutil.copytree(SAMPLE_DIR / "gt", root / "gt")
    (root / "pred").mkdir()
    (root / "gt" / "broken.json").write_text('{"version": "2.0"}', encoding="utf-8")
    (root / "pred" / "ferry_en_pred.json").write_text("{oops", encoding="utf-8")
    (root / "pred" / "kite_en.json").write_text(json.dumps({"version": "3.0", "characters": 5}), encoding="utf-8")
    opts, loaded = load("files", data=str(root))
    assert any(d.kind == "unreadable" and "broken.json" in d.where for d in loaded.defects)
    preds = TASK.predict("files", loaded.samples, opts)
    assert isinstance(preds["ferry_en"], Failure) and "not JSON" in preds["ferry_en"].reason
    assert isinstance(preds["lantern_zh"], Failure) and "no prediction file" in preds["lantern_zh"].reason
    rows = rows_of(TASK.score(loaded.samples, preds, opts, ScoreContext()))
    # a failed prediction: 0 and `failed` where GT could be scored, unscored where it could not
    assert rows[("lantern_zh", "spans")]["status"] == "failed" and rows[("lantern_zh", "spans")]["value"] == 0.0
    assert rows[("kite_en", "spans")]["status"] == "unscored"
    assert rows[("kite_en", "characters")]["status"] == "failed"
    assert "$.characters" in rows[("kite_en", "characters")]["reason"]
    # an unreadable GT file: the story fails (0, named) as `score narrative` counts it; its components are unscored
    assert rows[("broken", "overall")]["status"] == "failed" and "version" in rows[("broken", "overall")]["reason"]
    assert rows[("broken", "overall")]["value"] == 0.0 and rows[("broken", "characters")]["status"] == "unscored"


def test_stories_subset_and_missing_story():
    _, loaded = load(stories=["kite_en", "nope"])
    assert [s.id for s in loaded.samples] == ["kite_en"] and loaded.defects[0].kind == "missing"


def test_finalize_writes_readable_json_v3(tmp_path):
    opts, loaded = load()
    preds = TASK.predict("oracle", loaded.samples, opts)
    preds["kite_en"] = Failure("x", "y")
    paths = TASK.finalize(tmp_path, loaded.samples, preds, opts)
    assert len(paths) == 6 and all(p.name.endswith("_pred.json") for p in paths)
    assert read_story(paths[0]).events


def test_options():
    with pytest.raises(ValueError):
        parse_options(TASK, {"method": "nope"})
    with pytest.raises(ValueError):
        parse_options(TASK, {"method": "llm", "window_sentences": 0})
    opts = parse_options(TASK, {"method": "llm", "window_sentences": 4, "weights": {"spans": 2}})
    assert "window_sentences=4" in TASK.label(opts)
    assert needs_model(TASK, opts) and not needs_model(TASK, parse_options(TASK, {"method": "oracle"}))


def test_locate(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert locate(None) == SAMPLE_DIR and locate(str(tmp_path)) == tmp_path
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert locate(None) == tmp_path
    with pytest.raises(UsageError):
        locate(str(tmp_path / "missing"))


def test_solve_through_the_task():
    opts, loaded = load("llm")
    opts = parse_options(TASK, {"method": "llm", "window_sentences": 5})
    sample = next(s for s in loaded.samples if s.id == "well_zh")
    assert TASK.placement(sample, opts).weight == 2.0  # 9 sentences in windows of 5
    llm = Double()
    pred = asyncio.run(TASK.solve(llm, sample, opts))
    assert all(r.affinity == "well_zh" for r in llm.requests) and len(llm.requests) == 2
    rows = rows_of(TASK.score([sample], {"well_zh": pred}, opts, ScoreContext()))
    assert rows[("well_zh", "overall")]["status"] == "ok"
    with pytest.raises(SolveFailed):
        asyncio.run(TASK.solve(llm, type(sample)("x", {"text": None}), opts))


def test_summary_counts_failed_stories_as_zero():
    """The summary's `overall` (the job's progress line, configs.json) is the mean of the stories' `overall` rows with
    failed stories counted 0 and unscored ones left out: the figure summary.md shows, one definition."""
    import polars as pl

    opts, loaded = load("files")
    preds = TASK.predict("files", loaded.samples, opts)
    preds["ferry_en"] = Failure("files", "not JSON")
    del preds["lantern_zh"], preds["market_zh"]  # no prediction at all
    scored = TASK.score(loaded.samples, preds, opts, ScoreContext())
    for metric, key in (("overall", "overall"), *((c, f"{c}_macro") for c in COMPONENTS)):
        rows = scored.rows.filter(pl.col("metric") == metric)
        assert scored.summary[key] == pytest.approx(rows["value"].drop_nulls().mean()), metric
    overall = scored.rows.filter(pl.col("metric") == "overall")
    assert overall.filter(pl.col("status") == "failed").height == 3 == scored.summary["stories_failed"]
    assert scored.summary["files_scored"] == 4
