"""`connect()` without an address starts a Ray of its own: a `ray_current_cluster` file left by a `ray start` head
that is gone (a killed test cluster, a rebooted head) must not fail the run. Runs in a child process with its own Ray
temp dir, so the test session's Ray is untouched."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

CHILD = """
import ray
from emocaustics.core.cluster import connect
assert connect(num_cpus=1, object_store_memory=80_000_000)
print("cpus", int(ray.cluster_resources()["CPU"]))
ray.shutdown()
"""


@pytest.mark.slow
def test_a_stale_current_cluster_file_does_not_stop_a_local_run() -> None:
    tmp = tempfile.mkdtemp(prefix="rt", dir="/tmp")  # short: Ray's socket paths live under it
    try:
        (Path(tmp) / "ray").mkdir()
        (Path(tmp) / "ray" / "ray_current_cluster").write_text("127.0.0.1:9\n")  # nothing listens there
        env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
        env["RAY_TMPDIR"] = tmp
        out = subprocess.run([sys.executable, "-c", CHILD], cwd=REPO, env=env, capture_output=True, text=True,
                             timeout=180)
        assert out.returncode == 0, out.stderr[-2000:]
        assert "cpus 1" in out.stdout
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
