"""A workbench job: one or more command-line verbs (`human process ...`, `aer validate ...`, `score ecpe ... --json`)
called, one after the other, in a worker process of its own, through the very function the command line runs
(`emocaustics.cli.main`, handed in by `emocaustics ui`): the numbers are the command's by construction.

Each step's stdout and stderr go to `<step>.out` and `<step>.err` in the job's folder (under the output folder), and
its exit status to `steps.json`; a step that fails ends the job (a submission that does not validate is not scored).
The worker leads a process group of its own, so that cancel really stops it: the group is sent SIGTERM, then SIGKILL
after a grace period (a scorer in the middle of a unit, its threads and any process it started included).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Step = tuple[str, list[str]]  # (name, argv of the verb)
GRACE_S = 5.0


def _worker(run_verb: Callable[[list[str]], int], steps: list[Step], folder: str) -> None:
    os.setsid()  # the group that cancel signals
    done: list[dict[str, Any]] = []
    for name, argv in steps:
        base = Path(folder) / name
        with open(f"{base}.out", "wb") as out, open(f"{base}.err", "wb") as err:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            try:
                code = int(run_verb(argv) or 0)
            except SystemExit as exc:  # argparse's usage errors
                code = exc.code if isinstance(exc.code, int) else 2
            except BaseException:  # noqa: BLE001 (a crash is this step's result, with its traceback)
                traceback.print_exc()
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
        done.append({"name": name, "argv": argv, "status": code})
        (Path(folder) / "steps.json").write_text(json.dumps(done), encoding="utf-8")
        if code not in (0, 3):  # 3: scored, some samples failed (the page lists them)
            break


@dataclass
class Job:
    id: str
    kind: str
    title: str
    folder: Path
    steps: list[Step]
    started: float = field(default_factory=time.time)
    state: str = "running"  # running | done | failed | cancelled
    ended: float | None = None
    pid: int | None = None
    process: Any = None


class Jobs:
    def __init__(self, run_verb: Callable[[list[str]], int]) -> None:
        self.run_verb = run_verb
        self.jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._ctx = multiprocessing.get_context("spawn")  # a fresh interpreter: no copy of the server's threads

    def start(self, kind: str, title: str, folder: Path, steps: list[Step]) -> Job:
        job = Job(id=folder.name, kind=kind, title=title, folder=folder, steps=steps)
        job.process = self._ctx.Process(target=_worker, args=(self.run_verb, steps, str(folder)), daemon=True)
        job.process.start()
        job.pid = job.process.pid
        with self._lock:
            self.jobs[job.id] = job
        threading.Thread(target=self._watch, args=(job,), daemon=True).start()
        return job

    def _watch(self, job: Job) -> None:
        job.process.join()
        with self._lock:
            if job.state == "running":
                ran = self.step_results(job)
                ok = len(ran) == len(job.steps) and all(s["status"] in (0, 3) for s in ran)
                job.state = "done" if ok and job.process.exitcode == 0 else "failed"
            job.ended = time.time()

    def cancel(self, job: Job) -> None:
        with self._lock:
            if job.state != "running":
                return
            job.state = "cancelled"
        _signal(job.pid, signal.SIGTERM)
        job.process.terminate()  # the worker itself, in case it had not yet made its group
        job.process.join(GRACE_S)
        if job.process.is_alive():
            _signal(job.pid, signal.SIGKILL)
            job.process.kill()
            job.process.join()
        _signal(job.pid, signal.SIGKILL)  # what the group started and left behind

    def stop_all(self) -> None:
        for job in list(self.jobs.values()):
            self.cancel(job)

    @staticmethod
    def step_results(job: Job) -> list[dict[str, Any]]:
        path = job.folder / "steps.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else []


def _signal(pid: int | None, sig: int) -> None:
    if pid is None:
        return
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
