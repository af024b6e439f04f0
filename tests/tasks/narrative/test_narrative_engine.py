"""The shipped narrative job on the real vLLM CPU engine (the session's `smoke` engine): two sample stories (one
Chinese, one English) annotated by the LLM solver into JSON v3 and scored in the same job, beside the calibration rows.

The smoke model has random weights, so its annotations are noise: what is asserted is the path (schema-guided
answers that parse into JSON v3, every window a call on the engine, the annotations scored per story and component,
written as files that `score narrative` reads back to the same figures), never a quality figure."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import polars as pl
import pytest

import emocaustics.tasks.narrative  # noqa: F401  (registers the task)
from emocaustics.tasks.narrative.cli import score_paths
from emocaustics.tasks.narrative.composite import COMPONENTS
from emocaustics.tasks.narrative.data import SAMPLE_DIR
from emocaustics.tasks.narrative.schema import parse_story

pytestmark = [pytest.mark.engine, pytest.mark.slow]

JOB = Path(__file__).resolve().parents[3] / "jobs" / "narrative-quickstart.yaml"
STORIES = ["well_zh", "kite_en"]  # 9 sentences each: 2 windows each at window_sentences 6


def test_the_quickstart_job_annotates_and_scores_on_the_engine(smoke_pool, tmp_path: Path):
    from emocaustics.jobs.runner import run_job
    from emocaustics.jobs.spec import load_job

    # Two stories; the session's smoke engine (the job's max_model_len 8192 would start a second engine: the smoke
    # model's own limit, 32768, holds the same prompts).
    job = load_job(JOB, overrides={"dataset": {"narrative": {"stories": STORIES}},
                                   "models": {"smoke": {"spec": "smoke"}},
                                   "output": str(tmp_path / "runs"), "cache_dir": str(tmp_path / "cache")})
    labels = [r.label for r in job.expand()]
    llm_label = next(x for x in labels if "_llm_" in x)
    before = asyncio.run(smoke_pool.stats())["calls"]
    run_dir = run_job(job, out=str(tmp_path / "run"))
    calls = asyncio.run(smoke_pool.stats())["calls"] - before
    assert calls >= 4  # 2 stories x 2 windows, each a call on the session engine (more when an answer was retried)

    scores = pl.read_parquet(run_dir / "scores.parquet")
    assert sorted(scores["run"].unique()) == sorted(labels)
    assert dict(scores.group_by("run").len().iter_rows()) == {x: 2 for x in labels}
    oracle = scores.filter(pl.col("method") == "oracle")
    assert oracle["score"].to_list() == [1.0, 1.0]
    llm = scores.filter(pl.col("run") == llm_label).sort("sample_id")
    assert (llm["kind"] == "engine-check").all() and llm["llm_calls"].sum() >= 4
    # Every story annotated and scored: the schema-guided answers parse (a bad one would be retried, then a failure
    # naming its window); random weights score near 0, and a score is still a figure in [0, 1].
    assert not llm["failed"].any(), llm.select("sample_id", "reason").to_dicts()
    assert all(0.0 <= v <= 1.0 for v in llm["score"])

    rows = pl.read_parquet(run_dir / "rows.parquet").filter(pl.col("run") == llm_label)
    assert set(rows["metric"]) == {*COMPONENTS, "overall"}
    # GT wholly missing stays unscored for the LLM too: well_zh has no relationships, kite_en no spans or actions.
    unscored = {(r["sample_id"], r["metric"])
                for r in rows.filter(pl.col("status") == "unscored").iter_rows(named=True)}
    assert {("well_zh", "relationships"), ("well_zh", "sentiment"), ("kite_en", "spans"),
            ("kite_en", "actions")} <= unscored

    # The annotations are JSON v3 files beside the run; scored again from disk they give the job's figures.
    written = run_dir / "predictions" / llm_label / "narrative"
    for name in STORIES:
        doc = json.loads((written / f"{name}_pred.json").read_text(encoding="utf-8"))
        story = parse_story(doc, f"{name}_pred.json")
        assert doc["metadata"]["method"] == "llm" and doc["metadata"]["windows"] == 2
        assert story.text == json.loads((SAMPLE_DIR / "gt" / f"{name}.json").read_text("utf-8"))[
            "source_info"]["text_content"]
    again, _ = score_paths(written, SAMPLE_DIR / "gt")
    assert again["files"] == 2 and sorted(again["skipped"]["unpaired_gt"]) == sorted(
        p.stem for p in (SAMPLE_DIR / "gt").glob("*.json") if p.stem not in STORIES)
    by_story = dict(zip(llm["sample_id"], llm["score"]))
    for name in STORIES:
        assert again["per_file"][name]["overall_score"] == pytest.approx(by_story[name])
