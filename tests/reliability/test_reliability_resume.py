"""Reliability: the driver is killed mid-run -> `emocaustics run --resume --out SAME_DIR` completes with score tables
identical to an uninterrupted run, and no dialogue finished before the kill is extracted again.

1. `emocaustics run` (child process; 3 sample dialogues, 2 configs solved together on the one scheduler, one dialogue
   per config in flight) is SIGKILLed as soon as the first prediction file of either config appears.
2. `--resume --out SAME_DIR` in a fresh child finishes the job.
3. The uninterrupted reference: the same job in this process into a new directory, with a copy of the response cache,
   so that both runs see the same model answers and any difference in the tables comes from the pipeline's
   bookkeeping (a lost, doubled, half-written or stale dialogue), which is what resume risks.

The model is the OpenAI-compatible stand-in on loopback (tests/fakes/openai_chat.py; it answers every request from
the request itself, each after `LATENCY` seconds, so that the kill lands between dialogues), not the vLLM engine:
what is killed and resumed is the driver's bookkeeping, which is the same for a remote and a local model
(jobs/together.py, solve/plan.py), and a child that started Ray and the engine twice cost some 90 s of the suite. The
engine's own faults (a replica or its engine core killed mid-job) are tests/models/test_models_faults.py's and
tests/reliability/test_reliability_actor_kill.py's.

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
from fakes.openai_chat import FakeOpenAIServer, Faults

pytestmark = pytest.mark.slow

IDS = [1, 2, 3]
START_LIMIT = 120  # seconds for a child to start and write its first file (2 busy cores)
LATENCY = 0.3  # seconds each answer takes: far longer than the 0.05 s poll that sees the first file and kills
SCORE_COLUMNS = ["run", "task", "method", "sample_id", "status", "n_utterances", "weight", "score", "failed", "reason"]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")  # the children inherit it


def _job(tmp: Path, url: str) -> dict:
    return {
        "name": "resume-check",
        "dataset": {"subset": "sample", "ids": IDS},
        "models": {"api": {"spec": f"openai:fake-model@{url}"}},
        "runs": [{"task": "sextuple", "method": "direct", "model": "api"},
                 {"task": "emotion", "method": "direct", "model": "api"}],
        "concurrency": 1,  # one dialogue per config at a time, so that the kill lands between dialogues
        "output": str(tmp / "runs"),
        "cache_dir": str(tmp / "cache"),
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


def test_killed_driver_resumes_to_identical_tables_without_re_extracting(tmp_path: Path) -> None:
    from polars.testing import assert_frame_equal

    with FakeOpenAIServer(Faults(latency=LATENCY)) as server:
        spec = tmp_path / "job.yaml"
        spec.write_text(yaml.safe_dump(_job(tmp_path, server.base_url)), encoding="utf-8")
        run_dir = tmp_path / "run"
        # 1. run, and kill the driver when the first dialogue's prediction lands (of either config: the scheduler
        # solves both configs' samples together, so under load the emotion config's may land first)
        child = start_cli(["run", str(spec), "--out", str(run_dir)], logs=tmp_path / "logs")
        try:
            deadline = time.monotonic() + START_LIMIT
            while not _snapshot(run_dir):
                assert child.proc.poll() is None, f"the run ended before the kill: {child.output()[1][-2000:]}"
                assert time.monotonic() < deadline, f"no prediction within {START_LIMIT}s: {child.output()[1][-2000:]}"
                time.sleep(0.05)
            child.kill_driver()
        finally:
            cleanup(child)
        before = _snapshot(run_dir)
        done_before: dict[str, set[int]] = {}  # config folder -> the dialogues it had finished at the kill
        for rel in before:
            done_before.setdefault(rel.split("/")[1], set()).add(_dialogue_of(rel))
        assert before and set(done_before) <= {"sextuple_direct_api", "emotion_direct_api"}, before
        assert len(before) < 2 * len(IDS), f"every dialogue of both configs was already done at the kill: {sorted(before)}"
        assert not (run_dir / "scores.parquet").exists()

        # 2. resume into the same directory
        server.faults = Faults()  # the kill is done: no more waiting for it
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

        # 3. the uninterrupted reference, same answers (copied cache), in this process
        from emocaustics.jobs.runner import run_job
        from emocaustics.jobs.spec import JobSpec

        ref_cache = tmp_path / "ref-cache"
        shutil.copytree(tmp_path / "cache", ref_cache)
        ref_job = JobSpec.model_validate({**_job(tmp_path, server.base_url), "cache_dir": str(ref_cache),
                                          "concurrency": 64})
        ref_dir = run_job(ref_job, out=str(tmp_path / "reference"))

    assert_frame_equal(_score_table(run_dir), _score_table(ref_dir))
    assert_frame_equal(_item_table(run_dir), _item_table(ref_dir))
    print(f"\n[reliability] resume: killed after {sorted(before)} of {IDS} in each config; resumed the rest; "
          f"tables identical to the uninterrupted run")
