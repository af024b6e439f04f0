"""The cluster shell scripts without a cluster: a fake `ray` on PATH records what each script asks of it.

- `cluster/start-head.sh` and `start-worker.sh` on a machine without `nvidia-smi` (a CPU head) pass `--num-gpus=0`;
  with a GPU listing they count its GPUs; `NUM_GPUS` wins over both.
- `jobs/submit.sh` forwards the environment a job needs (every `EMOCAUSTICS_*` but the submit-only ones, the API keys)
  through the runtime env, tells the job where it was submitted from (`EMOCAUSTICS_BASE_DIR`: the job's relative
  output folder is resolved there), merges `$EMOCAUSTICS_RUNTIME_ENV`, and never prints a key's value nor puts it on a
  command line (where `ps` shows it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

FAKE_RAY = """#!{python}
import json, os, sys
args = sys.argv[1:]
record = {{"args": args}}
if "--runtime-env" in args:  # the file may be gone once the script ends: keep what it held
    record["runtime_env"] = open(args[args.index("--runtime-env") + 1]).read()
with open(os.environ["FAKE_RAY_LOG"], "a") as fh:
    fh.write(json.dumps(record) + "\\n")
"""

# What the scripts may use from the system; nvidia-smi is not among them (a CPU machine).
TOOLS = ("bash", "env", "dirname", "basename", "wc", "grep", "cat", "mktemp", "rm", "chmod", "realpath", "pwd",
         "readlink", "sed", "tr")


@pytest.fixture
def fake_bin(tmp_path: Path) -> Path:
    """A PATH folder holding the fake `ray` and the system tools the scripts use (links), and nothing else."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    ray = bin_dir / "ray"
    ray.write_text(FAKE_RAY.format(python=sys.executable))
    ray.chmod(0o755)
    return bin_dir


