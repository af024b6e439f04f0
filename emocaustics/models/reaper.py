"""Ends a replica's engine processes when the replica actor ends, however it ends (`python -m` this module).

vLLM's engine core is a process the replica actor spawns, and it does not watch its parent: when the actor is killed
hard (`ray.kill`, SIGKILL, the OOM killer, a raylet that dies and takes its workers along) the engine core lives on as
an orphan holding its model and KV cache (2.7 GB seen), and its own workers, which watch the engine core, with it.
Nothing can run in a process that is SIGKILLed, so the watch sits outside it: this small process reads the engine's
process ids from its stdin, a pipe from the actor, and when the pipe closes (the kernel closes it when the actor
exits, however it exits) kills those processes that are still the ones it was told about (same start time), the
engine core's children included.

Linux only (/proc); elsewhere the replica runs without it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat): with the pid, an identity
    that a reused pid does not share."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2:].split()[19]


def children(pid: int) -> list[int]:
    """Every descendant of `pid` now alive, depth first."""
    by_parent: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        by_parent.setdefault(ppid, []).append(int(entry.name))
    out: list[int] = []
    stack = list(by_parent.get(pid, []))
    while stack:
        p = stack.pop()
        out.append(p)
        stack.extend(by_parent.get(p, []))
    return out


def watch(pids: list[int]) -> subprocess.Popen[bytes] | None:
    """Start the reaper for `pids` (this process's engine processes); keep the returned handle for as long as they
    should live. None where there is no /proc."""
    if not Path("/proc/self/stat").exists():
        return None
    proc = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            start_new_session=True, close_fds=True)  # its own session: a group kill spares it
    assert proc.stdin is not None
    for pid in pids:
        started = start_time(pid)
        if started is not None and pid != proc.pid:
            proc.stdin.write(f"{pid} {started}\n".encode())
    proc.stdin.flush()  # the pipe stays open: its end is the signal
    return proc


def _reap(lines: IO[str]) -> None:
    watched: list[tuple[int, str]] = []
    for line in lines:  # returns at EOF: the actor is gone
        pid, started = line.split()
        watched.append((int(pid), started))
    targets = []
    for pid, started in watched:
        if start_time(pid) == started:  # still that process, not a reused pid
            targets.append(pid)
            targets.extend(p for p in children(pid) if p not in targets)
    for pid in targets:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:  # already gone
            pass


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C to the job must not end the watch before the actor
    _reap(sys.stdin)
