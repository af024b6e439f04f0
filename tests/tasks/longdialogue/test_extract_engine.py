"""Acceptance on the real engine: all five task/method combinations on 10 dialogues through the smoke model (real
vLLM CPU engine in a Ray actor, via the pool's `run`), solved by `eval ... --no-score` (the one driver of the plan):
files the scorer reads, every dialogue a prediction or a failure row, zero unparseable answers, and a second run that
makes zero engine calls."""

import asyncio
import json

import pytest

from emocaustics.cli import main
from emocaustics.tasks.longdialogue.score.predictions import read_prediction_files

pytestmark = [pytest.mark.engine, pytest.mark.slow]

COMBOS = [("sextuple", "direct"), ("sextuple", "rag"), ("sextuple", "window"), ("emotion", "direct"),
          ("emotion", "window")]
IDS = list(range(1, 11))


def _run_all(root, base):
    """Each combination as `eval TASK --model smoke --method M --no-score`; its predictions folder and stats rows."""
    out = {}
    for task, method in COMBOS:
        run = base / f"{task}-{method}"
        assert main(["eval", task, "--model", "smoke", "--method", method, "-D", f"data={root}",
                     "--ids", ",".join(map(str, IDS)), "--no-score", "--allow-failures", "--out", str(run)]) == 0
        (folder,) = (run / "predictions").iterdir()
        stats = [json.loads(x) for x in (folder / "stats.jsonl").read_text().splitlines() if x.strip()]
        out[(task, method)] = folder, {str(r["id"]): r for r in stats}
        assert not (run / "scores.parquet").exists()  # solved, not scored
    return out


def test_five_methods_end_to_end_then_cached(smoke_pool, published_root, tmp_path, monkeypatch):
    monkeypatch.setenv("EMOCAUSTICS_RESPONSE_CACHE", str(tmp_path / "cache"))
    first = _run_all(published_root, tmp_path / "run1")
    for (task, method), (folder, stats) in first.items():
        got = read_prediction_files(folder, task)
        failed = [json.loads(x) for x in (folder / "failures.jsonl").read_text().splitlines()] \
            if (folder / "failures.jsonl").exists() else []
        assert len(got.predictions) + len(failed) == 10, (task, method)  # each a prediction or a failure row
        assert len(got.predictions) >= 9, (task, method, failed)  # nearly every dialogue came through
        assert all(f["reason"] for f in failed)
        assert all(not isinstance(v, str) for v in got.predictions.values()), got.predictions  # str = failure
        assert sum(int(r.get("unparseable", 0)) for r in stats.values()) == 0, (task, method)  # structured output
        assert sum(int(r.get("llm_calls", 0)) for r in stats.values()) > 0
    calls_before = asyncio.run(smoke_pool.stats())["calls"]
    second = _run_all(published_root, tmp_path / "run2")
    for key, (folder, stats) in second.items():
        assert sum(int(r.get("llm_calls", 0)) for r in stats.values()) == 0, key
        # every request of the first run is a hit now: its calls, and the hits it had already (emotion window solves
        # the sextuple window pass it builds on, which the sextuple window run before it had asked)
        assert sum(int(r.get("cache_hits", 0)) for r in stats.values()) == \
            sum(int(r.get("llm_calls", 0)) + int(r.get("cache_hits", 0)) for r in first[key][1].values()), key
        for f in first[key][0].glob("output_*.json"):
            assert f.read_text() == (folder / f.name).read_text()
    assert asyncio.run(smoke_pool.stats())["calls"] == calls_before  # the engine saw nothing new
