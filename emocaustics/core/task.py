"""The task interface: what a benchmark plugs into the cluster, and the registry that finds it.

A task is a folder `emocaustics/tasks/<name>/` whose `__init__.py` calls `register(TheTask())` (or a test registers one
directly). The core -- job specs, the runner, the report -- only ever talks to these seams:

- `Sample`      one unit of evaluation: a string id, its input, its target (may be None) and metadata; JSON-able, so
                Ray Data and actors move it unchanged.
- `Task.Options` the task's own knobs (a pydantic model, extra keys forbidden); `method` picks a solver method or a
                calibration predictor. `Task.Dataset` likewise for where samples come from.
- `Task.load`   (dataset options, run options) -> `Loaded` (samples + data defects, reported, never dropped).
- `Task.solve`  async (llm, sample, options) -> prediction, or raises `SolveFailed(step, reason)`; runs next to the
                engine through `ModelPool.run` with `Task.weight` (placement cost), `Task.chain` (its dependent calls)
                and `Task.affinity` (replica key: samples sharing a prompt prefix share a key). `solve_with` is the
                same with the sample's `Side` inputs (embeddings of its `side_texts`, streaming in while it runs);
                a config may build on another's predictions (`builds_on`, `read_prior`, `solver_view`). One plan
                runs every task (`solve.plan`).
- `Task.predict` calibration predictors (oracle, baselines): no model.
- `Task.score`  (samples, predictions | Failure, options, context) -> `Scored`: long rows
                `sample_id, metric, value, weight, status, reason`, plus corpus-level summary metrics and extra tables.
- `Task.write_predictions` / `read_predictions`: the task's files on disk (default: predictions.jsonl).
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

from emocaustics.core.answers import check_answer_models
from emocaustics.core.content import approx_tokens, content_hash, jsonable  # noqa: F401 (importable from here too)
from emocaustics.core.errors import UsageError
from emocaustics.core.writes import append_line

if TYPE_CHECKING:  # a task declares its sources; this module never fetches
    import polars as pl
    from emocaustics.core.datasource import DataSource

# Long-format score rows: one row per (sample, metric). status: ok | failed (the solver gave up; value 0) |
# unscored (the metric could not be computed for this sample, e.g. no ground truth; value null, outside means).
def row_schema() -> dict[str, pl.DataType]:
    import polars as pl  # where frames are made: `extract`, which only solves, started ~0.1 s later for it at the top
    return dict(sample_id=pl.Utf8, metric=pl.Utf8, value=pl.Float64, weight=pl.Float64, status=pl.Utf8, reason=pl.Utf8)


@dataclass(frozen=True)
class Sample:
    id: str
    input: Any
    target: Any = None
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "input": self.input, "target": self.target, "meta": self.meta}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Sample":
        return cls(str(obj["id"]), obj.get("input"), obj.get("target"), dict(obj.get("meta") or {}))


@dataclass(frozen=True)
class Failure:
    """A sample the solver could not answer: scored 0 (status `failed`), listed with its reason."""

    step: str
    reason: str

    def __str__(self) -> str:
        return f"{self.step}: {self.reason}"


class SolveFailed(Exception):
    """Raised by a solver: which step gave up and why (the raw output belongs in the reason)."""

    def __init__(self, step: str, reason: str) -> None:
        super().__init__(f"{step}: {reason}")
        self.step, self.reason = step, reason


@dataclass
class Defect:
    """A problem in the published data, reported as data: what kind, where (file / record / field), what."""

    kind: str
    where: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "where": self.where, "message": self.message}


@dataclass
class Side:
    """What a sample's solver gets beside the sample (`Task.solve_with`): its side texts' embeddings
    (`solve.side.Embeddings`, rows streaming in), and `stats`, where the solver may count what the plan cannot see
    (re-asks, unparseable answers): merged into the sample's cost row (stats.jsonl)."""

    embeddings: Any = None
    stats: dict[str, Any] = field(default_factory=dict)


@dataclass
class Loaded:
    samples: list[Sample]
    defects: list[Defect] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)  # dataset name, split, root, content hash ...


