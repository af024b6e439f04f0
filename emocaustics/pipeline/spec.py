"""Job specs: the YAML a user writes, validated with pydantic, and its expansion into run configs.

A job names its dataset, its models (each loaded once for the whole job), the runs (explicit list and/or a grid whose
cross product is taken), scoring options and where outputs go. Unknown keys and bad values are errors that name the key
and what is allowed.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from emocaustics.cli import UsageError

Task = Literal["sextuple", "emotion"]
Method = Literal["direct", "rag", "window", "oracle", "baseline"]
CALIBRATION_METHODS = ("oracle", "baseline")  # built-in predictors: no model, no extraction


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DatasetSpec(_Strict):
    subset: str | None = "sample"  # all | paper-100 | long-20 | sample
    ids: list[int] | None = None
    data: str | None = None  # a local copy with chat/ and emo/; default $EMOCAUSTICS_DATA or the fetch cache
    pairing: Literal["verified", "published"] = "verified"
    repair: bool = False
    strict: bool = False


class ModelSpec(_Strict):
    spec: str  # smoke | vllm:PATH_OR_NAME | openai:MODEL@BASE_URL
    replicas: int = Field(1, ge=1)
    gpus_per_replica: float = Field(0, ge=0)  # tensor parallel size when > 1
    engine: dict[str, Any] = Field(default_factory=dict)  # passed through to the vLLM engine
    concurrency: int = Field(64, ge=1)  # in-flight requests for openai endpoints
    placement: Literal["default", "spread"] = "default"  # spread: replicas on different nodes (Ray SPREAD)


class ScoringSpec(_Strict):
    embedder: str = "minilm"
    judge: str = "none"  # none | a model name from `models` | openai:MODEL@BASE_URL
    compat: Literal["spec", "reference"] = "spec"
    on_judge_error: Literal["zero", "unscored"] = "zero"


class RunSpec(_Strict):
    task: Task
    method: Method
    model: str | None = None  # a key of `models`; not used by oracle/baseline
    window: int | None = Field(None, ge=1)
    step: int | None = Field(None, ge=1)
    options: dict[str, Any] = Field(default_factory=dict)  # method options (rag top_k, thresholds, event_context ...)

    @model_validator(mode="after")
    def _check(self) -> "RunSpec":
        if self.task == "emotion" and self.method == "rag":
            raise ValueError("emotion chains have the methods direct and window (and oracle, baseline); rag is sextuple-only")
        if self.method in CALIBRATION_METHODS:
            return self
        if self.model is None:
            raise ValueError(f"method {self.method!r} needs a model (a key of `models`)")
        if self.step is not None and self.window is not None and self.step > self.window:
            raise ValueError(f"step {self.step} is larger than window {self.window}: utterances would be skipped")
        return self

    @property
    def label(self) -> str:
        """A stable, readable name for this config (used as a directory name and in tables)."""
        parts = [self.task, self.method]
        if self.model:
            parts.append(self.model)
        if self.method in ("window", "rag"):
            parts.append(f"K{self.window_or_default}-S{self.step_or_default}")
        for key in sorted(self.options):
            parts.append(f"{key}={self.options[key]}")
        return "_".join(str(p).replace("/", "-") for p in parts)

    @property
    def window_or_default(self) -> int:
        return self.window or (30 if self.task == "emotion" else 20)

    @property
    def step_or_default(self) -> int:
        return self.step or (10 if self.task == "emotion" else 5)


class GridSpec(_Strict):
    """Lists whose cross product is taken; every combination becomes a run."""

    task: list[Task] = Field(default_factory=lambda: ["sextuple"])
    method: list[Method]
    model: list[str | None] = Field(default_factory=lambda: [None])
    window: list[int | None] = Field(default_factory=lambda: [None])
    step: list[int | None] = Field(default_factory=lambda: [None])
    options: dict[str, Any] = Field(default_factory=dict)


class RaySpec(_Strict):
    address: str | None = None  # None: start a local Ray; "auto" or ray://... for a cluster
    num_cpus: int | None = None
    object_store_memory: int | None = 500_000_000
    namespace: str = "emocaustics"


class JobSpec(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    dataset: DatasetSpec = Field(default_factory=DatasetSpec)
    models: dict[str, ModelSpec] = Field(default_factory=dict)
    runs: list[RunSpec] = Field(default_factory=list)
    grid: GridSpec | None = None
    scoring: ScoringSpec = Field(default_factory=ScoringSpec)
    output: str = "runs"
    cache_dir: str | None = None  # LLM response cache; default <output>/.cache
    concurrency: int = Field(64, ge=1)  # dialogues in flight per model replica
    ray: RaySpec = Field(default_factory=RaySpec)

    @field_validator("models")
    @classmethod
    def _names(cls, models: dict[str, ModelSpec]) -> dict[str, ModelSpec]:
        for name in models:
            if not name.replace("-", "").replace("_", "").isalnum():
                raise ValueError(f"model name {name!r}: use letters, digits, '-' and '_'")
        return models

    @model_validator(mode="after")
    def _check_references(self) -> "JobSpec":
        for run in self.expand():
            if run.model is not None and run.model not in self.models:
                raise ValueError(f"run {run.label!r} names model {run.model!r}; defined models: {sorted(self.models)}")
        if not self.expand():
            raise ValueError("the job has no runs: give `runs:` and/or `grid:`")
        return self

    def expand(self) -> list[RunSpec]:
        """Explicit runs, then the grid's cross product, without duplicates, in a stable order."""
        runs = list(self.runs)
        if self.grid is not None:
            g = self.grid
            for task, method, model, window, step in itertools.product(g.task, g.method, g.model, g.window, g.step):
                if method in CALIBRATION_METHODS:
                    model, window, step = None, None, None
                runs.append(RunSpec(task=task, method=method, model=model, window=window, step=step, options=g.options))
        unique: dict[str, RunSpec] = {}
        for run in runs:
            unique.setdefault(run.label, run)
        return list(unique.values())


def _format_error(path: str, exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        elif err["type"] == "literal_error":
            msg = f"{msg} (got {err.get('input')!r})"
        lines.append(f"{path}: {where}: {msg}")
    return "\n".join(lines)


def load_job(path: str | Path, overrides: dict[str, Any] | None = None) -> JobSpec:
    """Read and validate a job YAML; errors name the file and the key."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"job spec not found: {path}") from None
    except yaml.YAMLError as exc:
        raise UsageError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise UsageError(f"{path}: a job spec is a mapping of keys (name, dataset, models, runs, grid, ...)")
    raw.update(overrides or {})
    try:
        return JobSpec.model_validate(raw)
    except ValidationError as exc:
        raise UsageError(_format_error(str(path), exc)) from None


def dump_job(job: JobSpec) -> str:
    """The resolved spec as YAML (written to config.yaml next to the outputs)."""
    data = job.model_dump(mode="json")
    data["resolved_runs"] = [run.model_dump(mode="json") | {"label": run.label} for run in job.expand()]
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
