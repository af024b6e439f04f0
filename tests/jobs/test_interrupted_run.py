"""Issue 53 item 16: a Ctrl-C of `emocaustics run` printed no resume command and left run.json "running". Now the run's
run.json says `interrupted`, its folder is let go, and the command that continues it is printed (status 130). The
job is stood in for by a claim of its folder and a Ctrl-C (no Ray, no model: the `count` test task)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from emocaustics.cli import main
from emocaustics.jobs import rundir
from emocaustics.jobs.configs import resolve as _resolved  # the claim takes the job as resolved

JOB = {"name": "h", "dataset": {"n": 3}, "runs": [{"task": "count", "method": "ask", "model": "m"}],
       "models": {"m": {"spec": "vllm:org/model"}}}


def test_a_ctrl_c_marks_the_run_interrupted_and_prints_its_resume_command(tmp_path, count_task, monkeypatch,
                                                                           capsys):
    job_file, run_dir = tmp_path / "job.yaml", tmp_path / "out"
    job_file.write_text(yaml.safe_dump(JOB), encoding="utf-8")

    def run_job(job, *, out, resume, force, **_):  # the job's start, then a Ctrl-C mid-way
        rundir.start(rundir.claim(Path(out), _resolved(job, Path(out)), resume=resume, force=force))
        raise KeyboardInterrupt

    monkeypatch.setattr("emocaustics.jobs.runner.run_job", run_job)
    assert main(["run", str(job_file), "--out", str(run_dir)]) == 130
    err = capsys.readouterr().err
    assert f"emocaustics run {job_file} --resume --out {run_dir}" in err, err
    assert json.loads((run_dir / "run.json").read_text(encoding="utf-8"))["state"] == "interrupted"
    assert rundir._HELD == {}  # let go: a resume in this process or another takes the folder
    assert main(["run", str(job_file), "--out", str(run_dir), "--resume"]) == 130  # the resume is accepted
    assert json.loads((run_dir / "run.json").read_text(encoding="utf-8"))["state"] == "interrupted"
