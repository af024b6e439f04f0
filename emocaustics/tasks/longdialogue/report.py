"""EmoCaustics sections of the run report: score by window K x step S (one heatmap per task/method/model with a
grid over K or S) and the score by dialogue length (long dialogues are where windowing matters)."""

from __future__ import annotations

import polars as pl

from emocaustics.core.htmltable import table
from emocaustics.stats.matrix import figure, svg

# Dialogues with at least this many utterances count as "long" (the paper's long-20 are all over 100 turns).
LONG_DIALOGUE = 100


def _heatmap(summary: pl.DataFrame, task: str, method: str, model: str | None) -> str | None:
    rows = summary.filter(
        (pl.col("task") == task) & (pl.col("method") == method) & (pl.col("model").eq_missing(model))
    ).drop_nulls(["K", "S"])
    ks, ss = sorted(set(rows["K"].to_list())), sorted(set(rows["S"].to_list()))
    if len(ks) < 2 and len(ss) < 2:
        return None
    grid = [[None for _ in ks] for _ in ss]
    for r in rows.iter_rows(named=True):
        grid[ss.index(r["S"])][ks.index(r["K"])] = r["score"]
    fig, ax = figure(1.2 * len(ks) + 2, 0.9 * len(ss) + 1.5)
    values = [[float("nan") if v is None else v for v in row] for row in grid]
    image = ax.imshow(values, cmap="viridis", vmin=0, vmax=1, origin="lower")
    ax.set_xticks(range(len(ks)), [str(k) for k in ks])
    ax.set_yticks(range(len(ss)), [str(s) for s in ss])
    ax.set_xlabel("window K")
    ax.set_ylabel("step S")
    for y, row in enumerate(grid):
        for x, v in enumerate(row):
            ax.text(x, y, "n/a" if v is None else f"{v:.3f}", ha="center", va="center", color="w")
    fig.colorbar(image, ax=ax)
    ax.set_title(f"{task} / {method} / {model}: score by K x S")
    return svg(fig)


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


def sections(summary: pl.DataFrame, scores: pl.DataFrame) -> list[tuple[str, str]]:
    out = []
    model_rows = summary.filter(pl.col("method").is_in(["window", "rag"]))
    for task, method, model in model_rows.select("task", "method", "model").unique(maintain_order=True).iter_rows():
        chart = _heatmap(summary, task, method, model)
        if chart:
            out.append((f"Window x step: {task} / {method} / {model}", f"<div class='chart heatmap'>{chart}</div>"))
    if "n_utterances" in scores.columns:
        out.append((f"By dialogue length: {summary['task'][0]}", table(by_length(scores))))
    return out
