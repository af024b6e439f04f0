"""Job specs: the YAML a user writes, validated with pydantic, and its expansion into run configs.

A job names its dataset, its models (each loaded once for the whole job), the runs (explicit list and/or a grid whose
cross product is taken), scoring options and where outputs go. Unknown keys and bad values are errors that name the key
and what is allowed.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from emocaustics.core.errors import UsageError, shorten
from emocaustics.core.optionkeys import run_level_keys
from emocaustics.core.task import Options, Sample, Task, get_task
from emocaustics.jobs.labels import config_axes, label_runs
from emocaustics.jobs.modelentry import ModelSpec  # noqa: F401 (a job's model entry; imported from here too)
from emocaustics.jobs.yamlkeys import safe_load_unique


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScoringSpec(BaseModel):
    """The job's embedder and judge; any other key is a task's scoring option (passed to its scorer)."""

    model_config = ConfigDict(extra="allow", frozen=True)
    embedder: str = "minilm"
    judge: str = "none"  # none | a model name from `models` | openai:MODEL@BASE_URL (or a shorthand)

    @field_validator("judge")
    @classmethod
    def _judge_shorthand(cls, judge: str) -> str:
        from emocaustics.models.spec import expand_shorthand

        try:
            return expand_shorthand(judge) if ":" in judge else judge
        except UsageError as exc:
            raise ValueError(str(exc)) from None

    @property
    def task_options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class SelectSpec(_Strict):
    """Which loaded samples a config evaluates, for every task alike: the runner applies it right after `Task.load`
    (`apply`), so the dry run, the solve, the scores, the provenance and a resume all see the same samples. `ids`
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


def _lift_legacy(raw: Any) -> Any:
    """Run keys that older job files put beside `task` instead of under `options` (still accepted, moved on load):
    `method`, and the options the task declares (`core.optionkeys.LegacyRunKeys`); an unknown task is named here."""
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


class RunSpec(_Strict):
    """One configuration: a task, its options (method and the task's own knobs), the model it uses (a key of
    `models`; none for calibration predictors) and optionally its own dataset (else the job's)."""

    task: str
    model: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    dataset: dict[str, Any] | None = None
    name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")  # the label, when given
    select: SelectSpec | None = None  # which samples (else the job's `select`, else all)
    # The label the job gave this run (`JobSpec.expand`: it names the options that vary between the job's configs).
    _label: str | None = PrivateAttr(None)

    @model_validator(mode="before")
    @classmethod
    def _legacy(cls, raw: Any) -> Any:
        return _lift_legacy(raw)

    def resolve(self) -> tuple[Task, Options]:
        """The task and its validated options (errors name the option and what is allowed)."""
        task = get_task(self.task)
        return task, task.parse_options(self.options)

    @property
    def label(self) -> str:
        """Its `name`, else the label its job gave it (`JobSpec.expand`), else (a run on its own) task, method,
        model and the options set away from their defaults."""
        if self.name:
            return self.name
        if self._label:
            return self._label
        task, opts = self.resolve()
        return task.label(opts, self.model if task.needs_model(opts) else None)


class GridSpec(BaseModel):
    """Lists whose cross product is taken; every combination becomes a run. `task` and `model` are lists; any other
    key is a task option (a list crosses, a scalar applies to all); `options` holds scalars for every cell."""

    model_config = ConfigDict(extra="allow", frozen=True)
    task: list[str]
    model: list[str | None] = Field(default_factory=lambda: [None])
    options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _axes(self) -> "GridSpec":
        """An empty axis would make the whole grid give no runs, and a value listed twice the same runs twice:
        both are mistakes, refused by name."""
        lists = {"task": self.task, "model": self.model, **{k: v for k, v in (self.model_extra or {}).items()
                                                           if isinstance(v, list)}}
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
        keys = list(axes)
        runs = []
        for task, model, *values in itertools.product(self.task, self.model, *axes.values()):
            options = {**self.options, **{k: v for k, v in zip(keys, values) if v is not None}}
            runs.append(RunSpec(task=task, model=model, options=options))
        return runs


