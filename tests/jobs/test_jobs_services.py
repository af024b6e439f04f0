"""Model services with the real engine on a `ray start` head (one head start, one engine start), as a user runs them:

job A says `keep_alive` -> its smoke service stays up after it -> `emocaustics models` lists it -> job B (same spec, no
keep_alive) attaches instead of starting an engine -> `emocaustics serve` of the same spec attaches too -> `models stop`
ends it. The stand-in tests of models/services.py (idle timeout, affinity, priority) are in tests/models."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("_cluster_helpers", Path(__file__).with_name("test_jobs_cluster.py"))
_cluster = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(_cluster)  # type: ignore[union-attr]

pytestmark = [pytest.mark.slow, pytest.mark.engine]
EMOCAUSTICS = str(Path(sys.executable).parent / "emocaustics")
MODEL = "{spec: smoke, engine: {max_model_len: 4096, kv_cache_memory_bytes: 268435456}%s}"
JOB = """name: %s
dataset: {subset: sample, ids: [1]}
models:
  smoke: %s
runs:
  - {task: sextuple, method: direct, model: smoke}
scoring: {embedder: minilm, judge: none}
cache: off
"""
# `cache: off`: job B repeats job A's calls, which the shared response cache would answer without the service


def _cli(*args: str, timeout: float = 400, stdout_only: bool = False) -> str:
    t0 = time.perf_counter()
    proc = subprocess.run([EMOCAUSTICS, *args], capture_output=True, text=True, timeout=timeout,
                          env=_cluster.client_env(), cwd=REPO)
    print(f"emocaustics {args[0]} {args[1]}: {time.perf_counter() - t0:.1f} s")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"emocaustics {' '.join(args)} exited {proc.returncode}:\n{out[-5000:]}"
    return proc.stdout if stdout_only else out


def test_kept_model_is_listed_attached_by_later_jobs_and_serve_and_stopped(tmp_path):
    cluster = _cluster.LocalCluster()
    try:
        cluster.start_head(num_cpus=2)
        address = f"127.0.0.1:{cluster.gcs_port}"

        def services() -> list[dict]:
            return json.loads(_cli("models", "--json", "--ray-address", address, stdout_only=True))

        (tmp_path / "a.yaml").write_text(JOB % ("kept", MODEL % ", keep_alive: 10m"), encoding="utf-8")
        (tmp_path / "b.yaml").write_text(JOB % ("attached", MODEL % ""), encoding="utf-8")
        (tmp_path / "models.yaml").write_text("models:\n  smoke: %s\n" % (MODEL % ""), encoding="utf-8")

        log_a = _cli("run", str(tmp_path / "a.yaml"), "--ray-address", address, "--out", str(tmp_path / "a"),
                     "--allow-failures")
        assert "engine(s) started" in log_a
        (first,) = services()  # job A has ended: its model is still there
        assert first["name"] == "smoke" and first["state"] == "ready" and first["replicas_up"] == 1
        assert first["engine_starts"] == 1 and first["requests"] > 0 and first["idle_timeout"] == 600

        log_b = _cli("run", str(tmp_path / "b.yaml"), "--ray-address", address, "--out", str(tmp_path / "b"),
                     "--allow-failures")
        assert "attached to the running model service" in log_b
        (second,) = services()
        assert second["id"] == first["id"] and second["engine_starts"] == 1  # no second engine start
        assert second["engine_started_at"] == first["engine_started_at"]
        assert second["requests"] > first["requests"]  # job B's calls went to the service

        served = _cli("serve", str(tmp_path / "models.yaml"), "--ray-address", address)
        assert "already running" in served and f"id {first['id']}" in served
        (third,) = services()
        assert third["engine_starts"] == 1
        assert "smoke" in _cli("models", "--ray-address", address)  # the table

        assert first["id"] in _cli("models", "stop", "smoke", "--ray-address", address)
        assert services() == []
        listed = cluster.ray_cli("list", "actors", "--address", cluster.address, "--format", "json", "--filter",
                                 "state=ALIVE", "--limit", "100").stdout
        alive = json.loads(listed) if listed.strip().startswith("[") else []  # else "No resource in the cluster"
        assert not [a for a in alive if a.get("class_name") in ("VLLMEngineActor", "ServiceKeeper")], alive
    finally:
        cluster.close()



RESTART_JOB = """name: restarted
dataset: {subset: sample}
models:
  smoke: %s
