"""A replica's life around the engine, without the engine: start progress, the cause of a death, and the watcher
that ends a dead replica's engine processes (models/pool.py, models/replica_death.py, models/reaper.py)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from emocaustics.models import reaper, replica_death
from emocaustics.models.base import ChatRequest
from emocaustics.models.pool import ModelPool


class SlowStartActor:
    """Stands in for VLLMEngineActor: its engine takes a while to start."""

    def __init__(self, model, engine_opts, name, cache_id=None):
        self.seconds = float(engine_opts.get("start_seconds", 0))

    async def start(self):
        await asyncio.sleep(self.seconds)
        return {"instance": f"i{os.getpid()}", "pid": os.getpid(), "start_seconds": self.seconds}


class DyingActor(SlowStartActor):
    """Its engine dies on the first request, after it has left its cause as the real replica does."""

    async def generate(self, requests):
        replica_death.record({"reason": "engine core failed: RuntimeError: CPU Generator does not use offset",
                              "pid": os.getpid(), "logs": ["/tmp/ray/worker-x.out"], "time": time.time()})
        os._exit(1)


def test_start_reports_progress_while_replica_engines_start(ray_local) -> None:
    pool = ModelPool("m", name="slow", replicas=2, actor_cls=SlowStartActor, engine_opts={"start_seconds": 1.5},
                     gpus_per_replica=0, max_restarts=0)
    try:
        lines: list[str] = []
        asyncio.run(pool.start(report=lines.append, every=0.1))
        assert lines, "no progress line while two engines took 1.5 s to start"
        assert "0 of 2 replica engine(s) ready" in lines[0] and "waiting for 2" in lines[0]
        assert all(line.startswith("model slow: ") for line in lines)
    finally:
        pool.shutdown()


def test_a_dead_replica_is_reported_once_with_the_cause_it_recorded(ray_local, capfd) -> None:
    pool = ModelPool("m", name="dies", replicas=1, actor_cls=DyingActor, gpus_per_replica=0, max_restarts=0,
                     retries=0)
    try:
        out = asyncio.run(pool.generate([ChatRequest(messages=({"role": "user", "content": "q"},))] * 5))
        errors = {c.error for c in out}
        assert len(errors) == 1, errors
        (error,) = errors
        assert "CPU Generator does not use offset" in error and "worker-x.out" in error, error
        told = [ln for ln in capfd.readouterr().err.splitlines() if "replica 0 died" in ln]
        assert len(told) == 1, told  # once per death, not once per request
    finally:
        pool.shutdown()


def test_last_error_takes_the_cause_after_the_traceback_not_startup_warnings() -> None:
    log = textwrap.dedent("""\
        (Worker pid=3) WARNING 11-24 [utils.py:597] Failed to create oneDNN linear. Exception: could not create
        (Worker pid=3) ERROR 11-24 [multiproc_executor.py:1063] Traceback (most recent call last):
        (Worker pid=3) ERROR 11-24 [multiproc_executor.py:1063] RuntimeError: CPU Generator does not use offset
        (MainProcess pid=1) ERROR 11-24 [async_llm.py:906] vllm.v1.engine.exceptions.EngineDeadError: EngineCore died
        """)
    assert replica_death.last_error(log) == "RuntimeError: CPU Generator does not use offset"
    assert replica_death.last_error(log.splitlines()[0]) is None  # a warning at start is no cause


def test_reaper_ends_the_engine_processes_of_a_process_killed_hard(tmp_path: Path) -> None:
    """A parent that starts a long-lived child (the engine core) and its watcher, then is SIGKILLed."""
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent(f"""\
        import os, subprocess, sys, time
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from emocaustics.models import reaper
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        watcher = reaper.watch([child.pid])
        print(child.pid, flush=True)
        time.sleep(600)
        """))
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    child_pid = int(parent.stdout.readline())
    assert reaper.start_time(child_pid) is not None
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 20
    while _alive(child_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child_pid), "the child outlived its killed parent"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
