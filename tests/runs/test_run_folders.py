"""Run folders are safe: a finished run survives a second job, a --resume of another job and a --resume on a missing
folder (each a named error, nothing changed on disk); --force moves the old run aside, never deletes it; a job
refused by its pre-flight leaves nothing behind; a resume says what it skipped and sums a config's wall time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from count_task import CALIBRATION_JOB, snapshot, write_job

from emocaustics.cli import main
from emocaustics.core.errors import NothingToResume, ResumeMismatch, RunFolderTaken
from emocaustics.jobs.runner import run_job
from emocaustics.jobs.spec import load_job


@pytest.fixture
def finished(count_task, tmp_path):
    """A finished run of job `a` (right answers on 4 samples) in tmp_path/run."""
    job_a = write_job(tmp_path / "a.yaml", CALIBRATION_JOB.format(name="a", n=4, method="right"))
    run_dir = tmp_path / "run"
    assert main(["run", str(job_a), "--out", str(run_dir)]) == 0
    record = json.loads((run_dir / "run.json").read_text())
    assert record["state"] == "finished" and record["job"] == "a"
    return run_dir, job_a


def test_a_finished_run_survives_a_second_job(finished, tmp_path, capsys):
    run_dir, _ = finished
    before = snapshot(run_dir)
    job_b = write_job(tmp_path / "b.yaml", CALIBRATION_JOB.format(name="b", n=4, method="wrong"))
    capsys.readouterr()
    assert main(["run", str(job_b), "--out", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert "holds a finished run of job 'a'" in err and "--force" in err and "--resume" in err
    assert snapshot(run_dir) == before
    with pytest.raises(RunFolderTaken):
        run_job(load_job(job_b), out=str(run_dir))
    assert snapshot(run_dir) == before


def test_the_same_job_again_without_resume_is_refused(finished, capsys):
    run_dir, job_a = finished
    before = snapshot(run_dir)
    assert main(["run", str(job_a), "--out", str(run_dir)]) == 2
    assert "finished run of job 'a'" in capsys.readouterr().err
    assert snapshot(run_dir) == before


def test_a_resume_of_another_job_is_refused(finished, tmp_path, capsys):
    run_dir, _ = finished
    before = snapshot(run_dir)
    # Same name, other results (another method): the hash differs, so this is another job.
    job_a2 = write_job(tmp_path / "a2.yaml", CALIBRATION_JOB.format(name="a", n=4, method="wrong"))
    capsys.readouterr()
    assert main(["run", str(job_a2), "--out", str(run_dir), "--resume"]) == 2
    err = capsys.readouterr().err
    assert "not of this job" in err and "they differ in: runs" in err
    with pytest.raises(ResumeMismatch):
        run_job(load_job(job_a2), out=str(run_dir), resume=True)
    assert snapshot(run_dir) == before


def test_a_resume_on_a_missing_folder_is_refused(count_task, tmp_path, capsys):
    job_a = write_job(tmp_path / "a.yaml", CALIBRATION_JOB.format(name="a", n=4, method="right"))
    missing = tmp_path / "nowhere"
    assert main(["run", str(job_a), "--out", str(missing), "--resume"]) == 2
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(NothingToResume):
        run_job(load_job(job_a), out=str(missing), resume=True)
    assert not missing.exists()


def test_force_moves_the_old_run_aside(finished, tmp_path, capsys):
    run_dir, _ = finished
    before = snapshot(run_dir)
    job_b = write_job(tmp_path / "b.yaml", CALIBRATION_JOB.format(name="b", n=4, method="wrong"))
    assert main(["run", str(job_b), "--out", str(run_dir), "--force"]) == 0  # wrong answers score 0; none fails
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("run.replaced-")]
    assert len(aside) == 1 and snapshot(aside[0]) == before  # kept byte for byte
    assert json.loads((run_dir / "run.json").read_text())["job"] == "b"
    assert "was moved to" in capsys.readouterr().out


def test_a_refused_job_leaves_nothing_behind(count_task, tmp_path, capsys):
    bad = write_job(tmp_path / "bad.yaml", CALIBRATION_JOB.format(name="bad", n=-1, method="right"))
    out = tmp_path / "run"
    assert main(["run", str(bad), "--out", str(out)]) == 2
    assert "n must be >= 0" in capsys.readouterr().err
    assert not out.exists()


def test_resume_says_what_it_skips_and_sums_wall_time(finished, capsys):
    run_dir, job_a = finished
    first = json.loads((run_dir / "run.json").read_text())["wall_parts"]["count_right"]
    assert main(["run", str(job_a), "--out", str(run_dir), "--resume"]) == 0
    out = capsys.readouterr().out
    assert "resume: count_right: calibration predictor, scored again (4 samples)" in out
    parts = json.loads((run_dir / "run.json").read_text())["wall_parts"]["count_right"]
    assert len(parts) == 2 and parts[0] == first[0]
    wall = json.loads((run_dir / "wall.json").read_text())
    assert wall["count_right"] == pytest.approx(sum(parts), abs=0.01)


def test_a_job_file_that_is_a_directory_or_binary_is_one_line(tmp_path, capsys):
    assert main(["run", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    blob = tmp_path / "x.yaml"
    blob.write_bytes(b"\xff\xfe\x00\x81binary")
    assert main(["run", str(blob)]) == 2
    assert "not a text file" in capsys.readouterr().err


def test_the_hash_ignores_placement_and_speed_settings_only(count_task):
    from emocaustics.jobs.rundir import job_hash
    from emocaustics.jobs.spec import JobSpec

    base = {"name": "h", "dataset": {"n": 3}, "runs": [{"task": "count", "method": "ask", "model": "m"}],
            "models": {"m": {"spec": "vllm:org/model", "engine": {"max_model_len": 4096}}}}

    def with_model(**changes):
        return JobSpec.model_validate({**base, "models": {"m": {**base["models"]["m"], **changes}}})

    ref = job_hash(JobSpec.model_validate(base))
    assert job_hash(with_model(replicas=4, gpus_per_replica=2, placement="spread")) == ref
    assert job_hash(with_model(engine={"max_model_len": 4096, "gpu_memory_utilization": 0.8})) == ref
    assert job_hash(JobSpec.model_validate({**base, "output": "elsewhere", "concurrency": 8})) == ref
    assert job_hash(with_model(engine={"max_model_len": 8192})) != ref  # longer prompts fit: other results
    assert job_hash(with_model(spec="vllm:org/other")) != ref
    assert job_hash(JobSpec.model_validate({**base, "dataset": {"n": 4}})) != ref
