"""Model services with the real engine on a `ray start` head (one head start for the module, one engine start), as a
user runs them:

job A says `keep_alive` -> its smoke service stays up after it -> `emocaustics models` lists it -> job B (same spec, no
keep_alive) attaches instead of starting an engine -> `emocaustics serve` of the same spec attaches too -> a job sent
with `ray job submit` (`jobs/submit.sh tests/jobs/submit.yaml`: calibration rows and one smoke config) runs on the
cluster's engine -> `models stop` ends it -> `emocaustics models` then prints its own line only (no Ray INFO lines).
And `jobs/submit.sh` as docs/clusters.md's example runs it (no `--out`): the data folder comes from the submitter.
And a job with no model hosted here that names the cluster: its scoring runs there.
The stand-in tests of models/services.py (idle timeout, affinity, priority) are in tests/models.

The head is shared by the module's tests (a `ray start` head and its teardown cost about 20 s on 2 busy cores, and
the submitted job attaching to the kept service saves an engine start); the helpers (ports, token auth, teardown of
exactly the processes started) are test_jobs_cluster.py's."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
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


DATA_JOB = """name: submitted
dataset: {subset: null, ids: [1, 2]}
runs:
  - {task: sextuple, method: oracle}
scoring: {embedder: minilm, judge: none}
"""


@pytest.fixture(scope="module")
def head(tmp_path_factory):
    """The module's `ray start` head. It knows no data folder and has an empty cache (as a cluster's head does), so
    that a job it runs gets its data from the submitter's environment or from nowhere."""
    cluster = _cluster.LocalCluster()
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.delenv("EMOCAUSTICS_DATA", raising=False)
            mp.setenv("EMOCAUSTICS_CACHE", str(tmp_path_factory.mktemp("head-cache")))
            cluster.start_head(num_cpus=2)
        yield cluster
    finally:
        cluster.close()


def _cli(*args: str, timeout: float = 400, stdout_only: bool = False) -> str:
    t0 = time.perf_counter()
    proc = subprocess.run([EMOCAUSTICS, *args], capture_output=True, text=True, timeout=timeout,
                          env=_cluster.client_env(), cwd=REPO)
    print(f"emocaustics {args[0]} {args[1]}: {time.perf_counter() - t0:.1f} s")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"emocaustics {' '.join(args)} exited {proc.returncode}:\n{out[-5000:]}"
    return proc.stdout if stdout_only else out


@pytest.mark.published
def test_submit_without_out_forwards_data_and_writes_where_it_says(head, tmp_path, monkeypatch, published_root):
    """`jobs/submit.sh` as docs/clusters.md's example runs it (no `--out`): the job gets its data folder from the
    submitter's environment (the head's has none), and its results land under the folder it was submitted from, at
    the absolute path the job prints, not in Ray's temporary copy of the project. Calibration rows only."""
    monkeypatch.delenv("EMOCAUSTICS_DATA", raising=False)
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "empty-cache"))
    user_dir = tmp_path / "user"
    user_dir.mkdir()
    # Outside the project (one machine: the job reads it at this path); submitted with a relative path.
    (user_dir / "job.yaml").write_text(DATA_JOB, encoding="utf-8")
    env = _cluster.client_env() | {"EMOCAUSTICS_PY": sys.executable, "EMOCAUSTICS_DATA": str(published_root)}
    proc = subprocess.run([str(REPO / "jobs" / "submit.sh"), "job.yaml", "--address", head.address],
                          capture_output=True, text=True, timeout=480, env=env, cwd=user_dir)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-5000:]
    assert "EMOCAUSTICS_DATA" in log  # named among the forwarded variables
    runs = list((user_dir / "runs" / "submitted").iterdir())
    assert len(runs) == 1, runs
    run_dir = runs[0]
    assert f"configs -> {run_dir}" in log  # the job printed where its results really are
    assert f"summary: {run_dir / 'summary.md'}" in log
    scores = pl.read_parquet(run_dir / "scores.parquet")
    assert scores.height == 2 and scores["score"].to_list() == [1.0, 1.0]