@dataclass
class ScoreContext:
    """What a scorer may use: the job's loaded embedder, a judge spec, scoring options, whether Ray may be used."""

    embedder: Any = None
    embedder_spec: str | None = None
    judge: str | None = None
    scoring: dict[str, Any] = field(default_factory=dict)
    use_ray: bool = False


@dataclass
class Scored:
    rows: pl.DataFrame  # row_schema()
    summary: dict[str, Any] = field(default_factory=dict)  # corpus-level metrics (e.g. official F1s), primary first
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)  # extra named tables (per class, per topic ...)
    items: pl.DataFrame | None = None  # per-item explanation rows (which pair matched what, and why)


def rows_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """Long score rows as a frame with `row_schema()` (missing weight -> 1, status -> ok, reason -> null)."""
    import polars as pl
    norm = [{"sample_id": str(r["sample_id"]), "metric": r["metric"],
             "value": None if r.get("value") is None else float(r["value"]),
             "weight": float(r.get("weight", 1.0)), "status": r.get("status", "ok"), "reason": r.get("reason")}
            for r in rows]
    return pl.DataFrame(norm, schema=row_schema())


class Options(BaseModel):
    """Base of every task's options: `method` picks a solver method or a calibration predictor."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    method: str


class DatasetOptions(BaseModel):
    """Base of every task's dataset options; `data` is a local copy (default: the task's env var or fetch cache)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    data: str | None = None


