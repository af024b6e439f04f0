"""Job specs: the YAML a user writes, validated with pydantic, and its expansion into run configs.

A job names its dataset, its models (each loaded once for the whole job), the runs (explicit list and/or a grid whose
cross product is taken), scoring options and where outputs go. Unknown keys and bad values are errors that name the key
and what is allowed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from emocaustics.core.errors import UsageError
from emocaustics.core.task import get_task, needs_model
from emocaustics.jobs.labels import label_runs
from emocaustics.jobs.modelentry import ModelSpec  # noqa: F401 (a job's model entry; imported from here too)
from emocaustics.jobs.runspec import (RUN_KEYS, GridSpec, RunSpec, SelectSpec, _check_epochs,  # noqa: F401 (importable
                                      _Strict)  # from here too)
from emocaustics.core.yamlkeys import safe_load_unique


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
    output: str = "runs"  # relative: resolved against `rundir.base_dir()` (see `rundir.output_path`)
    # The response cache: on (the shared one, models/cacheplace.py), off, read-only, or a folder (`cache_dir:` too)
    cache: str = Field("on", min_length=1, validation_alias=AliasChoices("cache", "cache_dir"))
    concurrency: int = Field(64, ge=1)  # dialogues in flight per model replica
    ray: RaySpec = Field(default_factory=RaySpec)
    log: LogSpec = Field(default_factory=LogSpec)
    select: SelectSpec | None = None  # which samples every run evaluates (a run's own `select` wins)
    max_cost_usd: float | None = Field(None, gt=0)  # per invocation; stops before crossing it (models/budget.py)
    # solve and write the predictions only (`eval --no-score`); outside the hash: a `--resume` without it scores them
    no_score: bool = Field(False, exclude=True)

    @field_validator("cache", mode="before")
    @classmethod
    def _cache_word(cls, v: Any) -> Any:
        from emocaustics.models.cacheplace import cache_value  # a mode, or a folder written as a path

        v = {True: "on", False: "off"}.get(v, v) if isinstance(v, bool) else v  # YAML reads a bare off as false
        return cache_value(v) if isinstance(v, str) else v

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
            _check_epochs(run, *run.resolve())
            _validate_named(get_task(run.task).Dataset, self.dataset_for(run), f"runs.{i}: dataset")
        if self.grid is not None:
            for run in self.grid.runs():
                _resolve_named(run, "grid")
        runs = self.expand()
        if not runs:
            raise ValueError("the job has no runs: give `runs:` and/or `grid:`")
        for run in runs:
            task, opts = run.resolve()
            _check_epochs(run, task, opts)
            if needs_model(task, opts):
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
        collapsed, datasets = [], []
        for run in runs:
            task, opts = run.resolve()
            datasets.append(self.dataset_for(run))  # a run's dataset is not one of the keys collapsed
            collapsed.append(run.model_copy(update={"model": None, **{k: RunSpec.model_fields[k].default
                                                                      for k in RUN_KEYS}})
                             if not needs_model(task, opts) else run)
        unique: dict[str, RunSpec] = {}
        for run in label_runs(collapsed, datasets):
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


def dump_job(job: JobSpec, runs: list[RunSpec] | None = None) -> str:
    """The resolved spec as YAML (written to config.yaml next to the outputs); `runs`: the job's expanded runs, when
    the caller has them (`jobs/configs.resolve`)."""
    data = job.model_dump(mode="json", exclude={"select"} if job.select is None else None)
    # `axes`: what each label names because it varies (`label_runs`): the report's axis columns
    data["resolved_runs"] = [run.model_dump(mode="json", exclude={"select"} if run.select is None else None)
                             | {"label": run.label, "axes": run._axes}
                             for run in (job.expand() if runs is None else runs)]
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False)


# Keys of a job that do not change its results: names, where outputs and the cache go, how work is spread.
NOT_RESULT_KEYS = ("name", "description", "output", "cache", "concurrency", "ray", "max_cost_usd")
NOT_RESULT_MODEL_KEYS = ("replicas", "gpus_per_replica", "concurrency", "placement", "max_connection_failures",
                         "max_server_errors", "stall_seconds", "price", "rpm", "tpm", "keep_alive",
                         "batch")
# Engine / client options that change how fast or how robustly answers come, not what they are: a resume after an
# out-of-memory or a timeout may change them.
NOT_RESULT_ENGINE_KEYS = ("gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens", "enforce_eager",
                          "swap_space", "cpu_offload_gb", "kv_cache_memory_bytes", "enable_prefix_caching",
                          "scheduling_policy", "timeout", "max_retries", "concurrency", "max_connection_failures",
                          "max_server_errors", "stall_seconds", "rpm", "tpm", "batch", "batch_size", "batch_poll",
                          "batch_quiet", "batch_max_wait")


def result_fields(job: JobSpec, runs: list[RunSpec] | None = None) -> dict[str, Any]:
    """What determines a job's results: dataset, models (what they are, not where they run), the expanded runs with
    their resolved options (`runs`: the job's expanded runs, when the caller has them), scoring, and each task's prompt
    version."""
    # `select` is recorded per run, and only where one is set: jobs without it keep the hash they always had.
    data = job.model_dump(mode="json", exclude=set(NOT_RESULT_KEYS) | {"runs", "grid", "select"})
    data["models"] = {k: {kk: ({ek: ev for ek, ev in vv.items() if ek not in NOT_RESULT_ENGINE_KEYS}
                                if kk == "engine" else vv)
                           for kk, vv in m.items() if kk not in NOT_RESULT_MODEL_KEYS}
                      for k, m in data["models"].items()}
    rows, prompts = [], {}
    for run in job.expand() if runs is None else runs:
        task, opts = run.resolve()
        rows.append({"label": run.label, "task": task.name, "model": run.model, "options": opts.model_dump(mode="json"),
                     "dataset": job.dataset_for(run)})
        if (select := job.select_for(run)) is not None:
            rows[-1]["select"] = select.model_dump(mode="json", exclude_none=True)
        # epochs change results, limits only which samples fail (a resume may change them); both recorded only where
        # set, so that a job without them keeps the hash it always had
        rows[-1].update({k: v for k in ("epochs", "reducer") if (v := getattr(run, k)) not in (1, None)})
        prompts[task.name] = task.prompts_version
    data["runs"] = sorted(rows, key=lambda r: r["label"])
    data["prompts_versions"] = prompts
    return data
