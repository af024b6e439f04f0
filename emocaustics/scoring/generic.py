"""Scoring a folder of predictions with a task's own scorer (`Task.score`), without a model or a job: what
`emocaustics score TASK --pred DIR` prints and `ec.score(...)` returns.

The samples come from `Task.load` (dataset options: the ones the predictions were made for, read from the folder's
provenance.json, then the caller's), the predictions from `store.read_predictions`, paired by the job's rule
(`core.predictions`): a sample with no prediction is a failure, counted 0 and listed; predictions of no sample are
reported through `warn`, and a folder of which none pairs is a usage error (nothing scored).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from emocaustics.core.errors import UsageError


@dataclass
class Scores:
    """Predictions scored against gold. Frames are Polars:

    - `scores`: one row per sample: `sample_id`, `score` (the primary metric, or the first per-sample metric where
      the primary is corpus-level), `failed`, `status`, `reason`, and `c_<metric>` for the other per-sample metrics
    - `rows`: the long score rows (sample_id, metric, value, weight, status, reason)
    - `failures`: `sample_id`, `reason` of each sample that failed (no prediction, a failure row, or failed scoring)
    - `items`: the scorer's per-item explanations (None where it has none); `tables`: its extra tables by name
    """

    task: str
    primary_metric: str
    value: float | None  # the primary metric over the samples (the corpus-level value where the task has one)
    summary: dict[str, Any]  # the scorer's corpus-level metrics
    scores: pl.DataFrame
    rows: pl.DataFrame
    failures: pl.DataFrame
    samples: int = 0
    unpaired: list[str] = field(default_factory=list)  # prediction ids that are no sample's (not scored)
    items: pl.DataFrame | None = None
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)

    @property
    def failed(self) -> int:
        return self.failures.height


def per_sample(rows: pl.DataFrame, primary: str) -> pl.DataFrame:
    """One row per sample from a scorer's long rows: the primary metric as `score`, the others as `c_<metric>`."""
    if rows.height and primary not in set(rows["metric"]):
        primary = rows["metric"][0]
    main = rows.filter(pl.col("metric") == primary).select(
        "sample_id", "weight", pl.col("value").alias("score"), (pl.col("status") == "failed").alias("failed"),
        "status", "reason")
    others = rows.filter(pl.col("metric") != primary)
    if others.height:
        wide = others.pivot(on="metric", index="sample_id", values="value", aggregate_function="first")
        wide = wide.rename({c: f"c_{c}" for c in wide.columns if c != "sample_id"})
        main = main.join(wide, on="sample_id", how="left")
    return main


def _validated(what: str, flag: str, build: Any, raw: dict[str, Any]) -> Any:
    from pydantic import ValidationError

    try:
        return build(raw)
    except ValidationError as exc:
        errors = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(options)'}: {e['msg']}" for e in exc.errors())
        raise UsageError(f"{what} ({flag}): {errors}") from None
    except ValueError as exc:
        raise UsageError(f"{what} ({flag}): {exc}") from None


def score_predictions(task_name: str, folder: Path, *, dataset: dict[str, Any] | None = None,
                      options: dict[str, Any] | None = None, ignore_provenance: bool = False,
                      where: str | None = None, warn: Callable[[str], None] = lambda line: None) -> Scores:
    """Score `folder` (predictions.jsonl, failures.jsonl, provenance.json) for task `task_name`. `dataset`/`options`
    go over the ones provenance.json records; `where` names the predictions in messages (default: the folder)."""
    from emocaustics.core import provenance
    from emocaustics.core.predictions import pair
    from emocaustics.core.task import ScoreContext, get_task, parse_options

    task = get_task(task_name)
    where = where or str(folder)
    record = None if ignore_provenance else provenance.read(folder)
    raw_dataset = dict((record or {}).get("dataset") or {}) | dict(dataset or {})
    data = _validated(f"dataset options of task {task.name!r}", "--data/-D", task.Dataset.model_validate, raw_dataset)
    methods = task.methods.all
    raw_options = dict((record or {}).get("options") or ({"method": methods[0]} if methods else {}))
    opts = _validated(f"options of task {task.name!r}", "-T", lambda raw: parse_options(task, raw), raw_options | dict(options or {}))
    samples = task.data.load(data, opts).samples
    if record is not None:  # the samples the predictions were made for (the run's selection), checked by content
        made = {str(k) for k in record["samples"]}
        chosen = [s for s in samples if s.id in made]
        if chosen and len(chosen) < len(samples):
            warn(f"scoring the {len(chosen)} of {len(samples)} samples the predictions were made for "
                 f"({folder / provenance.FILE})")
            samples = chosen
        provenance.check(record, task.name, {s.id: task.data.fingerprint(s) for s in samples}, where)
    paired = pair(samples, task.store.read_predictions(folder))
    if len(samples) == len(paired.missing):
        shown = ", ".join(paired.unpaired[:5]) + (" ..." if len(paired.unpaired) > 5 else "")
        raise UsageError(f"{where}: no prediction pairs with any of the {len(samples)} samples "
                         f"(ids found: {shown or 'none'}); is this the right task and data?")
    if paired.unpaired:
        warn(f"warning: {len(paired.unpaired)} prediction(s) in {where} pair with no sample and were not scored: "
             f"{', '.join(paired.unpaired[:20])}{' ...' if len(paired.unpaired) > 20 else ''}")
    scored = task.scorer.score(samples, {k: v for k, v in paired.predictions.items() if k not in paired.unpaired}, opts,
                        ScoreContext())
    reasons = {sid: str(paired.predictions[sid]) for sid in paired.failed}
    for row in scored.rows.filter(scored.rows["status"] == "failed").iter_rows(named=True):
        reasons.setdefault(row["sample_id"], row["reason"] or "scored as failed")
    value = scored.summary.get(task.report.primary_metric)
    if value is None and scored.rows.height:
        value = scored.rows.filter(scored.rows["metric"] == task.report.primary_metric)["value"].mean()
    failures = pl.DataFrame({"sample_id": sorted(reasons), "reason": [reasons[k] for k in sorted(reasons)]},
                            schema={"sample_id": pl.Utf8, "reason": pl.Utf8})
    return Scores(task=task.name, primary_metric=task.report.primary_metric, value=None if value is None else float(value),
                  summary=dict(scored.summary), scores=per_sample(scored.rows, task.report.primary_metric), rows=scored.rows,
                  failures=failures, samples=len(samples), unpaired=list(paired.unpaired), items=scored.items,
                  tables=dict(scored.tables))
