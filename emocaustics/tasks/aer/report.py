"""The AER section of the run report: every config's score by topic, rebuilt from the job's per-sample score table
(scores.parquet: `score`, `c_exact`, `c_partial`, `c_wrong` and the question's topic in `aer_topic`, which the scorer
joins in through its `sample_info` table), so that `emocaustics report RUN_DIR` shows it too.

One row per topic with its question count, one column per config (at most `CONFIGS_PER_TABLE` per table, so that a
1280 px page needs no sideways scrolling); the exact / partial / wrong counts per (config, topic) behind a click. A
failed question counts 0, as in every score table.
"""

from __future__ import annotations

import polars as pl

from emocaustics.core.htmltable import table
from emocaustics.scoring.headline import failures_count_zero

TOPIC = "aer_topic"
CONFIGS_PER_TABLE = 5
NOTE = ("The organisers' score (1 exact, 0.5 a proper subset of the gold, 0 otherwise) averaged over each topic's "
        "questions; a failed or missing question counts 0. Topics differ in size and difficulty: compare configs "
        "within a row.")


def by_topic(scores: pl.DataFrame) -> pl.DataFrame:
    """One row per (config, topic), configs in the job's order, topics ascending: questions, score (failures count
    0), exact / partial / wrong counts."""
    outcome = [c for c in ("c_exact", "c_partial", "c_wrong") if c in scores.columns]
    runs = scores["run"].unique(maintain_order=True).to_list()
    return (failures_count_zero(scores).filter(pl.col(TOPIC).is_not_null() & pl.col("score").is_not_null())
            .group_by("run", TOPIC)
            .agg(pl.len().alias("questions"), pl.col("score").mean().alias("score"),
                 *[pl.col(c).sum().cast(pl.Int64).alias(c[2:]) for c in outcome])
            .sort(pl.col("run").replace_strict(runs, list(range(len(runs)))), TOPIC))


def glance(long: pl.DataFrame, runs: list[str]) -> pl.DataFrame:
    """Topics as rows, one score column per config of `runs`."""
    scores = long.filter(pl.col("run").is_in(runs)).pivot(on="run", index=TOPIC, values="score")  # runs in job order
    return (long.select(TOPIC, "questions").unique(TOPIC, keep="first").join(scores, on=TOPIC, how="left")
            .rename({TOPIC: "topic"}).sort("topic"))


def sections(summary: pl.DataFrame, scores: pl.DataFrame) -> list[tuple[str, str]]:
    if TOPIC not in scores.columns or "run" not in scores.columns:
        return []
    long = by_topic(scores)
    if not long.height:
        return []
    runs = long["run"].unique(maintain_order=True).to_list()
    tables = "".join(table(glance(long, runs[i:i + CONFIGS_PER_TABLE]))
                     for i in range(0, len(runs), CONFIGS_PER_TABLE))
    detail = table(long.rename({TOPIC: "topic"}))
    body = (f"<p>{NOTE}</p>{tables}<details><summary>exact / partial / wrong per config and topic</summary>"
            f"{detail}</details>")
    return [("AER by topic", body)]
