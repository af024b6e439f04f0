"""The narrative job specs load, and `jobs/narrative-folder.yaml` scores a folder of synthetic file pairs as a job
through Ray Data (threshold lowered so that 40 stories take the Ray path): per-story rows in the common tables that
equal `score narrative`'s figures for the same folder, oracle 1.0 on every story."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from benchmarks.narrative_bench import write_pairs

import emocaustics.tasks.narrative  # noqa: F401  (registers the task)
from emocaustics.jobs.spec import load_job
from emocaustics.tasks.narrative.cli import score_paths
from emocaustics.tasks.narrative.composite import COMPONENTS

JOBS = Path(__file__).resolve().parents[3] / "jobs"


@pytest.mark.parametrize("name", ["narrative-quickstart.yaml", "narrative-folder.yaml"])
def test_job_specs_load(name):
    job = load_job(JOBS / name)
    assert {r.resolve()[0].name for r in job.expand()} == {"narrative"}


def test_folder_job_scores_per_story_through_ray_data(ray_local, tmp_path):
    from emocaustics.jobs.runner import run_job

    data = tmp_path / "data"
    write_pairs(data, 40)
    job = load_job(JOBS / "narrative-folder.yaml",
                   overrides={"dataset": {"narrative": {"data": str(data)}}, "output": str(tmp_path / "runs"),
                              "scoring": {"judge": "none", "narrative_ray_above": 10}})
    run_dir = run_job(job, out=str(tmp_path / "run"))
    records = {r["run"]: r for r in json.loads((run_dir / "configs.json").read_text(encoding="utf-8"))}
    assert {r["summary"]["scoring_path"] for r in records.values()} == {"ray"}
    scores = pl.read_parquet(run_dir / "scores.parquet")
    assert dict(scores.group_by("run").len().iter_rows()) == {"narrative_files": 40, "narrative_oracle": 40}
    assert scores.filter(pl.col("run") == "narrative_oracle")["score"].to_list() == [1.0] * 40
    rows = pl.read_parquet(run_dir / "rows.parquet")
    assert set(rows["metric"]) == {*COMPONENTS, "overall"}
    issues = pl.read_parquet(run_dir / "tables" / "issues.parquet")  # the scorer's extra table, not dropped
    assert issues.columns[0] == "run" and set(issues["run"]) <= {"narrative_files", "narrative_oracle"}

    # the job's per-story figures are `score narrative`'s for the same folder
    expected, _ = score_paths(data / "pred", data / "gt", engine="local")
    files = scores.filter(pl.col("run") == "narrative_files")
    got = dict(zip(files["sample_id"], files["score"]))
    assert got == pytest.approx({k: v["overall_score"] for k, v in expected["per_file"].items()})
    assert records["narrative_files"]["summary"]["overall"] == pytest.approx(expected["overall_score"])
    assert records["narrative_files"]["summary"]["overall_micro"] == pytest.approx(expected["overall_micro"])
