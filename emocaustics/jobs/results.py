"""The tables phase of a job: the job's files, tables and report, written from each config's result (its per-sample
table for scores.parquet, its record in configs.json, the scorers' extra tables for tables/<name>.parquet, each row
carrying the config's label as `run`: built as it is scored, `jobs.epochs.score_config`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from emocaustics.report.tables import write_extra_tables

if TYPE_CHECKING:
    from emocaustics.jobs.epochs import ConfigResult
    from emocaustics.jobs.rundir import Claim


def write_results(run_dir: Path, results: list[ConfigResult], defects: list[dict[str, Any]], claimed: Claim) -> Path:
    """The tables and report phases: rows.parquet, items.parquet, tables/, data_defects.json, configs.json,
    wall.json, scores.parquet and the summary tables, then the report (reading the tables' statistics); run.json
    gets the sample and failure counts. Returns the report's path."""
    from emocaustics.core.writes import writing
    from emocaustics.report.html import write_report
    from emocaustics.report.tables import write_tables
    from emocaustics.scoring.reducers import table_rows

    frames, long_rows, items, tables = [], [], [], {}  # tables: the scorers' extra tables by name, every config's
    for r in results:
        label = r.cfg.label
        frames.extend([r.table] if r.epoch_table is None else [r.table, r.epoch_table])
        long_rows.append(r.scored.rows.with_columns(pl.lit(label).alias("run"), pl.lit(r.cfg.task.name).alias("task")))
        if r.scored.items is not None:
            items.append(r.scored.items.with_columns(pl.lit(label).alias("run")))
        for name, table in r.scored.tables.items():
            if name != "sample_info":  # that one is joined into scores.parquet
                tables.setdefault(name, []).append(with_run(table, label))
    wall = {r.cfg.label: r.wall for r in results}
    scores = pl.concat(frames, how="diagonal_relaxed")
    with writing(run_dir):  # the tables and the report on a full disk: one line naming the file (or the folder)
        pl.concat(long_rows, how="diagonal_relaxed").write_parquet(run_dir / "rows.parquet")
        if items:
            pl.concat(items, how="diagonal_relaxed").write_parquet(run_dir / "items.parquet")
        write_extra_tables(run_dir / "tables", tables)
        (run_dir / "data_defects.json").write_text(json.dumps(defects, ensure_ascii=False, indent=1), encoding="utf-8")
        (run_dir / "configs.json").write_text(json.dumps([r.record for r in results], ensure_ascii=False, indent=1,
                                                         default=str), encoding="utf-8")
        (run_dir / "wall.json").write_text(json.dumps(wall, indent=1), encoding="utf-8")
        # scores.parquet: every row; the tables: the reduced rows; then the report, which reads the tables' statistics
        summary = write_tables(run_dir, scores, wall)
        report = write_report(run_dir, scores, summary)
    reduced = table_rows(scores)
    claimed.record["failed_samples"] = int(reduced["failed"].sum())
    claimed.record["samples"] = reduced.height
    return report


def with_run(table: pl.DataFrame, label: str) -> pl.DataFrame:
    """The config's label as the first column `run` (a column of that name the table had is kept as `table_run`)."""
    if "run" in table.columns:
        table = table.rename({"run": "table_run"})
    return table.select(pl.lit(label).alias("run"), *table.columns)
