"""A grid job in-process: 4 window configs (K x S) of one smoke model run on the session's one engine.

Also: progress output is plain log lines when stdout is not a terminal (and a redrawn line when it is), and the
`emocaustics report` / `emocaustics compare` commands work on the finished run directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
from pathlib import Path

import polars as pl
import pytest

from emocaustics.cli import main
from emocaustics.core.progress import Progress
from emocaustics.jobs.spec import load_job

JOBS = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def grid_run(smoke_pool, tmp_path_factory):
    """Run tests/jobs/grid.yaml once; returns (run_dir, captured stdout, pool stats before, pool stats after)."""
    from emocaustics.models.pool import registered_pools
    from emocaustics.jobs.runner import run_job

    tmp = tmp_path_factory.mktemp("grid")
    job = load_job(JOBS / "grid.yaml", overrides={"output": str(tmp / "runs"), "cache_dir": str(tmp / "cache")})
    before = asyncio.run(smoke_pool.stats())
    pools_before = set(registered_pools())
    out = io.StringIO()  # not a terminal, like `ray job logs` or a CI log
    with contextlib.redirect_stdout(out):
        run_dir = run_job(job, out=str(tmp / "run"))
    after = asyncio.run(smoke_pool.stats())
    return run_dir, out.getvalue(), before, after, pools_before, set(registered_pools())


def test_grid_runs_on_one_engine(grid_run):
    run_dir, _, before, after, pools_before, pools_after = grid_run
    # The engine was started once for the whole grid: the same replica instance, no new start, no other pool.
    assert after["engine_starts"] == before["engine_starts"] == 1
    assert [r["instance"] for r in after["per_replica"]] == [r["instance"] for r in before["per_replica"]]
    assert pools_after == pools_before, f"the grid made its own model pool(s): {pools_after - pools_before}"
    # ...and it did the grid's work: window K=2/3 with S=1/2 on 2 dialogues is dozens of engine calls.
    assert after["calls"] - before["calls"] >= 4 * 2 * 2


def test_every_config_has_rows(grid_run):
    run_dir = grid_run[0]
    scores = pl.read_parquet(run_dir / "scores.parquet")
    per_run = dict(scores.group_by("run").len().iter_rows())
    window = {f"sextuple_window_smoke_K{k}-S{s}" for k in (2, 3) for s in (1, 2)}
    assert per_run == {label: 2 for label in window | {"sextuple_oracle", "sextuple_baseline"}}
    grid = scores.filter(pl.col("method") == "window")
    assert set(zip(grid["K"], grid["S"])) == {(2, 1), (2, 2), (3, 1), (3, 2)}
    assert (grid["kind"] == "engine-check").all()
    # Extraction really ran per config: calls were counted (first pass) and every dialogue has a prediction or a reason.
    assert grid.group_by("run").agg(pl.col("llm_calls").sum())["llm_calls"].min() > 0
    assert grid.filter(pl.col("failed"))["reason"].is_not_null().all()
    # ...and nearly every dialogue of every config came through (a failure row per dialogue would not pass).
    assert grid.group_by("run").agg((~pl.col("failed")).sum().alias("ok"))["ok"].min() >= 1, grid
    oracle = scores.filter(pl.col("run") == "sextuple_oracle")
    assert oracle["score"].to_list() == [1.0, 1.0]
    for name in ("summary.md", "summary.csv", "items.parquet", "config.yaml", "report.html"):
        assert (run_dir / name).is_file(), name
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "Window x step: sextuple / window / smoke" in page  # the K x S heatmap appears when the grid varies them


def test_progress_is_plain_lines_off_terminal(grid_run):
    log = grid_run[1]
    assert "\r" not in log and "\x1b" not in log
    for k in (2, 3):
        for s in (1, 2):
            assert f"[solve sextuple_window_smoke_K{k}-S{s}] 2/2" in log, log
    assert "summary:" in log and "report:" in log


def test_progress_live_line_on_terminal():
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty, plain = Tty(), io.StringIO()
    for stream in (tty, plain):
        p = Progress("extract x", 3, stream=stream, log_every=3600)
        p.update(1)
        p.update(1, failed=1)
        p.update(1)
        p.close()
    assert tty.getvalue().count("\r") == 4 and tty.getvalue().endswith("\n")
    assert "[extract x] 3/3, 1 failed" in tty.getvalue()
    lines = plain.getvalue().splitlines()  # off a terminal: the first update, then the final line; no redraws
    assert "\r" not in plain.getvalue() and len(lines) == 2
    assert lines[0].startswith("[extract x] 1/3") and lines[-1].startswith("[extract x] 3/3, 1 failed")
    assert "eta" in lines[0] and "/s" in lines[0]


def test_report_and_compare_cli(grid_run, tmp_path, capsys):
    run_dir = grid_run[0]
    (run_dir / "report.html").unlink()
    assert main(["report", str(run_dir)]) == 0
    assert (run_dir / "report.html").is_file() and str(run_dir / "report.html") in capsys.readouterr().out
    csv = tmp_path / "cmp.csv"
    assert main(["compare", str(run_dir), "--out", str(csv)]) == 0
    printed = capsys.readouterr().out
    table_lines = [line for line in printed.splitlines() if line.startswith("|")]
    assert any("sextuple_window_smoke_K3-S2" in line for line in table_lines)
    assert sum("sextuple_oracle" in line for line in table_lines) == 1
    table = pl.read_csv(csv)  # one run: the pairs of its configs (its significance.csv)
    assert table.height == 6 * 5 // 2
    assert main(["compare", str(run_dir), str(run_dir)]) == 2  # a run is not compared with itself
    # A directory that is not a run: one-line usage error, exit 2.
    assert main(["report", str(tmp_path)]) == 2
    assert main(["compare", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no scores.parquet" in err and "no summary.csv" in err
