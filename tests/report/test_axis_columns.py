"""Issue 25 point 7: the summary tables (summary.csv / .md, the report, summary.tex) have a column per grid axis (each
option that varies between the job's configs), empty where it does not vary (calibration rows); the LaTeX table no
longer leans on the label alone."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from emocaustics.jobs.spec import JobSpec, dump_job
from emocaustics.report.html import write_report
from emocaustics.report.latex import write_latex
from emocaustics.report.tables import SCORE_COLUMNS, write_tables

GRID = {"name": "axes", "dataset": {"aer": {"split": "sample"}}, "models": {"api": {"spec": "smoke"}},
        "runs": [{"task": "aer", "options": {"method": "oracle"}}],
        "grid": {"task": ["aer"], "model": ["api"], "context": ["none", "full"], "prompt": ["zero-shot", "cot"],
                 "options": {"method": "llm", "max_context_tokens": 16000}}}


@pytest.fixture
def run_dir(tmp_path) -> Path:
    job = JobSpec.model_validate(GRID)
    out = tmp_path / "axes" / "20260101-000000"
    out.mkdir(parents=True)
    (out / "config.yaml").write_text(dump_job(job), encoding="utf-8")  # as the runner writes it
    rows = []
    for n, run in enumerate(job.expand()):
        _, opts = run.resolve()
        kind = "calibration" if opts.method == "oracle" else "engine-check"
        rows += [{"run": run.label, "task": "aer", "method": opts.method, "model": run.model, "kind": kind,
                  "sample_id": f"q{i}", "weight": 1.0, "score": 1.0 if kind == "calibration" else 0.1 * (n + i % 2),
                  "failed": False, "status": "ok", "reason": None, "llm_calls": 1, "cache_hits": 0,
                  "prompt_tokens": 10, "generated_tokens": 2, "seconds": 0.1} for i in range(4)]
    scores = pl.DataFrame(rows, schema_overrides=SCORE_COLUMNS)
    write_report(out, scores, write_tables(out, scores))
    return out


def test_summary_has_a_column_per_grid_axis(run_dir):
    summary = pl.read_csv(run_dir / "summary.csv")
    assert [c for c in summary.columns if c.startswith("opt:")] == ["opt:context", "opt:prompt"]
    cells = summary.filter(pl.col("method") == "llm")
    assert sorted(zip(cells["opt:context"], cells["opt:prompt"])) == sorted(
        (c, p) for c in ("none", "full") for p in ("zero-shot", "cot"))
    oracle = summary.filter(pl.col("method") == "oracle").row(0, named=True)
    assert oracle["opt:context"] is None and oracle["opt:prompt"] is None  # it varies for the llm cells only
    md = (run_dir / "summary.md").read_text(encoding="utf-8")
    header = next(line for line in md.splitlines() if line.startswith("| run"))
    assert "| opt:context | opt:prompt |" in header and "`opt:context`" in md  # shown and defined
    assert "opt:context" in (run_dir / "report.html").read_text(encoding="utf-8")


def test_latex_has_a_column_per_grid_axis(run_dir):
    tex = write_latex(run_dir).read_text(encoding="utf-8")
    header = next(line for line in tex.splitlines() if line.startswith("run &"))
    cols = [c.strip() for c in header.removesuffix("\\\\").split("&")]
    assert cols[:5] == ["run", "method", "model", "context", "prompt"], cols
    row = next(line for line in tex.splitlines() if "context=full" in line and "prompt=cot" in line)
    assert [c.strip() for c in row.split("&")][3:5] == ["full", "cot"]
    assert "the grid's axes" in tex  # the caption defines them
