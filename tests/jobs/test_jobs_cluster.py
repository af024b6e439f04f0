"""Jobs on a real Ray cluster started with `ray start` (loopback, token auth), submitted with `ray job submit`.

1. One head: `jobs/submit.sh tests/jobs/submit.yaml` -> the job succeeds -> scores.parquet read with Polars: in
   tests/jobs/test_jobs_services.py, on that module's head and its kept model service (no head or engine of its own),
   as is a job's scoring on the cluster it names.
2. Two simulated nodes on this machine (a head and a worker, each `ray start` with its own custom resource): the smoke
   model with replicas=2 and placement=spread -> its two engine actors run on two different nodes, the job succeeds.

Safety on a shared machine (the helper: tests/fakes/local_cluster.py): every cluster has its own ports (free ones,
picked there) and its own --temp-dir, so a plain `ray.init()` elsewhere (the test session's own Ray, other people's
tests) never finds and joins it. `ray stop --force` is NOT used: it kills every Ray process of the user on the
machine. Each `ray start --block` runs in a new session and the teardown ends exactly the processes it started (and
their descendants, collected before killing).
These clusters start an engine of their own (not the session's shared one): they are small and marked slow.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from fakes.local_cluster import LocalCluster, client_env

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


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


# Behind the soak marker (`make soak`, with the chaos soak of tests/reliability/test_soak.py, which also runs a head and
# a worker): two `ray start` nodes and an engine on each cost three minutes of the 35-minute suite on 2 cores.
@pytest.mark.soak
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
