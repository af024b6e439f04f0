"""Issue 41 point 15: `emocaustics models` on a `ray start` head prints its own lines only: Ray's "Connecting to
existing Ray cluster ..." INFO lines went to the terminal (`core.cluster.connect` joins at WARNING)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fakes.local_cluster import LocalCluster, client_env

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


def test_models_on_a_running_cluster_prints_no_ray_info_lines():
    cluster = LocalCluster()
    try:
        cluster.start_head(num_cpus=1)
        proc = subprocess.run([str(Path(sys.executable).parent / "emocaustics"), "models", "--ray-address",
                               f"127.0.0.1:{cluster.gcs_port}"], capture_output=True, text=True, env=client_env(),
                              cwd=REPO, timeout=180)
    finally:
        cluster.close()
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == "no model services running\n"
    assert proc.stderr == ""  # was: two "INFO worker.py ... Connect..." lines
