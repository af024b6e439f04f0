"""The task contract: the names the core may read on a task and on its parts (`CONTRACT`), and the parts they name.

    name, description         the task's name and one line about it
    Options, Dataset          pydantic models of its knobs (`method` picks a solver or a calibration predictor) and of
                              where its samples come from (an Options class may declare `legacy_run_keys`, and its
                              `reducers`: `scoring/reducers.py`; a Dataset class `option_for`: `core/optionkeys.py`)
    methods                   `Methods(solver=..., calibration=...)`: which methods call a model, which need none
    data                      `Data`: load -> `Loaded`, its published `data_sources`, a ground-truth check, fingerprint
    solver                    `Solver`: solve (a task with side inputs gets them as its 4th argument, `Side`),
                              prepare, `placement` (weight, chain, affinity, size), dry run
    predict                   the calibration predictors (oracle, baselines): no model
    job_tables                tables across the job's configs of the task, written once as tables/<name>.parquet
    scorer                    `Scorer`: score -> `Scored`, finalize (official files), the submission files it writes
    report                    `Report`: label, primary metric, metric docs, option columns, report sections, sample view
    store                     `PredictionStore`: write (a `Failure` too), read, read back one just written (JsonlStore)
    prompts_version           hash of the prompt templates, recorded in every run
    side                      `SideInputs` or None: side texts' embeddings streaming in, a config built on another's
                              predictions (only EmoCaustics has them: `tasks/longdialogue/side.py`)

A part is any object with the protocol's members. `Task` gives every part its defaults and is its own data, solver,
scorer and report (the `data`/`solver`/`scorer`/`report` properties return the task), so a small task is one class
that overrides what it needs; a task may instead hand out a part of its own (an object). The core reads nothing else
on a task: tests/core/test_contract_scan.py scans the package for it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from emocaustics.core.content import content_hash
from emocaustics.core.errors import UsageError
from emocaustics.core.records import DatasetOptions, Failure, Loaded, Options, Sample, ScoreContext, Scored, Side, \
    SolveFailed
from emocaustics.core.textfile import json_lines
from emocaustics.core.writes import append_line

if TYPE_CHECKING:
    import polars as pl
    from pydantic import BaseModel

    from emocaustics.core.datasource import DataSource

# name -> the members the core reads on that part (None: a value, no part). Options/Dataset members are class
# variables a task's models may declare (pydantic's own API aside), the rest the protocols' below.
CONTRACT: dict[str, tuple[str, ...] | None] = {
    "name": None, "description": None, "methods": None, "predict": None, "prompts_version": None, "job_tables": None,
    "Options": ("reducers", "legacy_run_keys"), "Dataset": ("option_for",),
    "data": ("data_sources", "load", "check_ground_truth", "fingerprint"),
    "solver": ("answer_models", "solve", "prepare", "placement", "dry_solve"),
    "scorer": ("submission_files", "score", "finalize"),
    "report": ("primary_metric", "metric_docs", "option_column_docs", "label", "summary_columns", "report_sections",
               "view_sample"),
    "store": ("write_prediction", "read_predictions", "read_back"),
    "side": ("side_texts", "feed", "builds_on", "read_prior", "solver_view"),
}


@dataclass(frozen=True)
class Methods:
    """A task's methods: `solver` ones call a model, `calibration` ones (oracle, baselines) are `Task.predict`'s."""

    solver: tuple[str, ...] = ()
    calibration: tuple[str, ...] = ()

    @property
    def all(self) -> tuple[str, ...]:
        return self.solver + self.calibration


@dataclass(frozen=True)
class Placement:
    """Where and how heavily a sample's solver runs (`models/placement.py`): `weight` (placement cost), `chain`
    (answers that wait for each other, in weight's unit; 0: calls side by side), `affinity` (replica key: samples
    sharing a prompt prefix share one) and `size` (text units the solver holds: largest first, bounded)."""

    affinity: str
    weight: float = 1.0
    chain: int = 0
    size: int = 1


class Data(Protocol):
    data_sources: tuple[DataSource, ...]  # `core.datasource`: `data fetch TASK` fetches them, `load` locates them

    def load(self, dataset: DatasetOptions, options: Options) -> Loaded: ...

    def check_ground_truth(self, loaded: Loaded, options: Options) -> None: ...

    def fingerprint(self, sample: Sample) -> str: ...


class Solver(Protocol):
    answer_models: tuple[type[BaseModel], ...]  # checked when the task registers (`core/answers.py`)

    async def solve(self, llm: Any, sample: Sample, options: Options, side: Side | None = None) -> Any: ...

    def prepare(self, samples: list[Sample], options: Options, ctx: ScoreContext) -> list[Sample]: ...

    def placement(self, sample: Sample, options: Options) -> Placement: ...

    def dry_solve(self, samples: list[Sample], options: Options, llm: Any, embedder: Any, *,
                  prior: bool = False) -> None: ...


class Scorer(Protocol):
    submission_files: tuple[str, ...]  # what `finalize` writes for a leaderboard, the default first

    def score(self, samples: list[Sample], predictions: dict[str, Any], options: Options,
              ctx: ScoreContext) -> Scored: ...

    def finalize(self, out: Path, samples: list[Sample], predictions: dict[str, Any],
                 options: Options) -> list[Path]: ...


class Report(Protocol):
    primary_metric: str
    metric_docs: dict[str, str]  # metric name, or a prefix ending in ":", -> one sentence for the legend
    option_column_docs: dict[str, str]  # each column `summary_columns` gives -> its meaning, in the order shown

    def label(self, options: Options, model: str | None = None, axes: list[str] | None = None) -> str: ...

    def summary_columns(self, options: Options) -> dict[str, Any]: ...

    def report_sections(self, summary: pl.DataFrame, scores: pl.DataFrame,
                        tables: dict[str, pl.DataFrame] | None = None) -> list[tuple[str, str]]: ...

    def view_sample(self, input: Any, target: Any, prediction: Any,
                    items: list[dict[str, Any]]) -> list[dict[str, Any]] | None: ...


class PredictionStore(Protocol):
    def write_prediction(self, out: Path, sample_id: str, prediction: Any) -> None: ...  # a `Failure`: failed

    def read_predictions(self, out: Path) -> dict[str, Any]: ...

    def read_back(self, sample_id: str, value: Any) -> Any: ...  # `value` just written, as read_predictions gives it


class SideInputs(Protocol):
    """The one optional part: what a sample's solver gets beside the sample, for a task with dependent, long solvers.
    `side_texts`: texts its own `feed` embeds beside the calls (its `embeddings(sample id)` travels with the sample as
    `Side.embeddings`, `close()` at the run's end); `builds_on`: the label of another config whose predictions this one
    reuses (run first, read by `read_prior`, handed over by `solver_view`: what of a sample travels to the replica).
    The solver's one entry point gets them: `solve(llm, sample, options, side)`."""

    def side_texts(self, sample: Sample, options: Options) -> list[str] | None: ...

    async def feed(self, texts: dict[str, list[str]], options: Options, embedder_spec: str | None, in_process: bool,
                   marks: dict[str, float]) -> Any: ...

    def builds_on(self, options: Options, model: str | None,
                  candidates: list[tuple[str, Options, str | None, str]]) -> str | None: ...

    def read_prior(self, folder: Path, samples: list[Sample]) -> dict[str, Any]: ...

    def solver_view(self, sample: Sample, options: Options, prior: Any = None) -> Sample: ...


class JsonlStore:
    """The default prediction store: `predictions.jsonl` and `failures.jsonl`, one line per sample, the latest wins."""

    def write_prediction(self, out: Path, sample_id: str, prediction: Any) -> None:
        out.mkdir(parents=True, exist_ok=True)  # whole lines: one cut by a full disk is cut off (`WriteFailed`)
        failed = isinstance(prediction, Failure)
        row = ({"id": sample_id, "step": prediction.step, "reason": prediction.reason} if failed
               else {"id": sample_id, "prediction": prediction})
        append_line(out / ("failures.jsonl" if failed else "predictions.jsonl"), json.dumps(row, ensure_ascii=False))

    def read_back(self, sample_id: str, value: Any) -> Any:
        """What a JSON line gives back (lists for tuples): the row a job scores from memory is the one it would read."""
        if isinstance(value, Failure):
            return Failure(str(value.step), str(value.reason))
        return json.loads(json.dumps(value, ensure_ascii=False))

    def read_predictions(self, out: Path) -> dict[str, Any]:
        """Predictions by sample id, and a `Failure` for each sample that failed and has no prediction since."""
        found: dict[str, Any] = {}
        for kind in ("failure", "prediction"):  # failures first: a prediction written since replaces its failure
            path = out / f"{kind}s.jsonl"
            if not path.exists():
                continue
            for n, row, problem in json_lines(path.read_text(encoding="utf-8")):
                try:  # a line that is not JSON is None here (a TypeError or AttributeError), said as its problem
                    found[str(row["id"])] = row["prediction"] if kind == "prediction" else \
                        Failure(str(row.get("step")), str(row.get("reason")))
                except (KeyError, TypeError, AttributeError) as exc:
                    raise UsageError(f"{path}: line {n}: not a {kind} row ({problem or exc})") from None
        return found


class Task:
    """The defaults of every part; a task overrides what it needs (see the module docstring)."""

    name: ClassVar[str]
    description: ClassVar[str] = ""
    Options: ClassVar[type[Options]] = Options
    Dataset: ClassVar[type[DatasetOptions]] = DatasetOptions
    methods: ClassVar[Methods] = Methods()
    prompts_version: ClassVar[str | None] = None
    side: ClassVar[SideInputs | None] = None
    store: ClassVar[PredictionStore] = JsonlStore()
    # Defaults of the parts the task is itself (data, solver, scorer, report).
    data_sources: ClassVar[tuple[DataSource, ...]] = ()
    answer_models: ClassVar[tuple[type[BaseModel], ...]] = ()
    submission_files: ClassVar[tuple[str, ...]] = ()
    primary_metric: ClassVar[str] = "score"
    metric_docs: ClassVar[dict[str, str]] = {}
    option_column_docs: ClassVar[dict[str, str]] = {}

    @property
    def data(self) -> Data:
        return self

    @property
    def solver(self) -> Solver:
        return self

    @property
    def scorer(self) -> Scorer:
        return self

    @property
    def report(self) -> Report:
        return self

    def predict(self, method: str, samples: list[Sample], options: Options) -> dict[str, Any]:
        raise UsageError(f"task {self.name!r} has no calibration predictor {method!r}")

    # -- data ----------------------------------------------------------------------------------------------------
    def load(self, dataset: DatasetOptions, options: Options) -> Loaded:
        raise NotImplementedError

    def check_ground_truth(self, loaded: Loaded, options: Options) -> None:
        """Raise a `UsageError` naming the path and what is missing when the selected samples hold no ground truth
        (`jobs.preflight.require_ground_truth`); samples of which only some lack it are the scorer's rows to report. Default: none."""

    def fingerprint(self, sample: Sample) -> str:
        """A short content hash of what the solver sees of a sample: recorded with the predictions, so that scoring
        them against other data (another subset, a renumbered file) is caught and named."""
        return content_hash(sample.input)

    # -- solver --------------------------------------------------------------------------------------------------
    async def solve(self, llm: Any, sample: Sample, options: Options) -> Any:
        raise SolveFailed("solver", f"task {self.name!r} has no solver")

    def prepare(self, samples: list[Sample], options: Options, ctx: ScoreContext) -> list[Sample]:
        """Driver-side work before solving, once per config (e.g. retrieval on the job's embedder). Default: none."""
        return samples

    def placement(self, sample: Sample, options: Options) -> Placement:
        return Placement(affinity=sample.id)

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

    # -- scorer --------------------------------------------------------------------------------------------------
    def score(self, samples: list[Sample], predictions: dict[str, Any], options: Options,
              ctx: ScoreContext) -> Scored:
        raise NotImplementedError

    def finalize(self, out: Path, samples: list[Sample], predictions: dict[str, Any], options: Options) -> list[Path]:
        """Write the task's own files for a finished config (submission files, official formats) into `out`."""
        return []

    # -- report --------------------------------------------------------------------------------------------------
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
        """Values of the per-config columns `option_column_docs` declares (`report/columns.py`); none."""
        return {}

    def job_tables(self, scores: pl.DataFrame) -> dict[str, pl.DataFrame]:
        """Tables across this task's configs, from the job's per-sample rows of them (`report.tables`); none."""
        return {}

    def report_sections(self, summary: pl.DataFrame, scores: pl.DataFrame,
                        tables: dict[str, pl.DataFrame] | None = None) -> list[tuple[str, str]]:
        """Extra (title, HTML) sections of the report for its configs, given its `job_tables` as written; none."""
        return []

    def view_sample(self, input: Any, target: Any, prediction: Any,
                    items: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        """The viewer's sections of a sample (`view/data.py`); None: the generic input, gold and prediction."""
        return None


def parse_options(task: Task, raw: dict[str, Any]) -> Options:
    """`raw` as the task's options, its method one the task has."""
    opts = task.Options.model_validate(raw)
    if opts.method not in task.methods.all:
        raise ValueError(f"task {task.name!r} has no method {opts.method!r}; choose one of "
                         f"{', '.join(task.methods.all)}")
    return opts


def needs_model(task: Task, options: Options) -> bool:
    return options.method in task.methods.solver


def builds_on(task: Task, options: Options, model: str | None,
              candidates: list[tuple[str, Options, str | None, str]]) -> str | None:
    """The label of the config among `candidates` (task, options, model, label) this one reuses; only a task with
    side inputs has one."""
    return None if task.side is None else task.side.builds_on(options, model, candidates)
