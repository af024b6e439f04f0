"""A raylet that dies under a command: one line and exit status 5 (core/errors.py), not Ray's raw raylet log dump
and an undocumented status 1 (issue 25 point 9).

The command runs in a child process with a Ray of its own, so that killing that Ray's raylet touches nothing else.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from emocaustics.core.errors import EXIT_CLUSTER_LOST

pytestmark = pytest.mark.slow

DRIVER = textwrap.dedent("""\
    import argparse, sys, time
    import emocaustics.cli as cli
    from emocaustics.core import cluster

    def command(args):
        cluster.connect(num_cpus=1, object_store_memory=80_000_000)
        import ray
        raylet = ray._private.worker._global_node.all_processes["raylet"][0].process
        raylet.kill()
        deadline = time.monotonic() + 60
        while not cluster.RAYLET_DIED and time.monotonic() < deadline:  # Ray announces the death to the driver
            time.sleep(0.2)
        raise RuntimeError("the next Ray call failed")  # what a job's next step meets, whichever step it is

    class Parser:
        def parse_args(self, argv):
            return argparse.Namespace(func=command)

    cli.build_parser = Parser
    sys.exit(cli.main([]))
    """)


def test_a_dead_raylet_ends_the_command_with_status_5_and_one_line(tmp_path: Path) -> None:
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240,
                          cwd=Path(__file__).resolve().parents[2])
    out = done.stdout + done.stderr
    assert done.returncode == EXIT_CLUSTER_LOST, out[-3000:]
    assert "[state-dump]" not in out and "Last 20 lines of the Raylet logs" not in out, out[-3000:]
    assert sum("raylet died" in line for line in out.splitlines()) >= 1
    assert "the Ray cluster was lost" in done.stderr and "exit status 5" in done.stderr
    assert "Traceback" not in out, out[-3000:]


def test_another_nodes_raylet_death_is_one_line_and_no_lost_cluster(ray_local, monkeypatch, capsys) -> None:
    """On a cluster of several nodes (the chaos soak stops a worker's raylet), Ray's message does not say whose raylet
    died: while the driver's own raylet still answers on its socket, the command goes on (no exit 5 later)."""
    from ray._private import worker

    from emocaustics.core import cluster

    assert cluster._own_raylet_alive()  # this session's Ray: its raylet answers
    monkeypatch.setattr(cluster, "RAYLET_DIED", [])
    monkeypatch.setattr(cluster, "OTHER_RAYLET_DIED", [])
    cluster._watch_for_raylet_death()
    died = {"pid": "raylet", "lines": ["[...] Raylet is terminated. Termination is unexpected. ..."], "ip": "x"}
    worker.print_to_stdstream(died, None)
    worker.print_to_stdstream(died, None)
    assert cluster.RAYLET_DIED == [] and cluster.lost_cluster(RuntimeError("a later error")) is None
    assert capsys.readouterr().err.count("raylet on another node died") == 1
