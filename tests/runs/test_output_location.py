"""Where a run's results go, and that the job says so with an absolute path.

A relative `output:` (default `runs`) and a relative `--out` are resolved against `$EMOCAUSTICS_BASE_DIR`, else the
current directory. `jobs/submit.sh` sets the variable to the folder the user submitted from, because a submitted job
runs in Ray's temporary copy of the project: before, its results landed in that copy while the job printed
`runs/<job>/...` (tests/jobs/test_cluster_scripts.py checks that submit.sh forwards it)."""

from __future__ import annotations

from pathlib import Path

from count_task import CALIBRATION_JOB, write_job

from emocaustics.cli import main


def _printed_run_dir(out: str) -> Path:
    line = next(x for x in out.splitlines() if x.startswith("job ") and " -> " in x)
    return Path(line.split(" -> ", 1)[1].removesuffix(" (resumed)"))


def _only_run(root: Path, name: str) -> Path:
    runs = [p for p in (root / "runs" / name).iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return runs[0]


def test_default_output_is_absolute_under_the_current_directory(count_task, tmp_path, monkeypatch, capsys):
    job = write_job(tmp_path / "job.yaml", CALIBRATION_JOB.format(name="here", n=2, method="right"))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("EMOCAUSTICS_BASE_DIR", raising=False)
    assert main(["run", str(job)]) == 0
    out = capsys.readouterr().out
    run_dir = _only_run(cwd, "here")
    printed = _printed_run_dir(out)
    assert printed.is_absolute() and printed == run_dir
    assert f"summary: {run_dir / 'summary.md'}" in out  # every path the job prints is the real, absolute one


def test_base_dir_decides_where_relative_outputs_go(count_task, tmp_path, monkeypatch, capsys):
    """What a submitted job sees: its working directory is Ray's copy of the project, the base dir is where the user
    submitted from."""
    job = write_job(tmp_path / "job.yaml", CALIBRATION_JOB.format(name="sent", n=2, method="right"))
    package_copy, submitted_from = tmp_path / "ray_pkg", tmp_path / "user"
    package_copy.mkdir()
    submitted_from.mkdir()
    monkeypatch.chdir(package_copy)
    monkeypatch.setenv("EMOCAUSTICS_BASE_DIR", str(submitted_from))
    assert main(["run", str(job)]) == 0
    run_dir = _only_run(submitted_from, "sent")
    assert _printed_run_dir(capsys.readouterr().out) == run_dir
    assert (run_dir / "scores.parquet").is_file()
    assert not any(package_copy.iterdir())  # nothing left in the copy Ray deletes
    # --resume finds the latest run there too, and a relative --out is resolved there.
    assert main(["run", str(job), "--resume"]) == 0
    assert _printed_run_dir(capsys.readouterr().out) == run_dir
    assert main(["run", str(job), "--out", "mine"]) == 0
    assert _printed_run_dir(capsys.readouterr().out) == submitted_from / "mine"
    assert (submitted_from / "mine" / "scores.parquet").is_file() and not any(package_copy.iterdir())


def test_an_absolute_output_is_kept(count_task, tmp_path, monkeypatch, capsys):
    target = tmp_path / "elsewhere"
    job = write_job(tmp_path / "job.yaml", CALIBRATION_JOB.format(name="abs", n=2, method="right")
                    + f"output: {target}\n")
    monkeypatch.setenv("EMOCAUSTICS_BASE_DIR", str(tmp_path / "ignored"))
    assert main(["run", str(job)]) == 0
    assert _printed_run_dir(capsys.readouterr().out).parent == target / "abs"
    assert not (tmp_path / "ignored").exists()
