"""One configuration of a job: a run (`RunSpec`: task, model, options, dataset, sample selection, epochs and
per-sample limits), the samples it selects (`SelectSpec`), and a grid of them (`GridSpec`, whose lists cross). The job
file around them is `jobs/spec.py`, which imports these from here."""

from __future__ import annotations

import contextlib
import itertools
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from emocaustics.core.errors import UsageError, shorten
from emocaustics.core.optionkeys import dataset_option, run_level_keys
from emocaustics.core.task import Loaded, Options, Sample, Task, get_task, needs_model, parse_options

class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SelectSpec(_Strict):
    """Which loaded samples a config evaluates, for every task alike: the runner loads through it (`load`: `Task.load`,
    then `apply`), so the dry run, the solve, the scores, the provenance and a resume all see the same samples. `ids`
    (strings or ints, matched against the samples' ids) keeps those in load order; `limit` then takes the first N."""

    ids: list[str] | None = None
    limit: int | None = Field(None, ge=1)

    @field_validator("ids", mode="before")
    @classmethod
    def _ids(cls, value: Any) -> Any:
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            value = [value]
        if isinstance(value, list):
            return [str(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in value]
        return value

    def load(self, task: Task, dataset: Any, options: Options) -> Loaded:
        """The task's samples of this selection, its figures in the info (`loaded_samples`, `selected_samples`). The
        ids go to the task's own ids option where it declares one (`DatasetOptions.option_for`) and the dataset leaves
        it unset, so that its loader reads only those samples (an `eval --ids` of 3 dialogues read all 400); ids that
        option cannot hold are left to `apply` to name."""
        field, narrowed = dataset_option(task, "ids"), dataset
        if self.ids is not None and field is not None and getattr(dataset, field) is None:
            with contextlib.suppress(ValidationError):
                narrowed = type(dataset).model_validate({**dataset.model_dump(), field: self.ids})
        loaded = task.data.load(narrowed, options)
        shown = ", ".join(f"{k}={v}" for k, v in dataset.model_dump(exclude_defaults=True).items())
        samples = self.apply(loaded.samples, f"dataset {task.name}" + (f" ({shown})" if shown else ""))
        info = {**loaded.info, "loaded_samples": len(loaded.samples), "selected_samples": len(samples)}
        return Loaded(samples, loaded.defects, info)

    def apply(self, samples: list[Sample], where: str) -> list[Sample]:
        """The selected samples; an id the data does not have is a UsageError naming it and `where` (the dataset)."""
        if self.ids is not None:
            wanted, have = set(self.ids), {s.id for s in samples}
            unknown = [i for i in dict.fromkeys(self.ids) if i not in have]
            if unknown:
                shown = ", ".join(map(shorten, unknown[:10])) + (
                    f" and {len(unknown) - 10} more" if len(unknown) > 10 else "")
                raise UsageError(f"select.ids: {where} has no sample {shown} ({len(samples)} samples, e.g. "
                                 f"{', '.join(s.id for s in samples[:3]) or 'none'})")
            samples = [s for s in samples if s.id in wanted]
        return samples if self.limit is None else samples[:self.limit]


class RunSpec(_Strict):
    """One configuration: a task, its options (method and the task's own knobs), the model it uses (a key of
    `models`; none for calibration predictors) and optionally its own dataset (else the job's)."""

    task: str
    model: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    dataset: dict[str, Any] | None = None
    name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")  # the label, when given
    select: SelectSpec | None = None  # which samples (else the job's `select`, else all)
    # Epochs and per-sample limits (docs/jobs.md): each sample solved `epochs` times, reduced by `reducer` (None: the
    # task's default, scoring/reducers.py); a sample over `token_limit` generated tokens or `time_limit` seconds from its
    # first call, or still running `config_time_limit` seconds after its config started, is a failure row.
    epochs: int = Field(1, ge=1, le=1000)
    reducer: str | None = None
    token_limit: int | None = Field(None, ge=1)
    time_limit: float | None = Field(None, gt=0)
    config_time_limit: float | None = Field(None, gt=0)
    # The label the job gave this run (`JobSpec.expand`: it names the options that vary between the job's configs),
    # and those options' values (`_axes`: the summary tables' axis columns, in config.yaml).
    _label: str | None = PrivateAttr(None)
    _axes: dict[str, Any] = PrivateAttr(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _legacy(cls, raw: Any) -> Any:
        """Run keys that older job files put beside `task` instead of under `options` (still accepted, moved on
        load): `method`, and the options the task declares (`core.optionkeys.LegacyRunKeys`); an unknown task is
        named here."""
        if not isinstance(raw, dict):
            return raw
        keys = run_level_keys(get_task(raw["task"])) if isinstance(raw.get("task"), str) else ("method",)
        if any(k in raw for k in keys):
            raw = dict(raw)
            options = dict(raw.get("options") or {})
            for key in keys:
                if key in raw:
                    value = raw.pop(key)
                    if value is not None:
                        options.setdefault(key, value)
            raw["options"] = options
        return raw

    def resolve(self) -> tuple[Task, Options]:
        """The task and its validated options (errors name the option and what is allowed)."""
        task = get_task(self.task)
        return task, parse_options(task, self.options)

    @property
    def label(self) -> str:
        """Its `name`, else the label its job gave it (`JobSpec.expand`), else (a run on its own) task, method,
        model and the options set away from their defaults."""
        if self.name:
            return self.name
        if self._label:
            return self._label
        task, opts = self.resolve()
        return task.report.label(opts, self.model if needs_model(task, opts) else None)


RUN_KEYS = ("epochs", "reducer", "token_limit", "time_limit", "config_time_limit")  # a run's keys a grid may cross


class GridSpec(BaseModel):
    """Lists whose cross product is taken; every combination becomes a run. `task` and `model` are lists; any other
    key is a task option (a list crosses, a scalar applies to all); `options` holds scalars for every cell."""

    model_config = ConfigDict(extra="allow", frozen=True)
    task: list[str]
    model: list[str | None] = Field(default_factory=lambda: [None])
    options: dict[str, Any] = Field(default_factory=dict)
    # run keys (RunSpec): a list crosses, a scalar applies to every cell
    epochs: int | list[int] | None = None
    reducer: str | list[str] | None = None
    token_limit: int | list[int] | None = None
    time_limit: float | list[float] | None = None
    config_time_limit: float | list[float] | None = None

    @model_validator(mode="after")
    def _axes(self) -> "GridSpec":
        """An empty axis would make the whole grid give no runs, and a value listed twice the same runs twice:
        both are mistakes, refused by name."""
        lists = {"task": self.task, "model": self.model, **{k: v for k, v in (self.model_extra or {}).items()
                                                           if isinstance(v, list)},
                 **{k: v for k in RUN_KEYS if isinstance(v := getattr(self, k), list)}}
        for key, values in lists.items():
            if not values:
                raise ValueError(f"grid.{key} is an empty list, which makes the grid give no runs: give at least one "
                                 "value, or leave the key out")
            shown = [json.dumps(v, sort_keys=True, default=str) for v in values]
            if len(set(shown)) < len(shown):
                twice = next(v for v in shown if shown.count(v) > 1)
                raise ValueError(f"grid.{key} lists {twice} twice: list each value once")
        return self

    def runs(self) -> list[RunSpec]:
        axes = {k: (v if isinstance(v, list) else [v]) for k, v in (self.model_extra or {}).items()}
        run_axes = {k: (v if isinstance(v, list) else [v]) for k in RUN_KEYS if (v := getattr(self, k)) is not None}
        keys, run_keys = list(axes), list(run_axes)
        runs = []
        for task, model, *values in itertools.product(self.task, self.model, *axes.values(), *run_axes.values()):
            options = {**self.options, **{k: v for k, v in zip(keys, values) if v is not None}}
            run_values = dict(zip(run_keys, values[len(keys):]))
            runs.append(RunSpec(task=task, model=model, options=options, **run_values))
        return runs


def _check_epochs(run: RunSpec, task: Task, opts: Options) -> None:
    """Epochs, a reducer and limits are for a config that asks a model; a reducer must fit the task
    (scoring/reducers.py)."""
    from emocaustics.scoring.reducers import check_reducer

    if not needs_model(task, opts):
        given = [k for k in RUN_KEYS if getattr(run, k) != RunSpec.model_fields[k].default]
        if given:
            raise ValueError(f"run {run.label!r}: {given[0]} applies to a method that calls a model (method "
                             f"{opts.method!r} of task {task.name} calls none)")
        return
    if run.reducer is not None:
        try:
            check_reducer(run.reducer, task.Options, run.epochs)
        except ValueError as exc:
            raise ValueError(f"run {run.label!r}: reducer: {exc}") from None
