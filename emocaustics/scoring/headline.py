"""A config's headline, computed in one place: the rows every statistic reads (`scored_rows`) and the one number,
sample count and failure count per config (`HEADLINE`, `headline`) that the console's score line, summary.csv/.md,
report.html, compare, the viewer and both exports read alike."""

from __future__ import annotations

import polars as pl

from emocaustics.scoring.reducers import table_rows


def failures_count_zero(scores: pl.DataFrame) -> pl.DataFrame:
    """The rule of every score table: a failed sample counts 0 (a task may leave its score empty); a sample that is
    not failed and has no score (unscored) stays empty and is left out of the mean, counted in the interval's
    n_missing."""
    return scores.with_columns(
        pl.when(pl.col("failed").fill_null(False) & pl.col("score").is_null()).then(0.0)
        .otherwise(pl.col("score")).alias("score"))


def scored_rows(scores: pl.DataFrame) -> pl.DataFrame:
    """The rows every statistic reads: a config solved in epochs by its reduced rows, a failure counting 0, and in a
    table written before clusters, every sample its own cluster."""
    scores = failures_count_zero(table_rows(scores))
    if "cluster" not in scores.columns:
        scores = scores.with_columns(pl.col("sample_id").alias("cluster"), pl.lit("sample").alias("cluster_by"))
    return scores


# A config's headline, defined once: every output reads it through `headline` or `summarise` (the console's score
# line, summary.csv/.md, report.html, compare, the viewer, the exports), over the rows the statistics read
# (`scored_rows`: a config solved in epochs by its reduced rows, a failure counting 0, an unscored sample counted in
# `samples` but not in the mean).
HEADLINE = {"samples": pl.len(), "score": pl.col("score").mean(), "failures": pl.col("failed").sum()}


def headline(scores: pl.DataFrame) -> pl.DataFrame:
    """One row per config of a score table (scores.parquet's columns; per-epoch rows are left out): run, task,
    samples, score, failures, as summary.csv has them."""
    return (scored_rows(scores).group_by("run", maintain_order=True)
            .agg(pl.first("task"), *(e.alias(k) for k, e in HEADLINE.items())))
