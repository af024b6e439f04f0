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


def test_job_and_cli_agree_when_predictions_are_missing(capsys, tmp_path):
    """6 of the 7 sample predictions renamed so that they pair with nothing: the job's progress line, summary.md,
    configs.json and `score narrative` give one overall score (failures count 0), and report.html has the per-component
    precision / recall / F1 of the CLI."""
    import re
    import shutil

    from emocaustics.jobs.runner import rebuild_report, run_job
    from emocaustics.report.tables import summarise
    from emocaustics.tasks.narrative.data import SAMPLE_DIR

    data = tmp_path / "data"
    shutil.copytree(SAMPLE_DIR / "gt", data / "gt")
    shutil.copytree(SAMPLE_DIR / "pred", data / "pred")
    for path in sorted((data / "pred").glob("*.json"))[1:]:
        path.rename(path.with_name(f"x_{path.name}"))
    job = load_job(JOBS / "narrative-folder.yaml",
                   overrides={"dataset": {"narrative": {"data": str(data)}}, "output": str(tmp_path / "runs")})
    capsys.readouterr()
    run_dir = run_job(job, out=str(tmp_path / "run"), check=False)
    progress = re.search(r"\[score narrative_files\] overall ([0-9.]+), (\d+) failures", capsys.readouterr().out)
    cli, _ = score_paths(data / "pred", data / "gt", engine="local")
    scores = pl.read_parquet(run_dir / "scores.parquet")
    summary_md = summarise(scores).filter(pl.col("run") == "narrative_files")["score"].item()  # summary.md's figure
    record = {r["run"]: r for r in json.loads((run_dir / "configs.json").read_text(encoding="utf-8"))}
    assert float(progress.group(1)) == pytest.approx(summary_md, abs=5e-5) and progress.group(2) == "6"
    assert summary_md == pytest.approx(cli["overall_score"])
    assert cli["stories"] == 7 and len(cli["failed"]) == 6
    assert record["narrative_files"]["summary"]["overall"] == pytest.approx(cli["overall_score"])
    assert record["narrative_files"]["summary"]["overall_micro"] == pytest.approx(cli["overall_micro"])
    assert f"| narrative_files | narrative | files | 7 | {cli['overall_score']:.4f} |" in (
        run_dir / "summary.md").read_text(encoding="utf-8")

    from emocaustics.tasks.narrative.report import prf_table

    prf = prf_table(scores).filter(pl.col("run") == "narrative_files")
    for row in prf.iter_rows(named=True):
        want = cli["component_scores"][row["component"]]
        assert [row[k] for k in ("precision", "recall", "f1")] == pytest.approx(
            [want[k] for k in ("precision", "recall", "f1")], nan_ok=True), row["component"]
    assert set(prf["component"]) == {"characters", "events", "relationships", "sentiment"}
    report = rebuild_report(run_dir).read_text(encoding="utf-8")  # from scores.parquet alone, as `report` does
    assert "Narrative: precision, recall and F1 per component" in report and "id='narrative-prf'" in report
    assert f"<td>{cli['component_scores']['sentiment']['recall']:.4f}</td>" in report
