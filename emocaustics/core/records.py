"""The records a task and the core exchange: samples, what loading found, failures, what scoring gives back, and the
base option models. Plain data (JSON-able samples, so Ray Data and actors move them unchanged)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    import polars as pl


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
    """What a sample's solver gets beside the sample (`Solver.solve`'s 4th argument): its side texts' embeddings
    (the task's feed's, rows streaming in), and `stats`, where the solver may count what the plan cannot see
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
    """What a scorer may use: the job's loaded embedder, its parsed judge, scoring options, whether Ray may be used."""

    embedder: Any = None
    embedder_spec: str | None = None
    judge: Any = None  # its LLMSpec (`jobs.configs.Resolved.judge`; the core imports no models layer), or None
    scoring: dict[str, Any] = field(default_factory=dict)
    use_ray: bool = False
    cache: Any = None  # the run's response cache (`models.cacheplace.CacheChoice`), None when off (`--no-cache`)


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
    # which option holds what the front doors set: {"split": ..., "ids": ...} (core/optionkeys.py)
    option_for: ClassVar[dict[str, str]] = {}
    data: str | None = None
