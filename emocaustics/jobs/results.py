"""The tables phase of a job: each config's result (its per-sample table for scores.parquet, its record in
configs.json, the scorers' extra tables for tables/<name>.parquet, each row carrying the config's label as `run`:
built as it is scored, `jobs.epochs.score_config`), then the job's files, tables and report written from them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from emocaustics.core.task import Loaded, Scored
from emocaustics.report.tables import write_extra_tables
from emocaustics.scoring.generic import per_sample

if TYPE_CHECKING:
    from emocaustics.jobs.configs import Config
    from emocaustics.jobs.rundir import Claim


@dataclass
class ConfigResult:
    """One config's part of the job's outputs: its per-sample table (and per-epoch one), its scored rows and its
    record in configs.json."""

    cfg: Any
    table: pl.DataFrame
    scored: Scored
    record: dict[str, Any]
    epoch_table: pl.DataFrame | None
    wall: float


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

COST_COLUMNS = ("llm_calls", "cache_hits", "prompt_tokens", "generated_tokens")


def score_table(cfg: Config, scored: Scored, stats: dict[str, dict[str, Any]],
                loaded: Loaded | None = None) -> pl.DataFrame:
    """One row per sample of this config: primary metric as `score`, the others as `c_<metric>`, cost and status,
    and its `cluster` (`clusters`)."""
    rows = scored.rows
    # The per-sample score is the primary metric where the task scores it per sample; a corpus-level primary
    # (an official F1) lives in configs.json, and its first per-sample metric stands in the per-sample table.
    main = per_sample(rows, cfg.task.report.primary_metric)
    info = scored.tables.get("sample_info")
    if info is not None:
        main = main.join(info, on="sample_id", how="left")
    from emocaustics.models.prices import sample_cost

    price = cfg.price
    cost = pl.DataFrame(
        [{"sample_id": k, **{c: int(v.get(c, 0)) for c in COST_COLUMNS}, "seconds": float(v.get("seconds", 0.0)),
          "cost_usd": sample_cost(price, v)} for k, v in stats.items()],
        schema={"sample_id": pl.Utf8, **{c: pl.Int64 for c in COST_COLUMNS}, "seconds": pl.Float64,
                "cost_usd": pl.Float64})
    # A sample with no calls recorded cost nothing; a priced model's calls cost what their tokens say; an unpriced
    # model's calls cost an unknown amount (null, never 0).
    no_calls = pl.lit(0.0) if (price is not None or cfg.model is None) else pl.lit(None, pl.Float64)
    extra = cfg.task.report.summary_columns(cfg.options)
    return (
        main.join(cost, on="sample_id", how="left")
        .with_columns(
            pl.lit(cfg.label).alias("run"), pl.lit(cfg.task.name).alias("task"),
            pl.lit(cfg.options.method).alias("method"), pl.lit(cfg.model, pl.Utf8).alias("model"),
            pl.lit(cfg.kind).alias("kind"),
            *[pl.lit(v, pl.Int64 if isinstance(v, int) or v is None else None).alias(k) for k, v in extra.items()],
            pl.col(*COST_COLUMNS).fill_null(0), pl.col("seconds").fill_null(0.0),
            pl.col("cost_usd").fill_null(no_calls),
            *clusters(cfg.task.name, loaded),
        )
    )


def clusters(task: str, loaded: Loaded | None) -> tuple[pl.Expr, pl.Expr]:
    """`cluster` (the sample's `meta["cluster"]`: what its statistics resample together) and `cluster_by` (what the
    task clusters by, `Loaded.info["cluster"]`); without a declared cluster each sample is its own ("sample")."""
    unit = (loaded.info.get("cluster") if loaded else None) or "sample"
    of = {s.id: s.meta.get("cluster") for s in (loaded.samples if loaded else [])}
    lacking = [i for i, c in of.items() if c is None]
    named = {i: str(c) for i, c in of.items() if c is not None}
    if unit != "sample" and lacking:
        raise ValueError(f"task {task!r} clusters by {unit} but sample {lacking[0]!r} has no meta['cluster']")
    if unit == "sample" and named:
        raise ValueError(f"task {task!r}: sample {next(iter(named))!r} has a meta['cluster'] but the task's "
                         "Loaded.info names no 'cluster' (what it clusters by)")
    return (pl.col("sample_id").replace_strict(named, default=pl.col("sample_id"), return_dtype=pl.Utf8)
            .alias("cluster"), pl.lit(unit).alias("cluster_by"))


def with_run(table: pl.DataFrame, label: str) -> pl.DataFrame:
    """The config's label as the first column `run` (a column of that name the table had is kept as `table_run`)."""
    if "run" in table.columns:
        table = table.rename({"run": "table_run"})
    return table.select(pl.lit(label).alias("run"), *table.columns)


def score_line(cfg: Config, scored: Scored, table: pl.DataFrame, wall: float) -> str:
    """The console's line of a config, `[score LABEL] METRIC VALUE, F failures, N samples, T s`: summary.csv's
    figures (`scoring.headline.headline` of the config's per-sample table: for epochs its reduced rows), named by the
    per-sample metric its `score` holds (the primary metric, or where that is a corpus figure such as ECPE's official
    F1, the first per-sample one: `per_sample`) and, for epochs, the reducer that made it."""
    from emocaustics.scoring.headline import headline

    top = headline(table).row(0, named=True)
    metrics, name = scored.rows["metric"], cfg.task.report.primary_metric
    name = name if name in metrics or metrics.is_empty() else metrics[0]
    name += f" ({cfg.reducer} over {cfg.epochs} epochs)" if cfg.epochs > 1 else ""
    value = None if top["score"] is None else round(top["score"], 4)
    return f"[score {cfg.label}] {name} {value}, {top['failures']} failures, {top['samples']} samples, {wall} s"


def summary_record(cfg: Config, scored: Scored, loaded_defects: int, table: pl.DataFrame) -> dict[str, Any]:
    """configs.json's record of a config; its dollars: its samples' sum, or None (unknown) when any sample's is."""
    cost = table.get_column("cost_usd", default=pl.Series([None]))
    return {"run": cfg.label, "task": cfg.task.name, "method": cfg.options.method, "model": cfg.model,
            "options": cfg.options.model_dump(mode="json"), "summary": scored.summary, "data_defects": loaded_defects,
            "prompts_version": cfg.task.prompts_version,
            "cost_usd": None if cost.null_count() else round(float(cost.sum()), 6)}
