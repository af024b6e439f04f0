"""Score tables of any task: per-sample rows (scores.parquet) -> per-config summary, comparisons. Polars only.

`scores.parquet` has one row per (run config, sample) with the columns of `SCORE_COLUMNS`, plus one column `c_<name>`
per secondary metric of the task (field accuracies, match rates, F1 parts) and the columns a task adds per sample or
per config (its size, its window).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from emocaustics.core.htmltable import DECIMALS
from emocaustics.scoring.headline import HEADLINE, scored_rows
from emocaustics.scoring.reducers import epoch_rows, epoch_spread, table_rows

SCORE_COLUMNS: dict[str, pl.DataType] = {
    "run": pl.Utf8,  # the config label
    "task": pl.Utf8,
    "method": pl.Utf8,
    "model": pl.Utf8,
    "kind": pl.Utf8,  # calibration | engine-check | model
    "sample_id": pl.Utf8,
    "weight": pl.Float64,  # micro-average weight of the sample (the task decides: e.g. its size)
    "score": pl.Float64,  # the task's primary metric
    "failed": pl.Boolean,
    "status": pl.Utf8,
    "reason": pl.Utf8,
    "llm_calls": pl.Int64,
    "cache_hits": pl.Int64,
    "prompt_tokens": pl.Int64,
    "generated_tokens": pl.Int64,
    "seconds": pl.Float64,
}

KIND_NOTE = {
    "calibration": "calibration: no model called (a built-in predictor or a scoring-only method)",
    "engine-check": "engine check: the smoke model is random weights, its text is noise; NOT a quality figure",
    "model": "",
}
# Calibration methods whose note says more than "no model called".
METHOD_NOTE = {
    "oracle": "calibration: the ground truth as prediction, must score 1.0",
    "baseline": "calibration: a trivial predictor, the floor to beat",
}


def note() -> pl.Expr:
    """What a summary row is, in words (from its kind, and its method for calibration rows)."""
    by_kind = pl.col("kind").replace_strict(KIND_NOTE, default="")
    by_method = pl.col("method").replace_strict(METHOD_NOTE, default=None, return_dtype=pl.Utf8)
    return (pl.when(pl.col("kind") == "calibration").then(pl.coalesce(by_method, by_kind)).otherwise(by_kind)
            .alias("note"))


# The columns every report needs (the rest of SCORE_COLUMNS only adds cost figures).
REQUIRED = ("run", "task", "method", "model", "kind", "sample_id", "weight", "score", "failed")


def check_scores(scores: pl.DataFrame, source: str) -> None:
    """A named error (not a traceback) for a score table this version cannot read, e.g. a run folder written before
    the task interface (its per-sample key was `dialogue`)."""
    from emocaustics.core.errors import UsageError

    missing = [c for c in REQUIRED if c not in scores.columns]
    if missing:
        raise UsageError(f"{source}: lacks column(s) {missing}; written by an older "
                         "emocaustics? Score the predictions again to rebuild its tables")


def summarise(scores: pl.DataFrame, wall: dict[str, float] | None = None, run_dir: Path | None = None,
              ci: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per run config: what ran and the per-config columns its task declares (`Report.option_column_docs`), the
    `HEADLINE` (samples, score: macro, mean over samples, failures count 0), micro score (weighted by the samples'
    weights), component means, failures, cost, the interval (`ci`: run, ci_low, ci_high when already computed), and
    with `run_dir` the grid's axes its config.yaml records (`report.columns`)."""
    from emocaustics.report.columns import option_columns, read_axes, with_axes

    spread = epoch_spread(epoch_rows(scores))  # configs solved in epochs: how much a sample's score moves
    scores = scored_rows(scores)
    comps = [c for c in scores.columns if c.startswith("c_")]
    if ci is None:
        ci, _ = config_statistics(scores)
    summary = (
        scores.group_by("run", maintain_order=True)
        .agg(
            pl.first("task"),
            pl.first("method"),
            pl.first("model"),
            *[pl.first(c) for c in option_columns(scores)],  # the tasks' own, e.g. a window size
            pl.first("kind"),
            HEADLINE["samples"].alias("samples"),
            HEADLINE["score"].alias("score"),
            ((pl.col("score") * pl.col("weight")).sum() / pl.col("weight").sum()).alias("micro_score"),
            *[pl.col(c).mean() for c in comps],
            HEADLINE["failures"].alias("failures"),
            *([pl.col("judge_failures").sum()] if "judge_failures" in scores.columns else []),
            pl.col("llm_calls").sum(),
            pl.col("cache_hits").sum(),
            (pl.col("prompt_tokens").sum() + pl.col("generated_tokens").sum()).alias("tokens"),
            pl.col("generated_tokens").sum(),
            # dollars (jobs/epochs.py): unknown (null, never 0) when any sample's are
            *([pl.when(pl.col("cost_usd").null_count() == 0).then(pl.col("cost_usd").sum()).alias("cost_usd")]
              if "cost_usd" in scores.columns else []),
        )
        .with_columns(note())
        .join(ci, on="run", how="left")
    )
    if spread.height:
        summary = summary.join(spread, on="run", how="left")
    wall = wall or {}
    summary = summary.with_columns(
        pl.col("run").replace_strict(wall, default=None, return_dtype=pl.Float64).alias("wall_s"))
    return summary if run_dir is None else with_axes(summary, read_axes(run_dir))