runs:
  - {task: sextuple, method: window, model: smoke}
  - {task: emotion, method: window, model: smoke}
  - {task: sextuple, method: direct, model: smoke}
scoring: {embedder: minilm, judge: none}
concurrency: 1
"""


def _predicted(run_dir: Path) -> int:
    return len(list((run_dir / "predictions").glob("*smoke*/output_*_[0-9]*.json")))


# Behind the soak marker (`make soak`): two engine starts on a `ray start` head, four minutes of the 35-minute suite on
# 2 cores; the re-attach itself is tested without the engine in tests/models/test_models_services.py.
@pytest.mark.soak
def test_a_job_survives_its_service_being_stopped_and_served_again(tmp_path):
    """`models stop` + `serve` of the service a running job is attached to (a new engine under the same names, while
    the job has samples in flight and to go): the job waits, re-attaches and ends with every sample scored once, no
    failure from the restart, exit 0."""
    import polars as pl

    cluster = _cluster.LocalCluster()
    child = None
    try:
        cluster.start_head(num_cpus=2)
        address = f"127.0.0.1:{cluster.gcs_port}"
        (tmp_path / "models.yaml").write_text("models:\n  smoke: %s\n" % (MODEL % ""), encoding="utf-8")
        (tmp_path / "job.yaml").write_text(RESTART_JOB % (MODEL % ""), encoding="utf-8")
        _cli("serve", str(tmp_path / "models.yaml"), "--ray-address", address)
        run_dir = tmp_path / "run"
        log = (tmp_path / "job.out").open("wb")
        child = subprocess.Popen([EMOCAUSTICS, "run", str(tmp_path / "job.yaml"), "--ray-address", address, "--out",
                                  str(run_dir), "--allow-failures"], stdout=log, stderr=subprocess.STDOUT,
                                 env=_cluster.client_env(), cwd=REPO)
        deadline = time.monotonic() + 300
        while "attached to the running model service" not in (tmp_path / "job.out").read_text(errors="replace"):
            assert child.poll() is None and time.monotonic() < deadline, (tmp_path / "job.out").read_text()[-3000:]
            time.sleep(0.2)
        _cli("models", "stop", "smoke", "--ray-address", address)  # seconds, while the job's first config runs
        done_at_stop = _predicted(run_dir)
        assert child.poll() is None and done_at_stop < 24, "the job ended before its service stopped: lengthen it"
        time.sleep(3)
        assert child.poll() is None, "the job gave up while its service was down"
        _cli("serve", str(tmp_path / "models.yaml"), "--ray-address", address)  # a new engine, the same names
        rc = child.wait(timeout=600)
        out = (tmp_path / "job.out").read_text(errors="replace")
        assert rc == 0, out[-5000:]
        assert "is gone (stopped or restarting)" in out and "is back; re-attached" in out, out[-5000:]
        scores = pl.read_parquet(run_dir / "scores.parquet").filter(pl.col("run").str.contains("smoke"))
        per_config = scores.group_by("run").agg(pl.col("sample_id").n_unique())["sample_id"].to_list()
        assert scores.height == 24 and per_config == [8, 8, 8]  # every dialogue of every config once: none lost
        reasons = [str(r) for r in scores.filter(pl.col("failed"))["reason"].to_list()]
        assert not [r for r in reasons if "replica" in r or "Service" in r], reasons  # the restart failed none
        print(f"{done_at_stop} of 24 dialogues done when the service stopped; {len(reasons)} failed (random model)")
    finally:
        if child is not None and child.poll() is None:
            child.kill()
            child.wait(30)
        cluster.close()
