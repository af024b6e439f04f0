"""Score tables: per-dialogue rows (scores.parquet) -> per-config summary, per-length breakdown, comparisons. Polars only.

`scores.parquet` has one row per (run config, dialogue) with the columns of `SCORE_COLUMNS`, plus component columns
named `c_<name>` (field accuracies, match rates) that differ by task.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

# Dialogues with at least this many utterances count as "long" (the paper's long-20 are all over 100 turns).
LONG_DIALOGUE = 100

SCORE_COLUMNS: dict[str, pl.DataType] = {
    "run": pl.Utf8,  # the config label
    "task": pl.Utf8,
    "method": pl.Utf8,
    "model": pl.Utf8,
    "window": pl.Int64,
    "step": pl.Int64,
    "kind": pl.Utf8,  # calibration | engine-check | model
    "dialogue": pl.Int64,
    "n_utterances": pl.Int64,
    "weight": pl.Float64,  # micro-average weight: utterances (sextuple) or GT holders (emotion)
    "score": pl.Float64,
    "failed": pl.Boolean,
    "reason": pl.Utf8,
    "llm_calls": pl.Int64,
    "cache_hits": pl.Int64,
    "prompt_tokens": pl.Int64,
    "generated_tokens": pl.Int64,
    "judge_failures": pl.Int64,
    "seconds": pl.Float64,
}

KIND_NOTE = {
    "calibration": "calibration row (oracle must be 1.0; baseline is the floor to beat)",
    "engine-check": "engine check: the smoke model is random weights, its text is noise; NOT a quality figure",
    "model": "",
}


def component_columns(df: pl.DataFrame) -> list[str]:
    return [c for c in df.columns if c.startswith("c_")]


def summarise(scores: pl.DataFrame, wall: dict[str, float] | None = None) -> pl.DataFrame:
    """One row per run config: score (macro: mean of dialogue scores), micro score, components, failures, cost."""
    comps = component_columns(scores)
    summary = (
        scores.group_by("run", maintain_order=True)
        .agg(
            pl.first("task"),
            pl.first("method"),
            pl.first("model"),
            pl.first("window").alias("K"),
            pl.first("step").alias("S"),
            pl.first("kind"),
            pl.len().alias("dialogues"),
            pl.col("score").mean().alias("score"),
            ((pl.col("score") * pl.col("weight")).sum() / pl.col("weight").sum()).alias("micro_score"),
            *[pl.col(c).mean() for c in comps],
            pl.col("failed").sum().alias("failures"),
            pl.col("judge_failures").sum(),
            pl.col("llm_calls").sum(),
            pl.col("cache_hits").sum(),
            (pl.col("prompt_tokens").sum() + pl.col("generated_tokens").sum()).alias("tokens"),
            pl.col("generated_tokens").sum(),
        )
        .with_columns(pl.col("kind").replace_strict(KIND_NOTE, default="").alias("note"))
    )
    wall = wall or {}
    return summary.with_columns(
        pl.col("run").replace_strict(wall, default=None, return_dtype=pl.Float64).alias("wall_s")
    )


def by_length(scores: pl.DataFrame) -> pl.DataFrame:
    """Mean score per run config for short and long dialogues."""
    return (
        scores.with_columns(
            pl.when(pl.col("n_utterances") >= LONG_DIALOGUE)
            .then(pl.lit(f"long (>= {LONG_DIALOGUE})"))
            .otherwise(pl.lit(f"short (< {LONG_DIALOGUE})"))
            .alias("length")
        )
        .group_by("run", "length", maintain_order=True)
        .agg(pl.len().alias("dialogues"), pl.col("score").mean().alias("score"))
        .sort("run", "length")
    )


def failures(scores: pl.DataFrame) -> pl.DataFrame:
    return scores.filter(pl.col("failed")).select("run", "dialogue", "reason").sort("run", "dialogue")


def to_markdown(df: pl.DataFrame, floats: int = 4) -> str:
    """A GitHub-flavoured Markdown table (no extra dependency)."""
    cols = df.columns

    def cell(v: object) -> str:
        if v is None:
            return ""
        if isinstance(v, float):
            return f"{v:.{floats}f}"
        return str(v).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cols) + " |", "| " + " | ".join("---" for _ in cols) + " |"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.iter_rows()]
    return "\n".join(lines) + "\n"


def write_tables(run_dir: Path, scores: pl.DataFrame, wall: dict[str, float] | None = None) -> pl.DataFrame:
    """Write scores.parquet, summary.csv and summary.md; return the summary."""
    scores.write_parquet(run_dir / "scores.parquet")
    summary = summarise(scores, wall)
    summary.write_csv(run_dir / "summary.csv")
    shown = summary.select(
        "run", "task", "method", "model", "K", "S", "dialogues", "score", "micro_score",
        *component_columns(summary), "failures", "judge_failures", "llm_calls", "tokens", "wall_s", "note",
    )
    (run_dir / "summary.md").write_text(
        f"# {run_dir.parent.name} / {run_dir.name}\n\n" + to_markdown(shown), encoding="utf-8"
    )
    return summary


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
