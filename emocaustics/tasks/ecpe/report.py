"""ECPE sections of the run report, rebuilt from the job's per-sample score table (scores.parquet) alone, so that
`emocaustics report RUN_DIR` shows them too:

- the official figures of every config, both subtasks, at the corpus level (each conversation's per-emotion count
  columns summed over the config, then the official formulas: bit-identical to the scorer's own figures);
- per emotion, at a glance: one row per emotion, one column per config (strict and proportional F1 for subtask 1,
  F1 for subtask 2) and a chart; in full, behind a click: counts, precision, recall and F1 per (config, emotion).
Tables are kept to a few columns each so that a 1280 px page needs no sideways scrolling.
"""

from __future__ import annotations

import html
import math

import polars as pl

from emocaustics.core.htmltable import table
from emocaustics.stats.matrix import figure, svg
from emocaustics.tasks.ecpe import official as O
from emocaustics.tasks.ecpe.scoring import count_columns, figures_from_sums

NOTE = ("The official figures (the ranking is by weighted_strict_f1 for subtask 1 and weighted_f1 for subtask 2), "
        "recomputed from each conversation's per-emotion counts in scores.parquet: the official formulas on the "
        "summed counts, the same numbers as the scorer's to the last digit. The summary's `score` is something else: "
        "the mean of each conversation's own F1, for intervals and paired tests. Neutral is the null class; a "
        "perfect submission scores 0.99999999..., not 1 (the official +1e-8 denominators).")


def config_figures(scores: pl.DataFrame) -> dict[str, dict[int, tuple[dict[str, float], pl.DataFrame]]]:
    """Per config (`run`) and subtask: (official figures, per-emotion table), for the subtasks whose count columns
    the config has (a subtask it did not score has null counts)."""
    out: dict[str, dict[int, tuple[dict[str, float], pl.DataFrame]]] = {}
    for (run,), part in scores.group_by("run", maintain_order=True):
        for st in (1, 2):
            cols = count_columns(st)
            if not set(cols) <= set(part.columns) or part.select(pl.col(cols[0]).is_null().all()).item():
                continue
            sums = part.select(pl.col(cols).sum()).to_dicts()[0]
            out.setdefault(str(run), {})[st] = figures_from_sums(sums, st)
    return out


# config -> (official figures, per-emotion table), of one subtask
ByRun = dict[str, tuple[dict[str, float], pl.DataFrame]]


def _fmt(v: float) -> str:
    return "nan" if math.isnan(v) else f"{v:.8f}"  # eight decimals: 0.99999999 stays visibly short of 1


# The official keys in narrow groups (a 1280 px page shows each without sideways scrolling).
OFFICIAL_GROUPS: dict[int, tuple[tuple[str, ...], ...]] = {
    1: (O.SUBTASK1_KEYS[0:3] + O.SUBTASK1_KEYS[6:9], O.SUBTASK1_KEYS[3:6] + O.SUBTASK1_KEYS[9:12]),
    2: (O.SUBTASK2_KEYS,),
}
# Per-emotion detail columns, strict (or subtask 2) and proportional.
STRICT_DETAIL = ("gold_pairs", "predicted_pairs", "correct")
PROPORTIONAL_DETAIL = ("gold_spans", "overlap_tokens", "predicted_tokens", "gold_tokens", "proportional_precision",
                       "proportional_recall", "proportional_f1")


def official_table(of: ByRun, keys: tuple[str, ...]) -> pl.DataFrame:
    """One row per config: the official figures of `keys`, as 8-decimal text."""
    rows = [{"run": run, **{k: _fmt(scores[k]) for k in keys}} for run, (scores, _) in of.items()]
    return pl.DataFrame(rows, schema={"run": pl.Utf8, **{k: pl.Utf8 for k in keys}})


def emotion_table(of: ByRun) -> pl.DataFrame:
    """One row per (config, emotion): counts and P/R/F1 (weights left out: they are the gold shares, the same for
    every config)."""
    df = pl.concat([t.drop([c for c in t.columns if c.endswith("weight")]).with_columns(pl.lit(run).alias("run"))
                    for run, (_, t) in of.items()])
    return df.select("run", pl.all().exclude("run"))


def f1_by_emotion(of: ByRun, column: str) -> pl.DataFrame:
    """At a glance: one row per emotion with its gold count, one column per config holding `column` (an F1)."""
    gold = "gold_spans" if column.startswith("proportional") else "gold_pairs"
    first = next(iter(of.values()))[1]
    return first.select("emotion", gold).with_columns(t[column].alias(run) for run, (_, t) in of.items())


def _chart(of: ByRun, subtask: int) -> str:
    column = "strict_f1" if subtask == 1 else "f1"
    emotions = list(O.EMOTIONS[1:])
    width = 0.8 / len(of)
    fig, ax = figure(9, 3.2)
    for i, (run, (_, t)) in enumerate(of.items()):
        values = t[column].to_list()
        xs = [e + (i - (len(of) - 1) / 2) * width for e in range(len(emotions))]
        ax.bar(xs, [v if v == v else 0 for v in values], width, label=run, edgecolor="#333", linewidth=0.4)
    ax.set_xticks(range(len(emotions)), emotions)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("strict F1" if subtask == 1 else "pair F1")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title(f"ecpe subtask {subtask}: F1 per emotion")
    return svg(fig)


def _details(summary_text: str, body: str) -> str:
    return f"<details><summary>{html.escape(summary_text)}</summary>{body}</details>"


def sections(summary: pl.DataFrame, scores: pl.DataFrame) -> list[tuple[str, str]]:
    if "run" not in scores.columns:
        return []
    figures = config_figures(scores)
    if not figures:
        return [("ECPE per emotion", "<p class='note'>No per-emotion counts in this run's scores.parquet (scored by an "
                 "older version): rescore to see them.</p>")]
    out: list[tuple[str, str]] = []
    for st in (1, 2):
        of = {run: by[st] for run, by in figures.items() if st in by}  # the configs that scored this subtask
        if not of:
            continue
        official = "".join(table(official_table(of, keys)) for keys in OFFICIAL_GROUPS[st])
        note = f"<p>{html.escape(NOTE)}</p>" if not out else ""  # said once, above the first subtask's figures
        out.append((f"ECPE subtask {st}: official scores", note + official))
        detail = emotion_table(of)
        if st == 1:
            glance = (f"<p>Strict F1 per emotion:</p>{table(f1_by_emotion(of, 'strict_f1'))}"
                      f"<p>Proportional F1 per emotion:</p>{table(f1_by_emotion(of, 'proportional_f1'))}")
            strict = detail.select("run", "emotion", *STRICT_DETAIL, "strict_precision", "strict_recall", "strict_f1")
            more = (_details("strict: counts, precision, recall and F1 per config and emotion", table(strict))
                    + _details("proportional: tokens, precision, recall and F1 per config and emotion",
                               table(detail.select("run", "emotion", *PROPORTIONAL_DETAIL))))
        else:
            glance = f"<p>F1 per emotion:</p>{table(f1_by_emotion(of, 'f1'))}"
            more = _details("counts, precision, recall and F1 per config and emotion", table(detail))
        body = glance + f"<div class='chart'>{_chart(of, st)}</div>" + more
        out.append((f"ECPE subtask {st}: per emotion", body))
    return out
