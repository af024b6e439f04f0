"""Which summary columns a reader sees first, and what every column means, the intervals' clusters included (one text
for the HTML legend, the Markdown summary and the LaTeX export).

The summary of a job is split in two: the main table (what was run, how many samples, the score with its 95 %
interval, failures and cost) and the components (`c_<metric>`: the task's secondary metrics), shown per task in their
own tables. A task may describe its metrics with a class attribute `metric_docs: dict[str, str]` (metric name ->
meaning; a key ending in ':' covers every metric with that prefix, e.g. `z:` for `z:<system>`); a metric it does not
describe is still defined by the generic `c_<metric>` line. A task's own per-config columns (a window size) and
their meaning come from the task too (`Report.option_column_docs`: a task declares them, the report asks): this module
names none.

The grid's axes are summary columns too: one column `opt:<key>` per option that varies between a job's configs of the
same task and method (`jobs.labels.label_axes`: what each label names), as the job recorded them in the run folder's
`config.yaml` (each resolved run's `axes`). A run folder written before the job recorded them shows no axis columns.
A config the option does not vary for (a calibration row, a config alone of its method) has it empty: the column says
what distinguishes the configs of a grid, not every option of every config.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import polars as pl

from emocaustics.core.errors import UsageError
from emocaustics.core.task import Task, get_task


def registered(name: str) -> Task | None:
    """The task registered under `name`; None for a name none is (an old run folder's, a test's): its rows still show,
    without what a task adds (option columns, metric docs, tables across its configs)."""
    try:
        return get_task(name)
    except UsageError:
        return None


def declared_option_columns(task_names: Iterable[str]) -> dict[str, str]:
    """The option columns (name -> meaning) the named tasks declare, first task first; a column two tasks declare is
    defined by the first. A name no task is registered under (an old run folder's) declares none."""
    out: dict[str, str] = {}
    for task in filter(None, map(registered, task_names)):
        for column, doc in task.report.option_column_docs.items():
            out.setdefault(column, doc)
    return out


# The main columns, in the order shown; a column absent from the summary (or null in every row) is left out. The
# grid's axes and the tasks' own option columns (a task's `summary_columns(options)` values, defined by its
# `option_column_docs`; a report mixing tasks shows the union) go after what ran (`place_config_columns`).
MAIN_COLUMNS = ("run", "task", "method", "model", "samples", "score", "ci", "micro_score", "failures",
                "epochs", "epoch_sd", "epoch_changed", "judge_failures", "llm_calls", "tokens", "cost_usd", "wall_s")

COLUMN_DOCS: dict[str, str] = {
    "epochs": "how many times each sample was solved (`epochs: N`); its score is the epochs' reduced by the "
              "config's reducer (configs.json names it)",
    "epoch_sd": "the between-epoch spread: the mean over samples of the standard deviation of a sample's score "
                "over its epochs",
    "epoch_changed": "the share of samples whose score is not the same in every epoch",
    "run": "the config's label: task, method, model, then each option that varies between the job's configs of "
           "that method as key=value (a config alone of its method: the options it sets away from their defaults)",
    "task": "the evaluation task",
    "method": "how predictions were made (a solver that calls a model, or a built-in method that calls none)",
    "model": "the job's model the config used (empty: no model called)",
    "kind": "calibration (no model called: an oracle must score 1.0, a baseline is the floor), engine-check (the "
            "smoke model: random weights, its scores are noise) or model; the row's shading",
    "samples": "samples of the config that were scored (dialogues, questions, conversations, stories, assignments)",
    "score": "the task's primary metric, mean over the config's samples (a failed sample counts 0)",
    "ci": "95 % confidence interval of score: percentile bootstrap over the samples' clusters (each cluster drawn with "
          "all its samples; the line under the table names each task's unit, e.g. an AER topic, else one sample "
          "each), 10,000 resamples, seed 0",
    "ci_low": "lower end of the 95 % bootstrap interval of score (10,000 resamples of the samples' clusters, seed 0)",
    "ci_high": "upper end of the 95 % bootstrap interval of score",
    "micro_score": "score weighted by each sample's weight (the task decides it, e.g. a dialogue's length); "
                   "equal to score when every weight is 1",
    "failures": "samples that failed (no prediction, an unusable answer, or an unscorable item); they count 0 in "
                "score and the report lists each with its reason",
    "judge_failures": "LLM-judge calls that gave no usable verdict",
    "llm_calls": "LLM requests made for the config's samples",
    "cache_hits": "LLM requests answered by the response cache (no model call)",
    "tokens": "prompt plus generated tokens of those requests",
    "generated_tokens": "tokens the model generated",
    "cost_usd": "US dollars of those requests at the model's price per 1M tokens (the shipped table, dated, or the "
                "job's `price:`); empty where the model has no known price (unknown, not free)",
    "wall_s": "wall-clock seconds the runner spent on the config (load, solve, score; summed over resumed "
              "parts); engine and embedder start-up are not in it (reported once per model)",
    "note": "what the row is, in words",
    "component": "c_<metric>: mean over the config's scored samples of the task's per-sample metric <metric> "
                 "(samples the metric does not apply to are left out, not counted 0)",
}


AXIS_DOC = ("the config's option {key}: one of the options that vary between the job's configs (its grid's axes); "
            "empty where it does not vary")

PREFIX = "opt:"


def axis_columns(df: pl.DataFrame) -> list[str]:
    return [c for c in df.columns if c.startswith(PREFIX)]


def read_axes(run_dir: Path) -> pl.DataFrame | None:
    """(run, opt:<key>...) for the configs recorded in `run_dir/config.yaml`; None when the folder has no such file,
    the file records no axes, or no option varies."""
    import yaml

    path = run_dir / "config.yaml"
    if not path.is_file():
        return None
    try:
        runs = yaml.safe_load(path.read_text(encoding="utf-8"))["resolved_runs"]
        axes = {str(r["label"]): dict(r["axes"]) for r in runs}
    except Exception:  # an old or foreign config.yaml: the tables stand without the axis columns
        return None
    keys = sorted({k for values in axes.values() for k in values})
    if not keys:
        return None
    rows = [{"run": label, **{PREFIX + k: (None if k not in v else str(v[k])) for k in keys}}
            for label, v in axes.items()]
    return pl.DataFrame(rows, schema={"run": pl.Utf8, **{PREFIX + k: pl.Utf8 for k in keys}})


def with_axes(summary: pl.DataFrame, axes: pl.DataFrame | None) -> pl.DataFrame:
    """The summary with the axis columns after `model` (rows of configs the job no longer has stay empty)."""
    if axes is None or "run" not in summary.columns:
        return summary
    joined = summary.drop(axis_columns(summary)).join(axes, on="run", how="left")
    cols = [c for c in summary.columns if c not in axis_columns(summary)]
    at = cols.index("model") + 1 if "model" in cols else len(cols)
    return joined.select(*cols[:at], *axis_columns(axes), *cols[at:])


def present(df: pl.DataFrame, columns: Iterable[str]) -> list[str]:
    """`columns` that the frame has and that hold at least one value."""
    return [c for c in columns if c in df.columns and df.get_column(c).null_count() < df.height]


def with_ci(summary: pl.DataFrame, digits: int = 4) -> pl.DataFrame:
    """Add `ci` ("[low, high]") from ci_low/ci_high (empty when either is missing)."""
    if not {"ci_low", "ci_high"} <= set(summary.columns):
        return summary
    fmt = f"{{:.{digits}f}}"
    text = [None if lo is None or hi is None or lo != lo or hi != hi else f"[{fmt.format(lo)}, {fmt.format(hi)}]"
            for lo, hi in zip(summary["ci_low"].to_list(), summary["ci_high"].to_list())]
    return summary.with_columns(pl.Series("ci", text, dtype=pl.Utf8))


def same_as_score(summary: pl.DataFrame, column: str = "micro_score") -> bool:
    """Whether `column` equals `score` (to the 4 digits shown) in every row: e.g. micro = macro when every weight
    is 1, and a narrow table need not show it twice."""
    if column not in summary.columns or "score" not in summary.columns:
        return False
    gap = (summary[column] - summary["score"]).abs().fill_null(0).max()
    return gap is None or float(gap) < 5e-5


def option_columns(df: pl.DataFrame) -> dict[str, str]:
    """The per-config columns the frame's tasks declare (`Report.option_column_docs`: name -> meaning, in their order) that
    the frame has; none for a frame without a task column."""
    if "task" not in df.columns:
        return {}
    declared = declared_option_columns(df["task"].unique(maintain_order=True).drop_nulls().to_list())
    return {c: doc for c, doc in declared.items() if c in df.columns}


WHAT_RAN = ("run", "task", "method", "model")


def place_config_columns(df: pl.DataFrame, cols: list[str]) -> list[str]:
    """`cols` (present columns in the order of MAIN_COLUMNS) with the config's own columns that hold a value: the
    tasks' option columns after what ran, and before them, right after the model, the grid's axes."""
    cols = list(cols)
    ran = [i for i, c in enumerate(cols) if c in WHAT_RAN]
    at = ran[-1] + 1 if ran else 0
    cols[at:at] = present(df, option_columns(df))
    at = cols.index("model") + 1 if "model" in cols else 1  # the grid's axes right after what ran
    cols[at:at] = present(df, axis_columns(df))
    return cols


def main_table(summary: pl.DataFrame, drop_same_micro: bool = False) -> pl.DataFrame:
    """The main columns of the summary (with `kind` kept first for row shading when present); with
    `drop_same_micro`, micro_score is left out when it equals score in every row."""
    df = with_ci(summary)
    if "cost_usd" in df.columns:  # shown as text: dollars to 4 places, "unknown" where the price is (never 0)
        df = df.with_columns(pl.col("cost_usd").map_elements(lambda v: f"{v:.4f}", return_dtype=pl.Utf8)
                             .fill_null("unknown"))
    cols = present(df, MAIN_COLUMNS)
    if drop_same_micro and same_as_score(df):
        cols.remove("micro_score")
    return df.select(*(["kind"] if "kind" in df.columns else []), *place_config_columns(df, cols))


def cluster_note(summary: pl.DataFrame) -> str:
    """What the intervals and paired tests resampled, per task: its cluster unit and how many clusters (one line,
    shown under the summary table)."""
    if "cluster_by" not in summary.columns:
        return ""
    parts = []
    for task, unit, n, samples in (summary.group_by("task", maintain_order=True)
                                   .agg(pl.first("cluster_by"), pl.max("clusters"), pl.max("samples")).iter_rows()):
        own = " (one sample each)" if unit in (None, "sample") or n == samples else ""
        parts.append(f"{task}: {unit or 'sample'}, {n} clusters{own}")
    return ("Intervals (ci) and paired tests resample clusters, each drawn with all its samples (summary.csv: "
            f"clusters, cluster_by): {'; '.join(parts)}.")


def components_by_task(summary: pl.DataFrame) -> dict[str, list[str]]:
    """Per task, its component columns (`c_*` with at least one value in that task's rows)."""
    out: dict[str, list[str]] = {}
    for task in summary["task"].unique(maintain_order=True).to_list():
        rows = summary.filter(pl.col("task") == task)
        cols = present(rows, [c for c in summary.columns if c.startswith("c_")])
        if cols:
            out[task] = cols
    return out


def metric_doc(task_name: str, metric: str) -> tuple[str, str] | None:
    """The task's own description of a metric (its `metric_docs`), if it gives one, with the key that matched
    (the metric itself, or a prefix key such as `z:`)."""
    if (task := registered(task_name)) is None:  # the generic line still defines it
        return None
    docs = task.report.metric_docs
    if metric in docs:
        return metric, docs[metric]
    for key, text in docs.items():
        if key.endswith(":") and metric.startswith(key):
            return key, text
    return None


def column_doc(column: str, declared: dict[str, str] | None = None) -> str | None:
    """What a main column means: the report's own, a task's declared option column (`declared`: `option_columns`),
    a grid axis; None for a column the legend does not define."""
    if column in COLUMN_DOCS:
        return COLUMN_DOCS[column]
    if declared and column in declared:
        return declared[column]
    return AXIS_DOC.format(key=column[len(PREFIX):]) if column.startswith(PREFIX) else None


def legend(columns: Iterable[str], components: dict[str, list[str]] | None = None,
           declared: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """(column, meaning) for every column shown: the main ones (`declared`: the tasks' option columns, from
    `option_columns`), then each task's components (the columns a task describes with one prefix key, e.g. `z:`,
    get one line: `c_z:<name>`)."""
    out = [(c, doc) for c in columns if (doc := column_doc(c, declared)) is not None]
    for task, cols in (components or {}).items():
        seen: set[str] = set()
        for c in cols:
            found = metric_doc(task, c[2:])
            if found is None:
                out.append((f"{c} ({task})", f"mean over the config's scored samples of the {task} metric "
                                             f"{c[2:]!r}"))
                continue
            key, text = found
            if key in seen:
                continue
            seen.add(key)
            name = f"c_{key}<name>" if key.endswith(":") and key != c[2:] else c
            out.append((f"{name} ({task})", f"{text} (mean over the config's scored samples)"))
    return out
