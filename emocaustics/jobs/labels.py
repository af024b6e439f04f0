"""The labels a job gives its configs (a config's folder under `predictions/` and its `run` in every table): task,
method, model, then `key=value` for each option that varies between the job's configs of that task and method. Used
by `JobSpec.expand` (jobs/spec.py) and by the summary tables' axis columns (report/columns.py); works on the job's
`RunSpec`s without importing them (jobs/spec.py imports this module)."""

from __future__ import annotations

import json
from typing import Any

from emocaustics.core.task import needs_model


def label_axes(runs: list[Any], datasets: list[dict[str, Any]]) -> list[list[str] | None]:
    """Per run, the option keys its label names: those whose value differs between the job's configs of the same
    task and method (a grid's axes, and what an explicit run sets otherwise), named even where the value is the
    default; an option constant across them is left out. A config alone of its task and method (counting distinct
    configs) gets None: its label keeps the options it sets away from their defaults. `datasets`: each run's."""
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    resolved = []
    for run, dataset in zip(runs, datasets):
        task, opts = run.resolve()
        data = opts.model_dump(mode="json")
        key = (task.name, data.pop("method"))
        config = json.dumps([run.model, data, dataset], sort_keys=True, default=str)
        groups.setdefault(key, {})[config] = data
        resolved.append(key)
    axes: dict[tuple[str, str], list[str] | None] = {}
    for key, configs in groups.items():
        options = list(configs.values())
        if len(options) < 2:
            axes[key] = None
            continue
        names = sorted({k for o in options for k in o})
        axes[key] = [k for k in names if len({json.dumps(o.get(k), sort_keys=True) for o in options}) > 1]
    return [axes[key] for key in resolved]


def label_runs(runs: list[Any], datasets: list[dict[str, Any]]) -> list[Any]:
    """Copies of the runs carrying the labels the job gives them (`label_axes`; a run's `name:` still wins) and the
    values of the options a label names because they vary (`_axes`: the grid's axis columns in the summary tables)."""
    out = []
    for run, axes in zip(runs, label_axes(runs, datasets)):
        task, opts = run.resolve()
        labelled = run.model_copy()
        model = run.model if needs_model(task, opts) else None
        labelled._label = task.report.label(opts, model, axes=axes) + _epochs(run)
        data = opts.model_dump(mode="json")
        labelled._axes = {k: data[k] for k in axes or []}
        out.append(labelled)
    return out


def _epochs(run: Any) -> str:
    """`_epochs=N` and `_reducer=R` when a run sets them (epochs, docs/jobs.md); nothing for one epoch."""
    epochs, reducer = getattr(run, "epochs", 1), getattr(run, "reducer", None)
    return (f"_epochs={epochs}" if epochs != 1 else "") + (f"_reducer={reducer}" if reducer else "")
