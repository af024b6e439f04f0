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
"""


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

