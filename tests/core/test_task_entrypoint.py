"""A task in a package of its own: installed with pip (into a folder of its own, so the project's venv is left as it
was) and found through the `emocaustics.tasks` entry-point group, it is listed by `emocaustics tasks` and run by
`emocaustics run`, without a line of `emocaustics/` naming it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

PLUGIN = Path(__file__).resolve().parent / "plugin_parity"
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, str]:
    target = tmp_path_factory.mktemp("site")
    build = tmp_path_factory.mktemp("build")
    src = build / "plugin_parity"
    subprocess.run(["cp", "-r", str(PLUGIN), str(src)], check=True)  # pip builds in place: keep tests/ clean
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                           "--no-index", "--target", str(target), str(src)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert list(target.glob("emocaustics_parity-*.dist-info/entry_points.txt")), sorted(os.listdir(target))
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = str(target)
    return env


def emocaustics(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "emocaustics"), *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=300)


def test_the_plugin_task_is_listed(installed, tmp_path):
    proc = emocaustics(installed, "tasks", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    parity = next(t for t in json.loads(proc.stdout) if t["task"] == "parity")
    assert parity["calibration"] == ["always-even", "oracle"]


def test_the_plugin_task_runs_as_a_job(installed, tmp_path):
    job = tmp_path / "parity.yaml"
    job.write_text("name: parity\ndataset: {n: 8}\nruns:\n  - {task: parity, method: oracle}\n"
                   "  - {task: parity, method: always-even}\nscoring: {embedder: minilm}\n", encoding="utf-8")
    proc = emocaustics(installed, "run", str(job), "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    scores = pl.read_parquet(tmp_path / "run" / "scores.parquet")
    by_run = dict(scores.group_by("run").agg(pl.col("score").mean()).iter_rows())
    assert by_run == {"parity_oracle": 1.0, "parity_always-even": 0.5}
    assert "parity_always-even" in (tmp_path / "run" / "summary.md").read_text(encoding="utf-8")


def test_a_broken_plugin_is_a_named_error(installed, tmp_path):
    site = Path(installed["PYTHONPATH"])
    broken = tmp_path / "site"
    subprocess.run(["cp", "-r", str(site), str(broken)], check=True)
    (broken / "parity_task.py").write_text("raise ImportError('parity needs a package that is not installed')\n")
    proc = emocaustics(installed | {"PYTHONPATH": str(broken)}, "tasks", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "task plug-in 'parity'" in proc.stderr and "not installed" in proc.stderr
    assert "Traceback" not in proc.stderr
