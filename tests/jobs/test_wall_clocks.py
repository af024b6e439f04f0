"""run.json is written by several threads of one job: the clock of every config solved side by side (jobs/together.py)
saves its running time every few seconds, and the job itself writes its start and its end. Each write must be whole
and none may fail for another's sake (CI once showed a clock thread's rename fail: two writers shared one temporary
file name). Pure file rules: no Ray, no model."""

from __future__ import annotations

import json
import threading
import time

from emocaustics.jobs import rundir


def _claim(tmp_path) -> rundir.Claim:
    c = rundir.Claim(tmp_path / "run", False, {"job": "j", "hash": "h", "state": "new", "wall_parts": {}})
    rundir.start(c)
    return c


def test_clocks_of_configs_side_by_side_and_the_job_write_run_json_without_losing_a_write(tmp_path, monkeypatch):
    failures: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: failures.append(args.exc_value))
    c = _claim(tmp_path)
    clocks = [rundir.WallClock(c, f"config{i}", interval=0.0005) for i in range(6)]
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:  # the job's own writes meanwhile, as `start` and `finish` make them
        rundir.finish(c)
    sums = [clock.stop() for clock in clocks]
    assert not failures, failures[:3]
    record = json.loads((c.run_dir / rundir.RUN_FILE).read_text())
    assert record["state"] == "finished"
    assert [record["wall_parts"][f"config{i}"][0] for i in range(6)] == sums  # each clock's last save is on disk
    assert not list(c.run_dir.glob(".*.tmp"))  # no temporary file left behind


def test_a_clock_stopped_twice_saves_once_and_gives_the_same_sum(tmp_path):
    c = _claim(tmp_path)
    with rundir.WallClock(c, "a", interval=60) as clock:
        time.sleep(0.05)
        first = clock.stop()
    assert clock.stop() == first > 0  # __exit__ stopped it again: nothing changed
    assert json.loads((c.run_dir / rundir.RUN_FILE).read_text())["wall_parts"]["a"] == [first]
