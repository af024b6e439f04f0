"""Jobs on a real Ray cluster started with `ray start` (loopback, token auth), submitted with `ray job submit`.

1. One head: `jobs/submit.sh tests/jobs/submit.yaml` -> the job succeeds -> scores.parquet read with Polars.
2. Two simulated nodes on this machine (a head and a worker, each `ray start` with its own custom resource): the smoke
   model with replicas=2 and placement=spread -> its two engine actors run on two different nodes, the job succeeds.

Safety on a shared machine: every cluster has its own ports (free ones, picked here) and its own --temp-dir, so a
plain `ray.init()` elsewhere (the test session's own Ray, other people's tests) never finds and joins it. `ray stop
--force` is NOT used: it kills every Ray process of the user on the machine. Each `ray start --block` runs in a new
session and the teardown ends exactly the processes it started (and their descendants, collected before killing).
These clusters start an engine of their own (not the session's shared one): they are small and marked slow.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl
import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
RAY = str(BIN / "ray")
pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def client_env() -> dict[str, str]:
    """What a client of a token-auth cluster needs (see shared/notes/ray.md); offline model hub."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(RAY_AUTH_MODE="token", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               PYTHONUNBUFFERED="1")
    return env


class LocalCluster:
    """A head (and optional workers) started with `ray start --block` on 127.0.0.1; `close()` ends exactly those."""

    def __init__(self) -> None:
        # Short path: Ray's unix sockets live under it and have a length limit.
        self.temp_dir = tempfile.mkdtemp(prefix="rayjt-", dir="/tmp")
        self.gcs_port, self.dashboard_port = free_port(), free_port()
        self.procs: list[subprocess.Popen] = []
        self.logs: list[Path] = []

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.dashboard_port}"

    def _node_ports(self) -> list[str]:
        return ["--node-ip-address=127.0.0.1", f"--node-manager-port={free_port()}",
                f"--object-manager-port={free_port()}", f"--dashboard-agent-listen-port={free_port()}",
                f"--dashboard-agent-grpc-port={free_port()}", f"--metrics-export-port={free_port()}",
                f"--runtime-env-agent-port={free_port()}", "--object-store-memory=200000000", "--disable-usage-stats"]

    def _start(self, args: list[str], name: str) -> None:
        log = Path(self.temp_dir) / f"{name}.out"
        self.logs.append(log)
        fh = log.open("wb")
        # New session: the teardown signals this process group, never anything by name.
        proc = subprocess.Popen([RAY, "start", "--block", *args, *self._node_ports()], stdout=fh,
                                stderr=subprocess.STDOUT, env=client_env(), start_new_session=True)
        self.procs.append(proc)

    def start_head(self, num_cpus: int = 2, resources: dict[str, float] | None = None) -> None:
        # A fresh machine has no ~/.ray/auth_token until some local Ray made one: `ray start` with token auth then
        # refuses to start. Make it as an operator would (`ray get-auth-token --generate` keeps an existing one).
        self.ray_cli("get-auth-token", "--generate")
        self._start(["--head", f"--port={self.gcs_port}", f"--num-cpus={num_cpus}", f"--temp-dir={self.temp_dir}",
                     "--include-dashboard=true", "--dashboard-host=127.0.0.1", f"--dashboard-port={self.dashboard_port}",
                     f"--ray-client-server-port={free_port()}", f"--resources={json.dumps(resources or {})}"], "head")
        self.wait_nodes(1)

    def add_worker(self, num_cpus: int = 1, resources: dict[str, float] | None = None) -> None:
        # Its own --temp-dir: two nodes on one machine sharing one would both unpack the job's working_dir into the
        # same runtime_resources folder, each replacing files under the other's feet (on real machines they differ).
        name = f"w{len(self.procs)}"
        self._start([f"--address=127.0.0.1:{self.gcs_port}", f"--num-cpus={num_cpus}",
                     f"--temp-dir={self.temp_dir}/{name}", f"--resources={json.dumps(resources or {})}"], name)

    def ray_cli(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run([RAY, *args], capture_output=True, text=True, timeout=timeout, env=client_env())

    def nodes(self) -> list[dict]:
        try:
            out = self.ray_cli("list", "nodes", "--address", self.address, "--format", "json", "--filter", "state=ALIVE")
        except subprocess.TimeoutExpired:  # the dashboard is still starting (slow on a loaded 2-core machine)
            return []
        return json.loads(out.stdout) if out.returncode == 0 and out.stdout.strip().startswith("[") else []

    def wait_nodes(self, n: int, timeout: float = 120) -> list[dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for p, log in zip(self.procs, self.logs):
                assert p.poll() is None, f"ray start exited ({p.returncode}):\n{log.read_text(errors='replace')[-3000:]}"
            nodes = self.nodes()
            if len(nodes) >= n:
                return nodes
            time.sleep(1)
        raise AssertionError(f"{n} node(s) not up within {timeout} s:\n"
                             + "\n".join(log.read_text(errors="replace")[-2000:] for log in self.logs))

    def close(self) -> None:
        import psutil

        doomed: list[psutil.Process] = []
        for p in self.procs:
            try:
                root = psutil.Process(p.pid)
                doomed += [root, *root.children(recursive=True)]  # collected first: children get reparented
            except psutil.NoSuchProcess:
                pass
        for p in self.procs:  # `ray start --block` tears its node down on SIGTERM
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        gone, alive = psutil.wait_procs(doomed, timeout=20)
        for proc in alive:  # whatever ignored the polite request (engine cores, workers)
            try:
                proc.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(alive, timeout=10)
        shutil.rmtree(self.temp_dir, ignore_errors=True)


@pytest.fixture
def cluster():
    c = LocalCluster()
    try:
        yield c
    finally:
        c.close()


def submit(cluster: LocalCluster, job: str, out: Path, timeout: float = 480) -> str:
    """`jobs/submit.sh JOB --address URL -- --out OUT`; returns the job's log, asserting that it succeeded."""
    env = client_env() | {"EMOCAUSTICS_PY": sys.executable}
    proc = subprocess.run([str(REPO / "jobs" / "submit.sh"), job, "--address", cluster.address, "--", "--out", str(out)],
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"ray job submit failed ({proc.returncode}):\n{log[-5000:]}"
    assert "succeeded" in log, log[-5000:]
    job_id = next(w.strip("'") for line in log.splitlines() if "succeeded" in line for w in line.split()
                  if w.strip("'").startswith("raysubmit_"))
    status = cluster.ray_cli("job", "status", job_id, "--address", cluster.address)
    assert f"Job '{job_id}' succeeded" in status.stdout + status.stderr, status.stdout + status.stderr
    (out.parent / "submit.log").write_text(log, encoding="utf-8")  # kept beside the run for post-mortems
    return log


def test_ray_job_submit_on_a_started_head(cluster, tmp_path):
    cluster.start_head()
    out = tmp_path / "run"
    t0 = time.perf_counter()
    log = submit(cluster, "tests/jobs/submit.yaml", out)
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


def test_two_nodes_replicas_on_both(cluster, tmp_path):
    cluster.start_head(num_cpus=1, resources={"node_a": 1})
    cluster.add_worker(num_cpus=1, resources={"node_b": 1})
    nodes = cluster.wait_nodes(2)
    node_ids = {n["node_id"] for n in nodes}
    assert len(node_ids) == 2
    out = tmp_path / "run"
    t0 = time.perf_counter()
    submit(cluster, "tests/jobs/two-nodes.yaml", out)
    print(f"two-node job (2 replicas, 2 dialogues): {time.perf_counter() - t0:.1f} s")
    actors = json.loads(cluster.ray_cli("list", "actors", "--address", cluster.address, "--format", "json",
                                        "--filter", "class_name=VLLMEngineActor", "--limit", "100").stdout)
    placed = {a["name"]: a["node_id"] for a in actors}
    assert len(placed) == 2, actors  # the two replicas of the one smoke model
    assert set(placed.values()) == node_ids, f"replicas not on both nodes: {placed} vs nodes {node_ids}"
    scores = pl.read_parquet(out / "scores.parquet")
    model = scores.filter(pl.col("run") == "sextuple_direct_smoke")
    assert model.height == 2 and model["llm_calls"].sum() > 0
    assert (~model["failed"]).sum() >= 1, model.select("sample_id", "failed", "reason").to_dicts()
    assert scores.filter(pl.col("run") == "sextuple_oracle")["score"].to_list() == [1.0, 1.0]


@pytest.mark.published
def test_scoring_runs_on_the_named_cluster(cluster, tmp_path, published_root):
    """A job with no model hosted here (calibration rows only) that names a Ray address: its EmoCaustics scoring of
    more than 50 dialogues (the Ray Data path) runs on that cluster, not on a private local Ray the scorer starts."""
    cluster.start_head()
    job = tmp_path / "named-cluster.yaml"
    ids = list(range(1, 53))  # 52 dialogues: above the 50 at which EmoCaustics scoring fans out through Ray Data
    job.write_text(f"name: named-cluster\ndataset: {{subset: null, ids: {ids}}}\n"
                   "runs:\n  - {task: sextuple, method: oracle}\n"
                   "scoring: {embedder: minilm, judge: none}\n", encoding="utf-8")
    out = tmp_path / "run"
    env = client_env() | {"EMOCAUSTICS_DATA": str(published_root)}
    proc = subprocess.run([str(BIN / "emocaustics"), "run", str(job), "--out", str(out),
                           "--ray-address", f"127.0.0.1:{cluster.gcs_port}"],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-5000:]
    scores = pl.read_parquet(out / "scores.parquet")
    assert scores.height == len(ids) and scores["score"].to_list() == [1.0] * len(ids)
    actors = json.loads(cluster.ray_cli("list", "actors", "--address", cluster.address, "--format", "json",
                                        "--limit", "1000").stdout)
    stages = [a["class_name"] for a in actors if "EmbedStage" in (a.get("class_name") or "")]
    assert stages, f"no scoring actor ran on the named cluster; its actors: {[a.get('class_name') for a in actors]}"
