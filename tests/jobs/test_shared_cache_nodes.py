"""The shared response cache on a cluster of two nodes (a head and a worker started with `ray start` on this machine,
tests/fakes/local_cluster.py): the smoke model's two replicas run on the two nodes and each opens the cache at the
path the driver hands it, so every answer of the first run lands in one file, and a second run of the job asks
neither engine anything. The nodes share this machine's filesystem, as nodes that mount one shared filesystem at the
same path would (docs/exports.md, "The shared cache", says what happens without one).

Behind the soak marker (`make soak`): two engines on two `ray start` nodes cost minutes on 2 cores."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import polars as pl
import pytest

from fakes.local_cluster import BIN, LocalCluster, client_env

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.soak, pytest.mark.slow]


def test_replicas_on_two_nodes_share_one_cache(tmp_path: Path) -> None:
    cluster = LocalCluster()
    try:
        cluster.start_head(num_cpus=1, resources={"node_a": 1})
        cluster.add_worker(num_cpus=1, resources={"node_b": 1})
        node_ids = {n["node_id"] for n in cluster.wait_nodes(2)}
        env = client_env() | {"EMOCAUSTICS_DATA": os.environ.get("EMOCAUSTICS_DATA", "")}
        calls = []
        for name in ("first", "second"):
            proc = subprocess.run([str(BIN / "emocaustics"), "run", str(REPO / "tests/jobs/two-nodes.yaml"), "--out",
                                   str(tmp_path / name), "--ray-address", f"127.0.0.1:{cluster.gcs_port}"],
                                  capture_output=True, text=True, timeout=900, env=env, cwd=tmp_path)
            assert proc.returncode == 0, (proc.stdout + proc.stderr)[-5000:]
            scores = pl.read_parquet(tmp_path / name / "scores.parquet").filter(pl.col("run") == "sextuple_direct_smoke")
            calls.append((int(scores["llm_calls"].sum()), int(scores["cache_hits"].sum())))
        actors = json.loads(cluster.ray_cli("list", "actors", "--address", cluster.address, "--format", "json",
                                            "--filter", "class_name=VLLMEngineActor", "--limit", "100").stdout)
        assert {a["node_id"] for a in actors} == node_ids  # replicas ran on both nodes
    finally:
        cluster.close()
    (asked, _), (again, hits) = calls
    assert asked > 0 and again == 0 and hits == asked  # the second run: every answer from the one cache
    with sqlite3.connect(Path(os.environ["EMOCAUSTICS_RESPONSE_CACHE"]) / "responses.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == asked
