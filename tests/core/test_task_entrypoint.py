"""A task in a package of its own: installed with pip (into a folder of its own, so the project's venv is left as it
was) and found through the `emocaustics.tasks` entry-point group, it is listed by `emocaustics tasks`, its data is
fetched by `emocaustics data fetch` (a file:// URL with a sha256), it is run by `emocaustics run` and its predictions
are scored by `emocaustics score`, without a line of `emocaustics/` naming it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
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


PARITY_JSON = '{"numbers": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}\n'  # the bytes whose sha256 parity_task.py declares


@pytest.fixture
def published(installed, tmp_path) -> dict[str, str]:
    """The parity numbers "published" at a file:// URL, and a fetch cache of this test's own."""
    served = tmp_path / "server" / "parity.json"
    served.parent.mkdir()
    served.write_text(PARITY_JSON, encoding="utf-8")
    return installed | {"PARITY_DATA_URL": served.as_uri(), "EMOCAUSTICS_CACHE": str(tmp_path / "cache")}


def test_data_fetch_verifies_and_unpacks_the_plugin_data(published, tmp_path):
    proc = emocaustics(published, "data", "fetch", "parity", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    cached = tmp_path / "cache" / "datasets" / "parity"
    assert (cached / "parity.json").read_text(encoding="utf-8") == PARITY_JSON
    assert hashlib.sha256(PARITY_JSON.encode()).hexdigest() in (cached / "SOURCE.md").read_text(encoding="utf-8")
    assert str(cached) in proc.stdout
    # --to: another folder; the same bytes from a mirror given with --url
    mirror = tmp_path / "mirror.json"
    mirror.write_text(PARITY_JSON, encoding="utf-8")
    proc = emocaustics(published, "data", "fetch", "parity", "--to", str(tmp_path / "copy"), "--url",
                       mirror.as_uri(), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"EMOCAUSTICS_PARITY_DATA={tmp_path / 'copy'}" in proc.stdout
    # other bytes at the URL: a named error (URL, expected and actual sha256), one line, exit 2, nothing written
    Path(published["PARITY_DATA_URL"].removeprefix("file://")).write_text('{"numbers": [1]}\n', encoding="utf-8")
    proc = emocaustics(published, "data", "fetch", "parity", "--to", str(tmp_path / "bad"), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    actual = hashlib.sha256(b'{"numbers": [1]}\n').hexdigest()
    assert f"sha256 mismatch: expected {hashlib.sha256(PARITY_JSON.encode()).hexdigest()}, got {actual}" in proc.stderr
    assert published["PARITY_DATA_URL"] in proc.stderr and proc.stderr.count("\n") == 1
    assert not (tmp_path / "bad").exists() and "Traceback" not in proc.stderr


def test_the_plugin_task_runs_as_a_job(published, tmp_path):
    job = tmp_path / "parity.yaml"
    job.write_text("name: parity\ndataset: {n: 8}\nruns:\n  - {task: parity, method: oracle}\n"
                   "  - {task: parity, method: always-even}\nscoring: {embedder: minilm}\n", encoding="utf-8")
    proc = emocaustics(published, "run", str(job), "--out", str(tmp_path / "none"), cwd=tmp_path)
    assert proc.returncode == 2 and "emocaustics data fetch parity" in proc.stderr, proc.stderr
    assert emocaustics(published, "data", "fetch", "parity", cwd=tmp_path).returncode == 0
    proc = emocaustics(published, "run", str(job), "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    scores = pl.read_parquet(tmp_path / "run" / "scores.parquet")
    by_run = dict(scores.group_by("run").agg(pl.col("score").mean()).iter_rows())
    assert by_run == {"parity_oracle": 1.0, "parity_always-even": 0.5}
    assert "parity_always-even" in (tmp_path / "run" / "summary.md").read_text(encoding="utf-8")

    # `score parity` on the run's predictions: the job's figure, from Task.load + read_predictions + Task.score
    pred = tmp_path / "run" / "predictions" / "parity_always-even"
    proc = emocaustics(published, "score", "parity", "--pred", str(pred), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert (got["primary_metric"], got["value"], got["samples"], got["failed"]) == ("accuracy", 0.5, 8, 0)
    proc = emocaustics(published, "score", "parity", "--pred", str(pred), cwd=tmp_path)
    assert proc.returncode == 0 and "parity: accuracy 0.5000 over 8 samples, 0 failed" in proc.stdout, proc.stderr

    # a sample without a prediction is a failure (as in the job): exit 3, unless --allow-failures
    holed = tmp_path / "holed"
    shutil.copytree(pred, holed)
    lines = (holed / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    (holed / "predictions.jsonl").write_text("\n".join(line for line in lines if '"n3"' not in line) + "\n")
    proc = emocaustics(published, "score", "parity", "--pred", str(holed), "--json", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    got = json.loads(proc.stdout)
    assert got["failed"] == 1 and got["failures"][0]["id"] == "n3" and got["value"] == 0.5  # n3 odd: was wrong
    assert "1 of 8 samples failed" in proc.stderr
    proc = emocaustics(published, "score", "parity", "--pred", str(holed), "--allow-failures", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr

    # -D / -T: options of the dataset and the task; predictions of no chosen sample are named, not scored
    proc = emocaustics(published, "score", "parity", "--pred", str(pred), "-D", "n=4", "-T", "method=oracle",
                       "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["samples"] == 4 and "4 prediction(s)" in proc.stderr and "n7" in proc.stderr
    proc = emocaustics(published, "score", "parity", "--pred", str(pred), "-D", "n=lots", cwd=tmp_path)
    assert proc.returncode == 2 and "n:" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr

    # predictions that pair with no sample: a usage error, nothing scored
    other = tmp_path / "other"
    other.mkdir()
    (other / "predictions.jsonl").write_text('{"id": "x1", "prediction": true}\n', encoding="utf-8")
    proc = emocaustics(published, "score", "parity", "--pred", str(other), cwd=tmp_path)
    assert proc.returncode == 2 and "no prediction pairs with any of the 10 samples" in proc.stderr, proc.stderr


def test_a_broken_plugin_is_a_named_error(installed, tmp_path):
    site = Path(installed["PYTHONPATH"])
    broken = tmp_path / "site"
    subprocess.run(["cp", "-r", str(site), str(broken)], check=True)
    (broken / "parity_task.py").write_text("raise ImportError('parity needs a package that is not installed')\n")
    proc = emocaustics(installed | {"PYTHONPATH": str(broken)}, "tasks", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "task plug-in 'parity'" in proc.stderr and "not installed" in proc.stderr
    assert "Traceback" not in proc.stderr