class Task:
    """Base class with the defaults; a task overrides what it needs (see the module docstring)."""

    name: ClassVar[str]
    description: ClassVar[str] = ""
    Options: ClassVar[type[Options]] = Options
    Dataset: ClassVar[type[DatasetOptions]] = DatasetOptions
    solver_methods: ClassVar[tuple[str, ...]] = ()  # methods that call a model
    calibration_methods: ClassVar[tuple[str, ...]] = ()  # built-in predictors: no model
    primary_metric: ClassVar[str] = "score"
    prompts_version: ClassVar[str | None] = None  # hash of the prompt templates, recorded in every run
    # What each metric means, for the report's legend (metric name, or a prefix ending in ":", -> one sentence).
    metric_docs: ClassVar[dict[str, str]] = {}
    # Where the published data comes from (`core.datasource`): `data fetch TASK` fetches these; `load` locates them.
    data_sources: ClassVar[tuple["DataSource", ...]] = ()

    # -- options -------------------------------------------------------------------------------------------------
    def parse_options(self, raw: dict[str, Any]) -> Options:
        opts = self.Options.model_validate(raw)
        allowed = self.solver_methods + self.calibration_methods
        if opts.method not in allowed:
            raise ValueError(f"task {self.name!r} has no method {opts.method!r}; choose one of {', '.join(allowed)}")
        return opts

    def needs_model(self, options: Options) -> bool:
        return options.method in self.solver_methods

    def label(self, options: Options, model: str | None = None, axes: list[str] | None = None) -> str:
        """A stable, readable config name: task, method, model, then `key=value` for each option in `axes` (those
        that vary between the job's configs of this task and method: `jobs.labels.label_axes`), or, with `axes` None,
        for each option that differs from its default."""
        data = options.model_dump(mode="json")
        parts = [self.name, data.pop("method")]
        if model:
            parts.append(model)
        for key in sorted(data):
            info = type(options).model_fields[key]
            if axes is not None:
                if key not in axes:
                    continue
            elif not info.is_required() and data[key] == info.get_default(call_default_factory=True):
                continue
            parts.append(f"{key}={data[key]}")
        return "_".join(str(p).replace("/", "-") for p in parts)

    def summary_columns(self, options: Options) -> dict[str, Any]:
        """Extra per-config columns for the summary, shown as `report.columns.OptionColumns` declares; none."""
        return {}

    def report_sections(self, summary: pl.DataFrame, scores: pl.DataFrame) -> list[tuple[str, str]]:
        """Extra (title, HTML) sections of the report for this task's configs (charts, breakdowns); default none."""
        return []

    # -- data ----------------------------------------------------------------------------------------------------
    def load(self, dataset: DatasetOptions, options: Options) -> Loaded:
        raise NotImplementedError

    # -- solving -------------------------------------------------------------------------------------------------
    def prepare(self, samples: list[Sample], options: Options, ctx: "ScoreContext") -> list[Sample]:
        """Driver-side work before solving, once per config (e.g. retrieval: embed each topic's chunks once on the
        job's embedder and attach the top-k to each sample). Default: nothing."""
        return samples

    async def solve(self, llm: Any, sample: Sample, options: Options) -> Any:
        raise SolveFailed("solver", f"task {self.name!r} has no solver")

    async def solve_with(self, llm: Any, sample: Sample, options: Options, side: Side) -> Any:
        """`solve` with the sample's side inputs (a task with `side_texts` or `builds_on` overrides it)."""
        return await self.solve(llm, sample, options)

    def solver_view(self, sample: Sample, options: Options, prior: Any = None) -> Sample:
        """What of a sample travels to its solver (to a replica, by Ray's object store), with its prediction in the
        config this one builds on (`read_prior`). Default: all of it, the prior in `meta["prior"]`."""
        return sample if prior is None else replace(sample, meta={**sample.meta, "prior": prior})

    def side_texts(self, sample: Sample, options: Options) -> list[str] | None:
        """Texts whose embeddings the solver may ask for as it runs (`Side.embeddings`; `solve/embedfeed.py`)."""
        return None

    def embeds_ahead(self, options: Options) -> bool:
        """True: the solver waits on its embeddings (embed all ahead); False: now and then (embed on demand, niced)."""
        return True

    def read_prior(self, folder: Path, samples: list[Sample]) -> dict[str, Any]:
        """Each sample's prediction in the config this one builds on, or a `Failure` (the sample fails uncalled)."""
        found = self.read_predictions(folder)
        return {s.id: found[s.id] if s.id in found else Failure("input", f"no prediction of {s.id} in {folder}")
                for s in samples}

    def size(self, sample: Sample) -> int:
        """Text units a (loaded) sample's solver holds: largest first, bounded in the driver. Default 1."""
        return 1

    def chain(self, sample: Sample, options: Options) -> int:
        """Answers that wait for each other, in `weight`'s unit (`models/placement.py`); 0: calls side by side."""
        return 0

    def sample_stats(self, out: Path) -> dict[str, dict[str, Any]]:
        """Per-sample cost figures (llm_calls, cache_hits, prompt_tokens, generated_tokens, seconds)."""
        path = out / "stats.jsonl"
        stats: dict[str, dict[str, Any]] = {}
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    row = json.loads(line)
                    stats[str(row.pop("id"))] = row
        return stats

    def weight(self, sample: Sample, options: Options) -> float:
        return 1.0

    def dry_solve(self, samples: list[Sample], options: Options, llm: Any, embedder: Any, *,
                  prior: bool = False) -> None:
        """The dry run's pass over the solver path (solve/forecast.py): `prepare` with `embedder`, then `solve` of each
        sample with `llm`, a stand-in that records the prompts; `prior`: the config builds on another's predictions."""
        from emocaustics.core import aio

        prepared = self.prepare(samples, options, ScoreContext(embedder=embedder))

        async def each() -> None:
            for s in prepared:
                try:
                    await self.solve(llm, s, options)
                except SolveFailed:
                    pass  # e.g. a sample without input: the real run fails it too, at no cost

        aio.run(each())

    def builds_on(self, options: Options, model: str | None,
                  candidates: list[tuple[str, Options, str | None, str]]) -> str | None:
        """The label of another config of the job whose predictions this config reuses (chains built on sextuple
        windows), among `candidates` (task, options, model, label): run first, read by `read_prior`. Default: none."""
        return None

    def fingerprint(self, sample: Sample) -> str:
        """A short content hash of what the solver sees of a sample (its input): recorded with the predictions, so
        that scoring them against other data (another subset, a renumbered file) is caught and named."""
        return content_hash(sample.input)

    def affinity(self, sample: Sample, options: Options) -> str:
        return sample.id

    def predict(self, method: str, samples: list[Sample], options: Options) -> dict[str, Any]:
        raise UsageError(f"task {self.name!r} has no calibration predictor {method!r}")

    # -- scoring -------------------------------------------------------------------------------------------------
    def score(self, samples: list[Sample], predictions: dict[str, Any], options: Options,
              ctx: ScoreContext) -> Scored:
        raise NotImplementedError

    def finalize(self, out: Path, samples: list[Sample], predictions: dict[str, Any], options: Options) -> list[Path]:
        """Write the task's own output files for a finished config (submission files, official formats) into `out`;
        returns the paths written. Default: nothing."""
        return []

    # -- predictions on disk ---------------------------------------------------------------------------------------
    def write_prediction(self, out: Path, sample_id: str, prediction: Any) -> None:
        """Append one sample's prediction to `out/predictions.jsonl` (one line per sample, the latest wins)."""
        out.mkdir(parents=True, exist_ok=True)  # whole lines: one cut by a full disk is cut off (`WriteFailed`)
        append_line(out / "predictions.jsonl", json.dumps({"id": sample_id, "prediction": prediction},
                                                          ensure_ascii=False))

    def write_failure(self, out: Path, sample_id: str, failure: Failure) -> None:
        out.mkdir(parents=True, exist_ok=True)
        row = {"id": sample_id, "step": failure.step, "reason": failure.reason}
        append_line(out / "failures.jsonl", json.dumps(row, ensure_ascii=False))

    def read_predictions(self, out: Path) -> dict[str, Any]:
        """Predictions by sample id, and a `Failure` for each sample that failed and has no prediction since."""
        found: dict[str, Any] = {}
        failures = out / "failures.jsonl"
        if failures.exists():
            for line in failures.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    row = json.loads(line)
                    found[str(row["id"])] = Failure(str(row.get("step")), str(row.get("reason")))
        path = out / "predictions.jsonl"
        if path.exists():
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    found[str(row["id"])] = row["prediction"]
                except (json.JSONDecodeError, KeyError, TypeError) as exc:
                    raise UsageError(f"{path}: line {n}: not a prediction row ({exc})") from None
        return found


