"""The task and `human process` are one path: a config's score and finalize run the method and step 7 once, and the
tables the task hands to the job are the very frames the tool writes as CSV."""

from __future__ import annotations

import json

import polars as pl
from polars.testing import assert_frame_equal

from emocaustics.core.task import ScoreContext, parse_options
from emocaustics.tasks.human import outputs
from emocaustics.tasks.human.task import HumanDataset, HumanTask


def test_score_then_finalize_computes_step7_once_and_writes_the_scored_tables(ratings, tmp_path, monkeypatch):
    calls = []
    real = outputs.statistics
    monkeypatch.setattr(outputs, "statistics", lambda result: calls.append(result) or real(result))
    (tmp_path / "run.json").write_text(json.dumps(ratings))
    task = HumanTask()
    opts = parse_options(task, {"method": "process"})
    loaded = task.load(HumanDataset(data=str(tmp_path), file="run.json"), opts)
    preds = task.predict("process", loaded.samples, opts)
    scored = task.score(loaded.samples, preds, opts, ScoreContext())
    task.finalize(tmp_path / "out", loaded.samples, preds, opts)
    assert len(calls) == 1, f"step 7 ran {len(calls)} times for one config"
    for name in ("system_scores", "system_raw_scores", "passrate", "duration", "quality_control"):
        written = pl.read_csv(tmp_path / "out" / "human" / f"{name}.csv", schema=scored.tables[name].schema)
        assert_frame_equal(written, scored.tables[name], check_exact=False, rel_tol=1e-12)
