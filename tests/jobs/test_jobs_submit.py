"""`jobs/submit.sh` against a real `ray start` head, as docs/clusters.md's example runs it (no `--out`): the job
gets its data folder from the submitter's environment (the head's has none), and its results land under the folder
it was submitted from, at the absolute path the job prints, not in Ray's temporary copy of the project.

Calibration rows only (no model, no engine): the cost is one head start and one small job. The head and the helpers
(ports, token auth, teardown of exactly the processes started) are test_jobs_cluster.py's."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("_cluster_helpers", Path(__file__).with_name("test_jobs_cluster.py"))
_cluster = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(_cluster)  # type: ignore[union-attr]

pytestmark = pytest.mark.slow

JOB = """name: submitted
dataset: {subset: null, ids: [1, 2]}
runs:
  - {task: sextuple, method: oracle}
scoring: {embedder: minilm, judge: none}
"""


@pytest.mark.published
def test_submit_without_out_forwards_data_and_writes_where_it_says(tmp_path, monkeypatch, published_root):
    # The head (and so the job, unless the runtime env says otherwise) knows no data folder and has an empty cache.
    monkeypatch.delenv("EMOCAUSTICS_DATA", raising=False)
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "empty-cache"))
    cluster = _cluster.LocalCluster()
    try:
        cluster.start_head(num_cpus=2)
        user_dir = tmp_path / "user"
        user_dir.mkdir()
        # Outside the project (one machine: the job reads it at this path); submitted with a relative path.
        (user_dir / "job.yaml").write_text(JOB, encoding="utf-8")
        env = _cluster.client_env() | {"EMOCAUSTICS_PY": sys.executable, "EMOCAUSTICS_DATA": str(published_root)}
        proc = subprocess.run([str(REPO / "jobs" / "submit.sh"), "job.yaml", "--address", cluster.address],
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
    finally:
        cluster.close()
