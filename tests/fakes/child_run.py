"""Run the `emocaustics` CLI as a child process with a Ray of its own, and clean up after it even when it was killed.

The child starts its own local Ray (`RAY_TMPDIR` points at a fresh, short temp dir, so its session logs are
inspectable and its processes are recognisable), in its own process group (so a SIGKILL of the "driver" can be
followed by a clean-up of exactly its processes, never the test session's own Ray).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Child:
    proc: subprocess.Popen
    ray_tmp: Path
    stdout_path: Path
    stderr_path: Path
    started: float = field(default_factory=time.monotonic)

    def output(self) -> tuple[str, str]:
        return (self.stdout_path.read_text(encoding="utf-8", errors="replace"),
                self.stderr_path.read_text(encoding="utf-8", errors="replace"))

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout=timeout)

    def kill_driver(self) -> None:
        """SIGKILL the CLI process only: what a crashed or OOM-killed driver looks like."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)


def make_ray_tmp() -> Path:
    # Ray puts unix sockets under its temp dir; pytest's tmp paths are too long for the 107-byte socket limit.
    return Path(tempfile.mkdtemp(prefix="ecrt-", dir="/tmp"))


def start_cli(args: list[str], *, logs: Path, env: dict[str, str] | None = None,
              ray_tmp: Path | None = None) -> Child:
    ray_tmp = ray_tmp or make_ray_tmp()
    logs.mkdir(parents=True, exist_ok=True)
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                "RAY_TMPDIR": str(ray_tmp), **(env or {})}
    full_env.pop("RAY_ADDRESS", None)  # never join the test session's cluster
    n = len(list(logs.glob("stdout*")))
    out, err = logs / f"stdout{n}.txt", logs / f"stderr{n}.txt"
    proc = subprocess.Popen([sys.executable, "-m", "emocaustics", *args], cwd=REPO, env=full_env,
                            stdout=out.open("wb"), stderr=err.open("wb"), start_new_session=True)
    return Child(proc, ray_tmp, out, err)


def _processes_of(ray_tmp: Path, pgid: int | None) -> list:
    import psutil

    mark = str(ray_tmp)
    found = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        if p.pid == os.getpid():
            continue
        try:
            cmd = " ".join(p.info["cmdline"] or [])
            in_group = pgid is not None and os.getpgid(p.pid) == pgid
            env_mark = False
            if not in_group and mark not in cmd:
                try:
                    env_mark = p.environ().get("RAY_TMPDIR") == mark
                except (psutil.AccessDenied, psutil.ZombieProcess):
                    env_mark = False
            if in_group or mark in cmd or env_mark:
                found.append(p)
        except (psutil.NoSuchProcess, ProcessLookupError, PermissionError):
            continue
    return found


def cleanup(child: Child, *, remove_tmp: bool = True) -> int:
    """Kill every process of the child's Ray (its group, and anything naming or inheriting its temp dir).
    Returns how many were still alive."""
    import psutil

    if child.proc.poll() is None:
        child.proc.kill()
        child.proc.wait(timeout=30)
    left = _processes_of(child.ray_tmp, child.proc.pid)
    for p in left:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(left, timeout=15)
    if remove_tmp:
        shutil.rmtree(child.ray_tmp, ignore_errors=True)
    return len(left)