# -- registry ----------------------------------------------------------------------------------------------------
_REGISTRY: dict[str, Task] = {}
_DISCOVERED = False


def task_packages() -> list[str]:
    """The task packages under `emocaustics/tasks/` (each a folder with an __init__.py)."""
    import pkgutil

    import emocaustics.tasks

    return sorted(f"emocaustics.tasks.{m.name}" for m in pkgutil.iter_modules(emocaustics.tasks.__path__) if m.ispkg)


ENTRY_POINT_GROUP = "emocaustics.tasks"


def _discover() -> None:
    """Import every task package once (each registers its tasks), then the tasks other installed packages declare
    in the `emocaustics.tasks` entry-point group (`name = "module:TaskClass"` or `"module:instance"`): a benchmark
    can live in a package of its own. Task packages keep their heavy imports lazy."""
    from importlib.metadata import entry_points

    global _DISCOVERED
    if not _DISCOVERED:  # set once all loaded: a broken plug-in is named again by every command that asks
        for name in task_packages():
            importlib.import_module(name)
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            try:
                obj = ep.load()
            except Exception as exc:  # a broken plug-in is named, never a bare traceback from deep inside import
                raise UsageError(f"task plug-in {ep.name!r} ({ep.value}, entry point group {ENTRY_POINT_GROUP}): "
                                 f"cannot load: {type(exc).__name__}: {exc}") from exc
            task = obj() if isinstance(obj, type) else obj
            if not isinstance(task, Task):
                raise UsageError(f"task plug-in {ep.name!r} ({ep.value}): not a Task subclass or instance")
            if task.name not in _REGISTRY:  # in-tree tasks and explicit registrations win over a same-named plug-in
                register(task)
        _DISCOVERED = True


def register(task: Task) -> Task:
    """Add a task to the registry (a task module calls this at import; a test may call it for its own task)."""
    check_answer_models(task)  # core/answers.py: an answer schema guided decoding cannot bound is refused here
    _REGISTRY[task.name] = task
    return task


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)


def get_task(name: str) -> Task:
    if name not in _REGISTRY:
        _discover()
    if name not in _REGISTRY:
        raise UsageError(f"unknown task {name!r}; known tasks: {', '.join(task_names())}")
    return _REGISTRY[name]


def task_names() -> list[str]:
    _discover()
    return sorted(_REGISTRY)
