"""Reliability: a model replica actor killed mid-job -> the job completes, and every dialogue has exactly one
prediction or exactly one failure row (and a score row).

A whole `run_job` (in a thread of this process, on the session's Ray) runs sextuple `direct` extraction with the smoke
model on the real vLLM CPU engine, one dialogue in flight at a time; when the first prediction file appears, the
replica actor is killed the way a crash kills it (`ray.kill(..., no_restart=False)`: Ray may restart it). The pool
is not the session's `smoke_pool`, because this test kills it: the job's model spec is the session's `victim_pool`
(tests/conftest.py), already started, which the tests that kill a replica share.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.engine, pytest.mark.slow]

IDS = [1, 2, 3, 4]
LIMIT = 600  # seconds for the whole job on 2 busy cores (and the engine's restart)


def test_replica_killed_mid_job_every_dialogue_accounted_for(ray_local, victim_pool, tmp_path: Path) -> None:
    import polars as pl

    from emocaustics.models.pool import get_pool
    from emocaustics.jobs.runner import run_job
    from emocaustics.jobs.spec import JobSpec

    job = JobSpec.model_validate({
        "name": "actor-kill",
        "dataset": {"subset": "sample", "ids": IDS},
        # the session's victim_pool (small KV cache, an option the session's smoke_pool does not have)
        "models": {"victim": {"spec": "smoke", "engine": {"max_num_seqs": 32, "kv_cache_memory_bytes": 268435456}}},
        "runs": [{"task": "sextuple", "method": "direct", "model": "victim"}],
        "concurrency": 1,  # one dialogue at a time: the kill lands while later dialogues are still to come
        "output": str(tmp_path / "runs"),
        "cache_dir": str(tmp_path / "cache"),
    })
    run_dir = tmp_path / "run"
    pred = run_dir / "predictions" / "sextuple_direct_victim"
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["dir"] = run_job(job, out=str(run_dir))
        except BaseException as exc:  # noqa: BLE001 (reported by the test thread)
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    t0 = time.monotonic()
    thread.start()
    try:
        while not list(pred.glob("output_chat_*.json")):
            assert thread.is_alive(), f"the job ended before the kill: {outcome}"
            assert time.monotonic() - t0 < LIMIT, "no prediction appeared"
            time.sleep(0.05)
        pool = get_pool(job.models["victim"].parsed())  # the job's pool (same process, same registry entry)
        assert pool is victim_pool, "the job did not run on the session's victim pool"
        pid_before = asyncio.run(pool.stats())["per_replica"][0]["pid"]
        done_at_kill = len(list(pred.glob("output_chat_*.json")))
        ray_local.kill(pool.actors[0], no_restart=False)
        assert done_at_kill < len(IDS), "every dialogue was done before the kill: nothing was in flight"
        thread.join(timeout=LIMIT)
        assert not thread.is_alive(), f"the job did not finish within {LIMIT}s after the kill"
        assert "error" not in outcome, f"the job failed: {outcome.get('error')!r}"
        seconds = time.monotonic() - t0

        stats = asyncio.run(pool.stats())
        assert stats["per_replica"][0]["pid"] != pid_before, "the replica was not restarted: the kill did not land"

        failures = []
        if (pred / "failures.jsonl").exists():
            failures = [json.loads(x) for x in (pred / "failures.jsonl").read_text(encoding="utf-8").splitlines()]
        failed = [r["dialogue"] for r in failures]
        assert len(failed) == len(set(failed)), f"a dialogue has two failure rows: {failed}"
        for r in failures:
            assert r["reason"], r
        for i in IDS:
            has_file = (pred / f"output_chat_{i}.json").exists()
            assert has_file != (i in failed), f"dialogue {i}: prediction {has_file}, failure row {i in failed}"
        scores = pl.read_parquet(run_dir / "scores.parquet")
        assert sorted(int(x) for x in scores["sample_id"].to_list()) == IDS  # one score row per dialogue, none lost or doubled
        # ...and nearly every dialogue came through the kill (a failure row for each would not pass)
        assert len(failed) <= 1, failures
        solved = [int(json.loads(x)["id"]) for x in (pred / "stats.jsonl").read_text(encoding="utf-8").splitlines()]
        assert sorted(solved) == IDS  # one cost line per dialogue: each finished once, the kill's ones included
        print(f"\n[reliability] actor kill: killed after {done_at_kill}/{len(IDS)} dialogues; job done in "
              f"{seconds:.1f}s; {len(IDS) - len(failed)} predicted, {len(failed)} failure rows")
    finally:
        thread.join(timeout=60)
