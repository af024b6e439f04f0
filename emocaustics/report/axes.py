"""The grid's axes as summary columns: one column `opt:<key>` per option that varies between a job's configs of the
same task and method (`jobs.labels.label_axes`: what each label names), as the job recorded them in the run folder's
`config.yaml` (each resolved run's `axes`). A run folder written before the job recorded them shows no axis columns.

A config the option does not vary for (a calibration row, a config alone of its method) has it empty: the column says
what distinguishes the configs of a grid, not every option of every config.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

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