class RaySpec(_Strict):
    address: str | None = None  # None: start a local Ray; "auto" or ray://... for a cluster
    num_cpus: int | None = None
    object_store_memory: int | None = 500_000_000
    namespace: str = "emocaustics"


class LogSpec(_Strict):
    """The run's eval log (evallog/): `prompts: false` keeps each call's counts and timings but no prompt or answer."""

    prompts: bool = True


class JobSpec(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    # The dataset options of the job's tasks: either one mapping for every run (e.g. `{subset: sample}`), or one per
    # task name (`{taskname: {...}, other: {split: sample}}`); a run's own `dataset:` wins over both.
    dataset: dict[str, Any] = Field(default_factory=dict)
    models: dict[str, ModelSpec] = Field(default_factory=dict)
    runs: list[RunSpec] = Field(default_factory=list)
    grid: GridSpec | None = None
    scoring: ScoringSpec = Field(default_factory=ScoringSpec)
    output: str = "runs"  # relative: resolved against `base_dir()` (see `output_path`)
    cache_dir: str | None = None  # LLM response cache; default $EMOCAUSTICS_CACHE, else <run folder>/cache
    concurrency: int = Field(64, ge=1)  # dialogues in flight per model replica
    ray: RaySpec = Field(default_factory=RaySpec)
    log: LogSpec = Field(default_factory=LogSpec)
    select: SelectSpec | None = None  # which samples every run evaluates (a run's own `select` wins)
    max_cost_usd: float | None = Field(None, gt=0)  # per invocation; stops before crossing it (models/budget.py)

    @field_validator("models")
    @classmethod
    def _names(cls, models: dict[str, ModelSpec]) -> dict[str, ModelSpec]:
        for name in models:
            if not name.replace("-", "").replace("_", "").isalnum():
                raise ValueError(f"model name {name!r}: use letters, digits, '-' and '_'")
        return models

    @model_validator(mode="after")
    def _check_references(self) -> "JobSpec":
        for i, run in enumerate(self.runs):  # errors in the explicit runs name the run's place in the file
            _resolve_named(run, f"runs.{i}")
            _validate_named(get_task(run.task).Dataset, self.dataset_for(run), f"runs.{i}: dataset")
        if self.grid is not None:
            for run in self.grid.runs():
                _resolve_named(run, "grid")
        runs = self.expand()
        if not runs:
            raise ValueError("the job has no runs: give `runs:` and/or `grid:`")
        for run in runs:
            task, opts = run.resolve()
            if task.needs_model(opts):
                if run.model is None:
                    raise ValueError(f"run {run.label!r}: method {opts.method!r} needs a model (a key of `models`)")
                if run.model not in self.models:
                    raise ValueError(f"run {run.label!r} names model {run.model!r}; defined models: "
                                     f"{sorted(self.models)}")
            _validate_named(task.Dataset, self.dataset_for(run), "dataset")
        return self

    def dataset_for(self, run: RunSpec) -> dict[str, Any]:
        if run.dataset is not None:
            return run.dataset
        if run.task in self.dataset and isinstance(self.dataset[run.task], dict):
            return self.dataset[run.task]
        if any(isinstance(v, dict) for v in self.dataset.values()):  # keyed per task, and this task has none
            return {}
        return self.dataset

    def select_for(self, run: RunSpec) -> SelectSpec | None:
        return run.select if run.select is not None else self.select

    def expand(self) -> list[RunSpec]:
        """Explicit runs, then the grid's cross product, without duplicates, in a stable order. A calibration
        predictor needs no model, so its grid cells collapse into one run."""
        runs = list(self.runs) + (self.grid.runs() if self.grid is not None else [])
        for i, run in enumerate(self.runs):  # the same config listed twice in `runs:` would run once, silently
            if run in self.runs[:i]:
                raise ValueError(f"runs.{i} is the same run as runs.{self.runs.index(run)} ({run.label}): list it "
                                 "once (or give the two different `name:`s to run it twice)")
        collapsed = []
        for run in runs:
            task, opts = run.resolve()
            collapsed.append(run.model_copy(update={"model": None}) if not task.needs_model(opts) else run)
        unique: dict[str, RunSpec] = {}
        for run in label_runs(collapsed, lambda r: self.dataset_for(r)):
            seen = unique.setdefault(run.label, run)
            if seen is not run and seen.model_dump() != run.model_dump():
                # Same label, different work (e.g. another dataset file): keeping one would drop the other silently.
                raise ValueError(f"two runs are both labelled {run.label!r} but differ "
                                 f"({seen.model_dump(exclude_defaults=True)} vs {run.model_dump(exclude_defaults=True)}); "
                                 "give one of them a `name:`")
        return list(unique.values())


def _problems(exc: ValidationError) -> list[tuple[str, str]]:
    """(where, what) of each error: the dotted key, and pydantic's words ("unknown key" for an extra one)."""
    out = []
    for err in exc.errors():
        msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        if err["type"] == "literal_error":
            msg = f"{msg} (got {err.get('input')!r})"
        out.append((".".join(str(p) for p in err["loc"]), msg))
    return out


def _messages(exc: ValidationError, prefix: str) -> str:
    return "; ".join(f"{prefix}.{where}: {msg}" if where else f"{prefix}: {msg}" for where, msg in _problems(exc))


def _resolve_named(run: RunSpec, where: str) -> None:
    """`run.resolve()` with errors that say where (runs.N.options.KEY) instead of pydantic's nested dump."""
    try:
        run.resolve()
    except ValidationError as exc:
        raise ValueError(_messages(exc, f"{where}.options")) from None
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _validate_named(model: type[BaseModel], data: dict[str, Any], where: str) -> None:
    try:
        model.model_validate(data)
    except ValidationError as exc:
        raise ValueError(_messages(exc, where)) from None


def _format_error(path: str, exc: ValidationError) -> str:
    return "\n".join(f"{path}: {where or '(top level)'}: {msg}" for where, msg in _problems(exc))


def load_job(path: str | Path, overrides: dict[str, Any] | None = None) -> JobSpec:
    """Read and validate a job YAML; errors name the file and the key."""
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"{path} is a directory; give a job spec YAML file (see jobs/)")
    try:
        raw = safe_load_unique(path.read_text(encoding="utf-8"))  # a key given twice is an error (yamlkeys.py)
    except FileNotFoundError:
        raise UsageError(f"job spec not found: {path}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not a text file (a job spec is YAML, UTF-8)") from None
    except OSError as exc:  # a symlink loop, no permission, a device: one line, not a traceback
        raise UsageError(f"{path}: the job spec cannot be read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise UsageError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise UsageError(f"{path}: a job spec is a mapping of keys (name, dataset, models, runs, grid, ...)")
    raw.update(overrides or {})
    try:
        return JobSpec.model_validate(raw)
    except ValidationError as exc:
        raise UsageError(_format_error(str(path), exc)) from None


BASE_DIR_ENV = "EMOCAUSTICS_BASE_DIR"


def base_dir() -> Path:
    """The folder a job's relative output paths (`output:`, `run --out`) are resolved against: `$EMOCAUSTICS_BASE_DIR`,
    else the current directory. A job sent by `jobs/submit.sh` runs in Ray's temporary copy of the project (deleted
    with it); submit.sh sets the variable to the folder the user submitted from, so a submitted job writes where a
    local run started there would."""
    return Path(os.path.abspath(os.environ.get(BASE_DIR_ENV) or os.getcwd()))


def output_path(path: str | Path) -> Path:
    """An output path made absolute against `base_dir()` (an absolute path is kept)."""
    return Path(os.path.abspath(base_dir() / Path(path).expanduser()))


def dump_job(job: JobSpec) -> str:
    """The resolved spec as YAML (written to config.yaml next to the outputs)."""
    data = job.model_dump(mode="json", exclude={"select"} if job.select is None else None)
    axes = config_axes(job)  # what each label names because it varies: the report's axis columns
    data["resolved_runs"] = [run.model_dump(mode="json", exclude={"select"} if run.select is None else None)
                             | {"label": run.label, "axes": axes.get(run.label, {})} for run in job.expand()]
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