def test_kept_model_is_listed_attached_by_later_jobs_and_serve_and_stopped(head, tmp_path, monkeypatch):
    from emocaustics.core.datasource import cache_root

    # The submitted job's driver runs on the head (whose cache is empty): it is sent this process's cache folder, so
    # that its smoke model is the service's very folder (the service's identity holds the model's path).
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(cache_root()))
    address = f"127.0.0.1:{head.gcs_port}"

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

    _submitted_job_runs_on_the_cluster(head, tmp_path / "submitted")  # submit.yaml's smoke spec is this service's
    (fourth,) = services()
    assert fourth["engine_starts"] == 1 and fourth["requests"] > third["requests"]  # the job's calls came here

    assert first["id"] in _cli("models", "stop", "smoke", "--ray-address", address)
    assert services() == []
    listed = head.ray_cli("list", "actors", "--address", head.address, "--format", "json", "--filter",
                          "state=ALIVE", "--limit", "100").stdout
    alive = json.loads(listed) if listed.strip().startswith("[") else []  # else "No resource in the cluster"
    assert not [a for a in alive if a.get("class_name") in ("VLLMEngineActor", "ServiceKeeper")], alive

    # Issue 41 point 15: `emocaustics models` on a `ray start` head prints its own lines only: Ray's "Connecting to
    # existing Ray cluster ..." INFO lines went to the terminal (`core.cluster.connect` joins at WARNING).
    quiet = subprocess.run([EMOCAUSTICS, "models", "--ray-address", address], capture_output=True, text=True,
                           env=_cluster.client_env(), cwd=REPO, timeout=180)
    assert quiet.returncode == 0, quiet.stderr[-2000:]
    assert quiet.stdout == "no model services running\n"
    assert quiet.stderr == ""  # was: two "INFO worker.py ... Connect..." lines


def _submitted_job_runs_on_the_cluster(head, out: Path) -> None:
    """`jobs/submit.sh tests/jobs/submit.yaml` (2 dialogues: oracle, baseline and one smoke config) succeeds and its
    scores.parquet holds every config, the smoke one extracted on the cluster's engine."""
    t0 = time.perf_counter()
    log = _cluster.submit(head, "tests/jobs/submit.yaml", out)
    print(f"ray job submit (2 dialogues, oracle/baseline + 1 smoke config): {time.perf_counter() - t0:.1f} s")
    scores = pl.read_parquet(out / "scores.parquet")
    runs = dict(scores.group_by("run").agg(pl.col("score").mean()).iter_rows())
    assert set(runs) == {"sextuple_oracle", "sextuple_baseline", "sextuple_direct_smoke"}
    assert runs["sextuple_oracle"] == 1.0
    model = scores.filter(pl.col("run") == "sextuple_direct_smoke")
    assert model.height == 2 and (model["kind"] == "engine-check").all() and model["model"].to_list() == ["smoke"] * 2
    assert model["llm_calls"].sum() > 0  # extraction ran on the cluster's engine
    # ...and the dialogues came through it (a failure row per dialogue would also carry calls and a row each)
    assert (~model["failed"]).sum() >= 1, model.select("sample_id", "failed", "reason").to_dicts()
    assert (out / "summary.md").is_file() and (out / "report.html").is_file()
    assert "[solve sextuple_direct_smoke] 2/2" in log  # progress lines reach `ray job` logs


@pytest.mark.published
def test_scoring_runs_on_the_named_cluster(head, tmp_path, published_root):
    """A job with no model hosted here (calibration rows only) that names a Ray address: its EmoCaustics scoring of
    more than 50 dialogues (the Ray Data path) runs on that cluster, not on a private local Ray the scorer starts."""
    job = tmp_path / "named-cluster.yaml"
    ids = list(range(1, 53))  # 52 dialogues: above the 50 at which EmoCaustics scoring fans out through Ray Data
    job.write_text(f"name: named-cluster\ndataset: {{subset: null, ids: {ids}}}\n"
                   "runs:\n  - {task: sextuple, method: oracle}\n"
                   "scoring: {embedder: minilm, judge: none}\n", encoding="utf-8")
    out = tmp_path / "run"
    env = _cluster.client_env() | {"EMOCAUSTICS_DATA": str(published_root)}
    proc = subprocess.run([EMOCAUSTICS, "run", str(job), "--out", str(out),
                           "--ray-address", f"127.0.0.1:{head.gcs_port}"],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-5000:]
    scores = pl.read_parquet(out / "scores.parquet")
    assert scores.height == len(ids) and scores["score"].to_list() == [1.0] * len(ids)
    actors = json.loads(head.ray_cli("list", "actors", "--address", head.address, "--format", "json",
                                        "--limit", "1000").stdout)
    stages = [a["class_name"] for a in actors if "EmbedStage" in (a.get("class_name") or "")]
    assert stages, f"no scoring actor ran on the named cluster; its actors: {[a.get('class_name') for a in actors]}"


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
