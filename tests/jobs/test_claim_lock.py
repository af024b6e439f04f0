"""Issue 53 finding 4: two runs into the same new `--out` both ran (the "folder is free" check and the claim raced).
A run folder is claimed by an exclusive `flock` of its `run.lock`, held for the run's life: of two real processes
claiming one new folder exactly one wins, the other is refused with a line naming the first (pid, host, start,
command); a holder killed mid-run leaves the folder claimable, so its resume works. No Ray, no model: the `count`
test task, a tiny Python snippet per process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from emocaustics.core.errors import RunFolderTaken
from emocaustics.jobs import rundir
from emocaustics.jobs.spec import JobSpec
from emocaustics.jobs.configs import resolve as _resolved  # the claim takes the job as resolved

RUNS = Path(__file__).resolve().parents[1] / "runs"  # count_task.py, the test task
JOB = {"name": "h", "dataset": {"n": 3}, "runs": [{"task": "count", "method": "ask", "model": "m"}],
       "models": {"m": {"spec": "vllm:org/model"}}}
# claims the folder (argv[1]: the folder, argv[2]: "resume" or not), waits for argv[4] to exist (so that both
# processes have checked the folder before either starts: the race, every time), starts, says so, then holds it for
# argv[3] seconds
SNIPPET = textwrap.dedent("""
    import sys, time
    from count_task import CountTask
    from emocaustics.core.task import register
    from emocaustics.jobs import rundir
    from emocaustics.jobs.configs import resolve
    from emocaustics.jobs.spec import JobSpec
    from pathlib import Path
    register(CountTask())
    job = JobSpec.model_validate(%r)
    try:
        run_dir = Path(sys.argv[1])
        c = rundir.claim(run_dir, resolve(job, run_dir), resume=sys.argv[2] == "resume", force=False)
        print("CHECKED", flush=True)
        while not Path(sys.argv[4]).exists():
            time.sleep(0.01)
        rundir.start(c)
    except Exception as exc:
        print("REFUSED", exc, flush=True)
        sys.exit(2)
    print("CLAIMED", flush=True)
    time.sleep(float(sys.argv[3]))
""") % JOB


def _spawn(run_dir: Path, mode: str = "fresh", hold: float = 0.5, go: Path | None = None) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(RUNS), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", SNIPPET, str(run_dir), mode, str(hold), str(go or "/")],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "CHECKED", proc.communicate()
    return proc


def _rest(proc: subprocess.Popen) -> str:
    """What the process prints after CHECKED, to its end. Not `communicate(timeout=...)`: that reads the pipe's file
    descriptor, past the lines `readline` already buffered (a REFUSED that came with CHECKED would be lost)."""
    out = proc.stdout.read()
    proc.wait(timeout=60)
    return out


def test_of_two_processes_on_one_new_folder_exactly_one_runs_and_the_other_is_told_which(tmp_path: Path) -> None:
    run_dir = tmp_path / "new" / "run"
    go = tmp_path / "go"
    # both hold until killed: a winner that let go after a fixed time could be gone before a loaded machine let the
    # loser start, and the loser would then meet a free lock (what the killed-holder test below checks), not a refusal
    procs = [_spawn(run_dir, hold=60, go=go), _spawn(run_dir, hold=60, go=go)]  # both found the folder free
    go.touch()
    try:
        firsts = [p.stdout.readline() for p in procs]  # each one's verdict: CLAIMED (then it holds) or REFUSED ...
        said = sorted(line.split()[0] for line in firsts)
        assert said == ["CLAIMED", "REFUSED"], firsts
        w = 0 if firsts[0].startswith("CLAIMED") else 1
        winner, loser = procs[w], procs[1 - w]
        refusal = firsts[1 - w] + _rest(loser)
        assert str(run_dir) in refusal and f"pid {winner.pid} on " in refusal and " since 20" in refusal, refusal
        assert "-c" in refusal or sys.executable in refusal  # the command that holds it
        assert loser.returncode == 2 and winner.poll() is None  # refused while the winner still held the folder
        assert json.loads((run_dir / "run.json").read_text(encoding="utf-8"))["state"] == "running"
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=30)


def test_a_killed_holder_leaves_the_folder_claimable_and_its_run_resumes(tmp_path: Path, count_task) -> None:
    run_dir = tmp_path / "run"
    holder = _spawn(run_dir, hold=30)
    assert holder.stdout.readline().strip() == "CLAIMED"
    second = _spawn(run_dir, "resume", hold=0)
    assert _rest(second).startswith("REFUSED") and second.returncode == 2
    holder.send_signal(signal.SIGKILL)  # no clean-up at all: the kernel lets go of the lock
    holder.wait(timeout=30)
    job = JobSpec.model_validate(JOB)
    c = rundir.claim(run_dir, _resolved(job, run_dir), resume=True, force=False)
    rundir.start(c)
    assert c.resumed and json.loads((run_dir / "run.json").read_text(encoding="utf-8"))["state"] == "running"
    rundir.finish(c)


def test_a_run_that_ended_while_another_waited_to_start_is_not_overwritten(tmp_path: Path, count_task) -> None:
    """Both claimed a free folder; the first ran and finished before the second started: the second is refused when
    it starts (the check is made again under the lock)."""
    job = JobSpec.model_validate(JOB)
    first, second = (rundir.claim(tmp_path / "run", _resolved(job, tmp_path / "run"), resume=False, force=False)
                     for _ in range(2))
    rundir.start(first)
    rundir.finish(first)
    with pytest.raises(RunFolderTaken, match="holds a finished run of job 'h'"):
        rundir.start(second)


def test_force_does_not_move_a_folder_from_under_a_run_still_going_in_it(tmp_path: Path, count_task) -> None:
    run_dir = tmp_path / "run"
    holder = _spawn(run_dir, hold=30)
    try:
        assert holder.stdout.readline().strip() == "CLAIMED"
        c = rundir.claim(run_dir, _resolved(JobSpec.model_validate(JOB), run_dir), resume=False, force=True)
        with pytest.raises(RunFolderTaken, match=f"pid {holder.pid} on "):
            rundir.start(c)
        assert run_dir.is_dir() and not c.moved_to.exists()
    finally:
        holder.kill()
        holder.wait(timeout=30)
