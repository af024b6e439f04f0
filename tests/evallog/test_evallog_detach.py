"""Issue 55 item 2: the eval log is closed without holding the exit. A process that ends while its writer child is
behind (stopped by SIGSTOP, as a starved child is) exits at once; the child, let run again, writes every sample's
line on its own and ends. Before, the exit's finalizer waited for the child (up to two minutes, then killed it with
the lines unwritten)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

N = 20

PARENT = """
import os, signal, sys
from emocaustics.evallog.writer import EvalLog
log = EvalLog(sys.argv[1], secrets=[])
cfg = log.config('cfg')
line = {{'ok': True, 'log': {{'calls': [], 'texts': {{'t': 'some text'}}}}}}
cfg.emit('0', line).result(60)
print(log._child.pid, flush=True)
os.kill(log._child.pid, signal.SIGSTOP)
for i in range(1, {n}):
    cfg.emit(str(i), line)
"""  # ends as `eval --no-score` does: nothing closes the log


def _alive(pid: int) -> bool:
    """Running or stopped (an orphan's zombie, which nothing may reap in a container, is not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def test_the_exit_does_not_wait_for_a_stopped_child_which_then_completes_the_log(tmp_path: Path) -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT.format(n=N), str(tmp_path)], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    pid = int(parent.stdout.readline())  # type: ignore[union-attr]
    try:
        assert parent.wait(timeout=30) == 0  # before: the exit waited for the stopped child
        assert _alive(pid)
    finally:
        os.kill(pid, signal.SIGCONT)
        parent.kill()
        parent.wait()
        parent.stdout.close()  # type: ignore[union-attr]
    deadline = time.monotonic() + 30
    while _alive(pid) and time.monotonic() < deadline:  # the child ends by itself, its backlog written
        time.sleep(0.05)
    assert not _alive(pid)
    staged = (tmp_path / "evallog" / "staging" / "cfg.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(staged) == N


def test_the_child_runs_at_the_drivers_priority(tmp_path: Path) -> None:
    """A config's finish waits for the child (the report reads the log): a child below the driver's priority, starved
    by busy processes at the driver's, held it for seconds (issue 55's contention runs)."""
    from emocaustics.evallog.writer import EvalLog

    log = EvalLog(tmp_path, secrets=[])
    log.config("cfg").emit("0", {"ok": True, "log": {"calls": [], "texts": {}}}).result(60)
    pid = log._child.pid  # type: ignore[union-attr]
    try:
        assert os.getpriority(os.PRIO_PROCESS, pid) == os.getpriority(os.PRIO_PROCESS, 0)
    finally:
        log.close()