def config_statistics(scores: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Under every score table: a 95 % bootstrap interval of each config's score (over its samples' clusters,
    seeded) and a paired test between every two configs of the same task (approximate randomisation, paired bootstrap
    and Wilcoxon), both over the clusters of the `cluster` column (each sample its own without one). Holm's
    correction runs across the pairs of the job that compare what the job evaluates (`in_holm_family`: not against
    calibration rows). Returns (ci: run, ci_low, ci_high, clusters, cluster_by; pairs: task, config_a, config_b, ...,
    family, p_holm, significant)."""
    from emocaustics.stats import config_stats, holm_family

    scores = scored_rows(scores)
    cis, pairs = [], []
    for task in scores["task"].unique(maintain_order=True).to_list():
        of_task = scores.filter(pl.col("task") == task)
        per_item = of_task.select(pl.col("run").alias("config"), pl.col("sample_id").alias("item"),
                                  pl.col("score").alias("value"), "cluster")
        result = config_stats(per_item)
        unit = of_task.group_by("run").agg(pl.first("cluster_by"))
        ci = result.ci.select(pl.col("config").alias("run"), "ci_low", "ci_high", "clusters")
        if "ci_low" in of_task.columns:
            # A corpus statistic brings its own interval (its task's bootstrap of the statistic, e.g. dialogue-judge's
            # r; NaN where r is undefined: none, null): a bootstrap of its per-sample shares is not one, nor a test
            own = of_task.group_by("run").agg(pl.first(c).fill_nan(None) for c in ("ci_low", "ci_high"))
            ci = ci.drop("ci_low", "ci_high").join(own, on="run", how="left").select("run", "ci_low", "ci_high",
                                                                                   "clusters")
        else:
            pairs.append(result.pairs.with_columns(pl.lit(task).alias("task")))
        cis.append(ci.join(unit, on="run", how="left"))
    ci = pl.concat(cis) if cis else pl.DataFrame(schema={"run": pl.Utf8, "ci_low": pl.Float64, "ci_high": pl.Float64,
                                                         "clusters": pl.Int64, "cluster_by": pl.Utf8})
    pair_table = pl.concat(pairs, how="vertical_relaxed") if pairs else pl.DataFrame()
    if pair_table.height:  # Holm across the family's pairs of the job, not per task
        kinds = dict(scores.group_by("run").agg(pl.first("kind")).iter_rows())
        pair_table = holm_family(pair_table, in_holm_family(pair_table, kinds))
        pair_table = pair_table.select("task", pl.all().exclude("task"))
    return ci, pair_table


def in_holm_family(pairs: pl.DataFrame, kinds: dict[str, str]) -> list[bool]:
    """Which pairs (columns task, config_a, config_b) belong to Holm's family: a calibration row (the oracle, a baseline) is a
    reference point whose difference to a model is known before any test, so pairs with one are left out of the
    family whenever their task has a config that is not calibration (else they would inflate it: with 8 dialogues
    "oracle vs model" alone cost a real difference its significance). A task whose configs are all calibration (a
    scoring-only method: human ratings, prediction files) has nothing else to compare: its pairs are the family."""
    rows = pairs.select("task", "config_a", "config_b").rows()
    evaluated = {task for task, x, y in rows if kinds.get(x) != "calibration" or kinds.get(y) != "calibration"}
    return [task not in evaluated or (kinds.get(x) != "calibration" and kinds.get(y) != "calibration")
            for task, x, y in rows]


def failures(scores: pl.DataFrame) -> pl.DataFrame:
    return scores.filter(pl.col("failed")).select("run", "sample_id", "reason").sort("run", "sample_id")


def to_markdown(df: pl.DataFrame, floats: int = 4) -> str:
    """A GitHub-flavoured Markdown table (no extra dependency)."""
    cols = df.columns

    def cell(v: object, col: str) -> str:
        if v is None:
            return ""
        if isinstance(v, float):
            return f"{v:.{DECIMALS.get(col, floats)}f}"
        return str(v).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cols) + " |", "| " + " | ".join("---" for _ in cols) + " |"]
    lines += ["| " + " | ".join(cell(v, c) for v, c in zip(row, cols)) + " |" for row in df.iter_rows()]
    return "\n".join(lines) + "\n"


def write_extra_tables(folder: Path, tables: dict[str, list[pl.DataFrame]]) -> None:
    """`tables/<name>.parquet` for each extra table a scorer returned (per-emotion F1s, data problems, system
    z-scores, significance tests, ...), every config's rows with its `run`, and each table a task's `job_tables`
    gave, with its `task`: none is dropped because the common tables have no column for it."""
    for name, parts in tables.items():
        folder.mkdir(parents=True, exist_ok=True)
        pl.concat(parts, how="diagonal_relaxed").write_parquet(folder / f"{name}.parquet")


def write_job_tables(folder: Path, scores: pl.DataFrame) -> dict[str, dict[str, pl.DataFrame]]:
    """The tables across each task's configs (`Task.job_tables`, e.g. dialogue-judge's judge pairs) as
    tables/<name>.parquet with `task` as their first column (a config's tables begin with its `run`); returns them
    by task, as its `job_tables` gave them (what the report reads: never computed, nor read, again)."""
    from emocaustics.report.columns import registered

    rows, tables, by_task = table_rows(scores), {}, {}
    for name in rows["task"].unique(maintain_order=True).to_list():
        made = task.job_tables(rows.filter(pl.col("task") == name)) if (task := registered(name)) else {}
        by_task[name] = {table_name: table for table_name, table in made.items() if table.height}
        for table_name, table in made.items():
            tables.setdefault(table_name, []).append(table.select(pl.lit(name).alias("task"), pl.all()))
    write_extra_tables(folder, tables)
    return by_task


@dataclass(frozen=True)
class Tables:
    """What `write_tables` wrote, as the report reads it: the summary (its intervals), the paired tests
    (significance.csv) and each task's tables across its configs (`write_job_tables`)."""

    summary: pl.DataFrame
    pairs: pl.DataFrame
    across: dict[str, dict[str, pl.DataFrame]]


def write_tables(run_dir: Path, scores: pl.DataFrame, wall: dict[str, float] | None = None) -> Tables:
    """Write scores.parquet, summary.csv, significance.csv, summary.md and the tasks' tables across their configs;
    return them (`Tables`: the report reads its intervals, pairs and tables from them: the statistics are computed
    once, here)."""
    check_scores(scores, str(run_dir / "scores.parquet"))
    scores.write_parquet(run_dir / "scores.parquet")
    ci, pairs = config_statistics(scores)
    summary = summarise(scores, wall, run_dir, ci)
    summary.write_csv(run_dir / "summary.csv")
    if pairs.height:
        pairs.write_csv(run_dir / "significance.csv")
    across = write_job_tables(run_dir / "tables", scores)
    (run_dir / "summary.md").write_text(summary_markdown(summary, pairs, run_title(run_dir)), encoding="utf-8")
    return Tables(summary, pairs, across)


def run_title(run_dir: Path) -> str:
    """`<job name> / <run folder>`: the job's name as run.json records it (else the folder's parent, an old run)."""
    try:  # read here, not through jobs.rundir: the report sits below the jobs
        job = json.loads((run_dir / "run.json").read_text(encoding="utf-8")).get("job")
    except (OSError, ValueError, AttributeError):
        job = None
    return f"{job or run_dir.parent.name} / {run_dir.name}"


def summary_markdown(summary: pl.DataFrame, pairs: pl.DataFrame, title: str) -> str:
    """summary.md: the main table, each task's components, what every column means, the paired tests' verdict."""
    from emocaustics.report.columns import cluster_note, components_by_task, legend, main_table, option_columns

    main = main_table(summary).drop("kind", strict=False)
    if "note" in summary.columns:
        main = main.with_columns(summary["note"])
    text = f"# {title}\n\n" + to_markdown(main) + (f"\n{note}\n" if (note := cluster_note(summary)) else "")
    comps = components_by_task(summary)
    for task, cols in comps.items():
        rows = summary.filter(pl.col("task") == task).select("run", *cols)
        text += f"\n## Components: {task}\n\n" + to_markdown(rows)
    shown = legend(main.columns, comps, option_columns(summary))
    text += "\n## Columns\n\n" + "".join(f"- `{c}`: {doc}\n" for c, doc in shown)
    if pairs.height:
        fam = pairs.filter(pl.col("family") == "configs")  # config_statistics gives every pair its family
        text += (f"\nPaired tests between configs of the same task (approximate randomisation, Holm over "
                 f"{fam.height} pairs; significance.csv): {fam.filter(pl.col('significant')).height} significant at "
                 "0.05.")
        if fam.height < pairs.height:
            text += (f" {pairs.height - fam.height} pairs with a calibration row (oracle, baseline) are left out of "
                     "the family: significance.csv gives their unadjusted p (family `calibration`).")
        text += "\n"
    return text


def compare(run_dirs: list[Path]) -> pl.DataFrame:
    """Several runs' summaries side by side: one row per (run dir, config)."""
    frames = []
    for run_dir in run_dirs:
        path = run_dir / "summary.csv"
        if not path.exists():
            raise FileNotFoundError(f"{run_dir}: no summary.csv (is this a run directory?)")
        frames.append(pl.read_csv(path).with_columns(pl.lit(str(run_dir)).alias("run_dir")))
    return pl.concat(frames, how="diagonal_relaxed").select(
        "run_dir", pl.all().exclude("run_dir")
    )
