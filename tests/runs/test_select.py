"""Sample selection owned by the core (`select: {ids, limit}` on a job or a run): applied by the runner right after
`Task.load` for every task, so the dry run's counts, the solve, the scores, the provenance and a resume all see the
same samples; an unknown id is a usage error naming it and the dataset; a job without `select` keeps its hash."""

from __future__ import annotations

import json

import polars as pl
import pytest
from count_task import CALIBRATION_JOB, write_job

from emocaustics.cli import main
from emocaustics.core.errors import UsageError
from emocaustics.jobs.spec import JobSpec, SelectSpec, load_job

SELECT_JOB = CALIBRATION_JOB + "select: {select}\n"


def test_a_job_select_limits_what_is_scored_and_recorded(count_task, tmp_path):
    job = write_job(tmp_path / "j.yaml", SELECT_JOB.format(name="s", n=8, method="right",
                                                          select="{ids: [s5, s1, s3, s7], limit: 3}"))
    run = tmp_path / "run"
    assert main(["run", str(job), "--out", str(run)]) == 0
    scores = pl.read_parquet(run / "scores.parquet")
    # ids keep the data's order (s1, s3, s5, s7), then the first 3
    assert scores["sample_id"].to_list() == ["s1", "s3", "s5"]
    rec = json.loads((run / "predictions" / "count_right" / "provenance.json").read_text())
    assert sorted(rec["samples"]) == ["s1", "s3", "s5"]
    assert rec["dataset_info"]["loaded_samples"] == 8 and rec["dataset_info"]["selected_samples"] == 3


def test_a_runs_own_select_wins_and_ints_match_string_ids(count_task, tmp_path):
    job = JobSpec.model_validate({"name": "r", "dataset": {"n": 6}, "select": {"limit": 1},
                                  "runs": [{"task": "count", "method": "right"},
                                           {"task": "count", "method": "wrong", "select": {"ids": ["s2", "s4"]}}]})
    from emocaustics.jobs.runner import run_job

    run = run_job(job, out=str(tmp_path / "run"), check=False)
    scores = pl.read_parquet(run / "scores.parquet")
    by = {r: sorted(scores.filter(pl.col("run") == r)["sample_id"].to_list()) for r in scores["run"].unique()}
    assert by == {"count_right": ["s0"], "count_wrong": ["s2", "s4"]}
    assert SelectSpec.model_validate({"ids": [3, "x", 4]}).ids == ["3", "x", "4"]
    assert SelectSpec.model_validate({"ids": 7}).ids == ["7"]


def test_an_unknown_id_names_it_and_the_dataset(count_task, tmp_path, capsys):
    job = write_job(tmp_path / "j.yaml", SELECT_JOB.format(name="u", n=4, method="right",
                                                          select="{ids: [s1, nope, s9]}"))
    assert main(["run", str(job), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "select.ids: dataset count (n=4) has no sample nope, s9" in err
    assert not (tmp_path / "run").exists()
    with pytest.raises(UsageError, match="has no sample nope"):
        SelectSpec(ids=["nope"]).apply([], "dataset count")


def test_the_dry_run_counts_the_selected_samples(count_task, tmp_path, capsys):
    job = write_job(tmp_path / "j.yaml", SELECT_JOB.format(name="d", n=9, method="right", select="{limit: 4}"))
    assert main(["run", str(job), "--dry-run", "--out", str(tmp_path / "run")]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| count_right |"))
    assert row.split("|")[5].strip() == "4"
    job = write_job(tmp_path / "k.yaml", SELECT_JOB.format(name="d", n=9, method="right", select="{ids: [zz]}"))
    assert main(["run", str(job), "--dry-run", "--out", str(tmp_path / "run")]) == 2  # a problem: exit 2
    assert "problem 1: config count_right: dataset: select.ids: dataset count (n=9) has no sample zz" \
           in capsys.readouterr().out


def test_the_hash_is_unchanged_without_select_and_changes_with_it(count_task, tmp_path):
    from emocaustics.jobs.rundir import job_hash, result_fields

    plain = load_job(write_job(tmp_path / "a.yaml", CALIBRATION_JOB.format(name="h", n=4, method="right")))
    assert "select" not in json.dumps(result_fields(plain))  # jobs written before `select` keep their hash
    limited = load_job(write_job(tmp_path / "b.yaml", SELECT_JOB.format(name="h", n=4, method="right",
                                                                        select="{limit: 2}")))
    assert job_hash(limited) != job_hash(plain)
    assert job_hash(limited) == job_hash(load_job(tmp_path / "b.yaml"))


def test_a_resume_keeps_the_selection(count_task, tmp_path, capsys):
    job = write_job(tmp_path / "j.yaml", SELECT_JOB.format(name="re", n=6, method="right", select="{limit: 2}"))
    run = tmp_path / "run"
    assert main(["run", str(job), "--out", str(run)]) == 0
    (run / "run.json").write_text(json.dumps({**json.loads((run / "run.json").read_text()), "state": "running"}))
    assert main(["run", str(job), "--out", str(run), "--resume"]) == 0
    assert "count_right: calibration predictor, scored again (2 samples)" in capsys.readouterr().out
    assert pl.read_parquet(run / "scores.parquet").height == 2
