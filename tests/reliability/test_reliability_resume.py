"""Reliability: the driver is killed mid-run -> `emocaustics run --resume --out SAME_DIR` completes with score tables
identical to an uninterrupted run, and no dialogue finished before the kill is extracted again.

1. `emocaustics run` (child process, own Ray, smoke model on the real vLLM CPU engine; 3 sample dialogues, 2 configs
   solved together on the one scheduler, one dialogue per config in flight) is SIGKILLed as soon as the first
   prediction file of either config appears; its Ray is cleaned up.
2. `--resume --out SAME_DIR` in a fresh child finishes the job.
3. The uninterrupted reference: the same job in this process (session engine, `smoke_pool`) into a new directory,
   with a copy of the response cache, so that both runs see the same model answers and any difference in the tables
   comes from the pipeline's bookkeeping (a lost, doubled, half-written or stale dialogue), which is what resume risks.

"Not extracted again": the prediction files present at the kill keep their inode and mtime, and stats.jsonl (one
cost line per solved dialogue, written after its prediction) names no dialogue twice.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
import yaml

from fakes.child_run import cleanup, start_cli

pytestmark = [pytest.mark.engine, pytest.mark.slow]

IDS = [1, 2, 3]
START_LIMIT = 480  # seconds for a child to start Ray + the engine and write its first file (2 busy cores)
SCORE_COLUMNS = ["run", "task", "method", "sample_id", "status", "n_utterances", "weight", "score", "failed", "reason"]


def _job(tmp: Path) -> dict:
    return {
        "name": "resume-check",
        "dataset": {"subset": "sample", "ids": IDS},
        "models": {"smoke": {"spec": "smoke"}},  # plain "smoke": the same cache id as the session's smoke_pool
        "runs": [{"task": "sextuple", "method": "direct", "model": "smoke"},
                 {"task": "emotion", "method": "direct", "model": "smoke"}],
        "concurrency": 1,  # one dialogue per config at a time, so that the kill lands between dialogues
        "output": str(tmp / "runs"),
        "cache_dir": str(tmp / "cache"),
        "ray": {"num_cpus": 2, "object_store_memory": 200_000_000},
    }


def _snapshot(run_dir: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(run_dir)): (p.stat().st_ino, p.stat().st_mtime_ns)
            for p in (run_dir / "predictions").glob("*/output_*.json")}


def _dialogue_of(rel: str) -> int:
    return int(rel.rsplit("_", 1)[1].removesuffix(".json"))


def _score_table(run_dir: Path):
    import polars as pl

    scores = pl.read_parquet(run_dir / "scores.parquet")
    cols = SCORE_COLUMNS + sorted(c for c in scores.columns if c.startswith("c_"))
    return scores.select(cols).sort("run", "sample_id")


def _item_table(run_dir: Path):
    import polars as pl

    items = pl.read_parquet(run_dir / "items.parquet")
    keys = [c for c in ("run", "dialogue", "kind", "utterance", "holder", "event_index", "emotion_index")
            if c in items.columns]
    return items.sort(keys, nulls_last=True)


def test_killed_driver_resumes_to_identical_tables_without_re_extracting(request, tmp_path: Path) -> None:
    from polars.testing import assert_frame_equal

    spec = tmp_path / "job.yaml"
    spec.write_text(yaml.safe_dump(_job(tmp_path)), encoding="utf-8")
    run_dir = tmp_path / "run"
    # 1. run, and kill the driver when the first dialogue's prediction lands (of either config: the scheduler solves
    # both configs' samples together, so under load the emotion config's may land first)
    child = start_cli(["run", str(spec), "--out", str(run_dir)], logs=tmp_path / "logs")
    try:
        deadline = time.monotonic() + START_LIMIT
        while not _snapshot(run_dir):
            assert child.proc.poll() is None, f"the run ended before the kill: {child.output()[1][-2000:]}"
            assert time.monotonic() < deadline, f"no prediction within {START_LIMIT}s: {child.output()[1][-2000:]}"
            time.sleep(0.05)
        child.kill_driver()
    finally:
        cleanup(child)  # the orphaned Ray of the killed driver (workers could otherwise keep writing files)
    before = _snapshot(run_dir)
    done_before: dict[str, set[int]] = {}  # config folder -> the dialogues it had finished at the kill
    for rel in before:
        done_before.setdefault(rel.split("/")[1], set()).add(_dialogue_of(rel))
    assert before and set(done_before) <= {"sextuple_direct_smoke", "emotion_direct_smoke"}, before
    assert len(before) < 2 * len(IDS), f"every dialogue of both configs was already done at the kill: {sorted(before)}"
    assert not (run_dir / "scores.parquet").exists()

    # 2. resume into the same directory
    child = start_cli(["run", str(spec), "--resume", "--out", str(run_dir)], logs=tmp_path / "logs")
    try:
        rc = child.wait(timeout=START_LIMIT + 120)
        assert rc == 0, child.output()[1][-3000:]
    finally:
        cleanup(child)
    after = _snapshot(run_dir)
    for rel, stamp in before.items():
        assert after.get(rel) == stamp, f"{rel} was written again by the resumed run"
    for label_dir in (run_dir / "predictions").iterdir():  # one cost line per solved dialogue, over both passes
        stats = [int(json.loads(x)["id"]) for x in (label_dir / "stats.jsonl").read_text().splitlines()]
        assert len(stats) == len(set(stats)), f"{label_dir.name}: a dialogue extracted twice: {stats}"
        left = set(IDS) - done_before.get(label_dir.name, set())
        assert left <= set(stats), f"{label_dir.name}: the resumed pass did not run {sorted(left)}"

    # 3. the uninterrupted reference, same answers (copied cache), in this process on the session's engine
    from emocaustics.jobs.runner import run_job
    from emocaustics.jobs.spec import JobSpec

    request.getfixturevalue("smoke_pool")  # only now: never two engines while the children run
    ref_cache = tmp_path / "ref-cache"
    shutil.copytree(tmp_path / "cache", ref_cache)
    ref_job = JobSpec.model_validate({**_job(tmp_path), "cache_dir": str(ref_cache), "concurrency": 64})
    ref_dir = run_job(ref_job, out=str(tmp_path / "reference"))

    assert_frame_equal(_score_table(run_dir), _score_table(ref_dir))
    assert_frame_equal(_item_table(run_dir), _item_table(ref_dir))
    print(f"\n[reliability] resume: killed after {sorted(before)} of {IDS} in each config; resumed the rest; "
          f"tables identical to the uninterrupted run")
