"""The shipped AER quickstart job through the real vLLM CPU engine (the session's shared smoke engine): every prompt x
context mode, self-consistency and the calibration rows on a few questions of the published sample split, with 0
unreadable answers; then the same job again into a fresh run folder with the same response cache makes 0 engine calls.

The smoke model's answers are noise (random weights): the test asserts the machinery (guided answers read, every
question answered, outputs written, the cache), never an accuracy beyond the calibration rows'.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from pathlib import Path

import polars as pl
import pytest

from emocaustics.jobs.spec import load_job
from tasks.aer.aer_fixtures import published_root

pytestmark = [pytest.mark.engine, pytest.mark.slow]

JOB = Path(__file__).resolve().parents[3] / "jobs" / "aer-quickstart.yaml"
# Three questions of topic 7, the smallest topic (51k characters): `retrieve` embeds every chunk of a topic, which
# is most of this test's time on a 2-core machine.
IDS = ["q-3", "q-7", "q-12"]
MODES = {(p, c) for p in ("zero-shot", "few-shot", "cot") for c in ("none", "full", "retrieve")}


@pytest.fixture(scope="module")
def two_runs(smoke_pool, tmp_path_factory):
    """The quickstart job twice (same cache folder, fresh run folders): (first dir, second dir, engine calls of
    each run)."""
    from emocaustics.jobs.runner import run_job

    root = published_root()
    tmp = tmp_path_factory.mktemp("aer-engine")
    # Plain `smoke` is the session engine's key (the shipped entry names max_model_len 8192, which would start a
    # second engine); its window (32768) holds the job's 8192-token prompts.
    job = load_job(JOB, overrides={
        "models": {"smoke": {"spec": "smoke"}},
        "dataset": {"aer": {"split": "sample", "data": str(root), "ids": IDS}},
        "output": str(tmp / "runs"), "cache_dir": str(tmp / "cache")})
    dirs, calls = [], []
    for n in (1, 2):
        before = asyncio.run(smoke_pool.stats())["calls"]
        with contextlib.redirect_stdout(io.StringIO()):
            dirs.append(run_job(job, out=str(tmp / f"run{n}")))
        calls.append(asyncio.run(smoke_pool.stats())["calls"] - before)
    return dirs[0], dirs[1], calls


def _configs(run_dir: Path) -> list[dict]:
    return json.loads((run_dir / "configs.json").read_text(encoding="utf-8"))


def test_every_mode_answers_every_question(two_runs):
    first, _, calls = two_runs
    records = _configs(first)
    llm = [r for r in records if r["method"] == "llm"]
    assert {(r["options"]["prompt"], r["options"]["context"]) for r in llm} == MODES
    assert any(r["options"]["samples"] == 3 for r in llm)
    for r in llm:
        s = r["summary"]
        assert s["total"] == len(IDS) and s["failed"] == 0 and s["missing"] == [], (r["run"], s)
        folder = first / "predictions" / r["run"]
        assert not (folder / "failures.jsonl").exists(), (folder / "failures.jsonl").read_text()
        preds = [json.loads(x) for x in (folder / "predictions.jsonl").read_text().splitlines()]
        assert sorted(p["id"] for p in preds) == sorted(IDS)
        for p in preds:
            pred = p["prediction"]
            assert pred["answer"] and set(pred["answer"]) <= set("ABCD") and pred["parsed_from"] == "schema"
            if r["options"]["samples"] > 1:
                assert pred["unreadable"] == 0 and len(pred["samples"]) == 3
            if r["options"]["context"] != "none":
                assert pred["trim"]["tokens_kept"] > 0  # the documents (or passages) really were in the prompt
        sub = [json.loads(x) for x in (folder / "submission.jsonl").read_text().splitlines()]
        assert sorted(x["id"] for x in sub) == sorted(IDS)
        assert (folder / "submission.zip").is_file() and (folder / "results.json").is_file()
    summaries = {r["method"]: r["summary"]["score"] for r in records if r["method"] != "llm"}
    assert summaries["oracle"] == 1.0 and summaries["all-options"] == 0.0
    # the engine answered: at least one call per question per sample of every LLM config
    assert calls[0] >= sum(len(IDS) * r["options"]["samples"] for r in llm)


def test_second_run_is_served_by_the_cache(two_runs):
    first, second, calls = two_runs
    assert calls[1] == 0
    scores = pl.read_parquet(second / "scores.parquet").filter(pl.col("method") == "llm")
    assert scores["llm_calls"].sum() == 0 and scores["cache_hits"].sum() >= scores.height
    assert not scores["failed"].any()
    # the same answers as the first run
    for r in _configs(first):
        if r["method"] == "llm":
            a = (first / "predictions" / r["run"] / "submission.jsonl").read_text()
            b = (second / "predictions" / r["run"] / "submission.jsonl").read_text()
            assert a == b, r["run"]