def _run(script: str, args: list[str], bin_dir: Path, tmp_path: Path, cwd: Path | None = None,
         **env: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    log = tmp_path / "ray-calls.jsonl"
    log.unlink(missing_ok=True)
    base = {"PATH": str(bin_dir), "HOME": str(tmp_path), "FAKE_RAY_LOG": str(log)}
    proc = subprocess.run([str(REPO / script), *args], capture_output=True, text=True, timeout=60,
                          env=base | env, cwd=cwd or tmp_path)
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return proc, calls


def _num_gpus(calls: list[dict]) -> list[str]:
    assert len(calls) == 1, calls
    return [a.split("=", 1)[1] for a in calls[0]["args"] if a.startswith("--num-gpus=")]


@pytest.mark.parametrize("script,args", [("cluster/start-head.sh", []), ("cluster/start-worker.sh", ["10.0.0.1"])])
def test_cpu_machine_gets_zero_gpus(script, args, fake_bin, tmp_path):
    assert shutil.which("nvidia-smi", path=str(fake_bin)) is None
    proc, calls = _run(script, args, fake_bin, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert _num_gpus(calls) == ["0"]
    assert calls[0]["args"][0] == "start"


@pytest.mark.parametrize("script,args", [("cluster/start-head.sh", []), ("cluster/start-worker.sh", ["10.0.0.1"])])
def test_gpus_are_counted_and_num_gpus_wins(script, args, fake_bin, tmp_path):
    smi = fake_bin / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H100 (UUID: GPU-a)'\necho 'GPU 1: NVIDIA H100 (UUID: GPU-b)'\n")
    smi.chmod(0o755)
    proc, calls = _run(script, args, fake_bin, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert _num_gpus(calls) == ["2"]
    proc, calls = _run(script, args, fake_bin, tmp_path, NUM_GPUS="3")
    assert _num_gpus(calls) == ["3"]


def test_broken_driver_counts_zero(fake_bin, tmp_path):
    """nvidia-smi present but failing (no driver loaded): a CPU machine as far as Ray is concerned."""
    smi = fake_bin / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate with the driver'\nexit 9\n")
    smi.chmod(0o755)
    proc, calls = _run("cluster/start-head.sh", [], fake_bin, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert _num_gpus(calls) == ["0"]


SECRET = "sk-test-DO-NOT-PRINT-1234567890"


def _submit_env(tmp_path: Path) -> dict[str, str]:
    return {"EMOCAUSTICS_RAY": str(tmp_path / "bin" / "ray"), "EMOCAUSTICS_ECAC_DATA": "/data/ecac", "EMOCAUSTICS_DATA": "/data/emocaustics",
            "EMOCAUSTICS_CACHE": "/cache", "OPENAI_API_KEY": SECRET, "EMOCAUSTICS_API_KEY": SECRET + "-2",
            "EMOCAUSTICS_PY": sys.executable, "UNRELATED_VAR": "x", "RAY_AUTH_MODE": "token"}


def test_submit_forwards_the_job_environment_without_printing_keys(fake_bin, tmp_path):
    where = tmp_path / "here"
    where.mkdir()
    proc, calls = _run("jobs/submit.sh", [str(REPO / "jobs/quickstart.yaml"), "--address", "http://h:8265"],
                       fake_bin, tmp_path, cwd=where, **_submit_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert len(calls) == 1, calls
    args = calls[0]["args"]
    assert args[:2] == ["job", "submit"] and "http://h:8265" in args
    runtime = json.loads(calls[0]["runtime_env"])
    env = runtime["env_vars"]
    assert env["EMOCAUSTICS_ECAC_DATA"] == "/data/ecac" and env["EMOCAUSTICS_DATA"] == "/data/emocaustics"
    assert env["EMOCAUSTICS_CACHE"] == "/cache"
    assert env["OPENAI_API_KEY"] == SECRET and env["EMOCAUSTICS_API_KEY"] == SECRET + "-2"
    assert env["EMOCAUSTICS_BASE_DIR"] == str(where)  # a relative output folder resolves where we submitted from
    assert env["EMOCAUSTICS_SUBMITTED"] == "1"  # its resume hint then says to submit it again
    assert not {"UNRELATED_VAR", "EMOCAUSTICS_PY", "EMOCAUSTICS_RAY"} & set(env)  # submit-only, or not ours
    # The job file is named relative to the uploaded project folder (the job runs in a copy of it).
    assert args[args.index("--") + 1:][-4:] == ["run", "jobs/quickstart.yaml", "--ray-address", "auto"]
    # Keys travel in a file, never on a command line (`ps`) or in what the script prints.
    assert not any(SECRET in a for a in args)
    assert SECRET not in proc.stdout + proc.stderr
    assert "OPENAI_API_KEY" in proc.stdout + proc.stderr  # the names it forwards are shown, the values not
    leftovers = [p for p in Path(os.environ.get("TMPDIR", "/tmp")).glob("emocaustics-runtime-env.*")]
    assert not any(SECRET in p.read_text(errors="replace") for p in leftovers if p.is_file())


def test_submit_merges_the_runtime_env_file(fake_bin, tmp_path):
    spec = tmp_path / "runtime_env.yaml"
    spec.write_text("pip:\n  packages: ['-e .[gpu]']\nenv_vars:\n  TOKENIZERS_PARALLELISM: 'false'\n"
                    "  EMOCAUSTICS_DATA: /from/file\n")
    proc, calls = _run("jobs/submit.sh", ["jobs/quickstart.yaml"], fake_bin, tmp_path, cwd=REPO,
                       EMOCAUSTICS_RUNTIME_ENV=str(spec), **_submit_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    runtime = json.loads(calls[0]["runtime_env"])
    assert runtime["pip"] == {"packages": ["-e .[gpu]"]}
    env = runtime["env_vars"]
    assert env["TOKENIZERS_PARALLELISM"] == "false"
    assert env["EMOCAUSTICS_DATA"] == "/data/emocaustics"  # the submitter's environment wins over the file
    assert env["EMOCAUSTICS_ECAC_DATA"] == "/data/ecac" and "EMOCAUSTICS_RUNTIME_ENV" not in env
    assert env["EMOCAUSTICS_BASE_DIR"] == str(REPO)
