"""A small task defined here alone (`count`: is a number even?) so that run-folder, exit-code, dead-endpoint and
provenance tests run real jobs in seconds: its calibration predictors need no model, and its solver asks a remote
OpenAI-compatible endpoint (the stand-in of tests/fakes/openai_chat.py) -- no Ray, no engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from emocaustics.core.task import (DatasetOptions, Loaded, Methods, Options, Sample, ScoreContext, Scored, Task,
                                   register, rows_frame, unregister)


class Even(BaseModel):
    model_config = ConfigDict(extra="forbid")
    answer: str = Field(max_length=16)


class CountOptions(Options):
    method: Literal["ask", "right", "wrong", "half"]


class CountDataset(DatasetOptions):
    n: int = 6
    offset: int = 0  # another "subset": the same ids hold other numbers


class CountTask(Task):
    name: ClassVar[str] = "count"
    description: ClassVar[str] = "is a number even? (test task)"
    Options: ClassVar[type[Options]] = CountOptions
    Dataset: ClassVar[type[DatasetOptions]] = CountDataset
    methods = Methods(solver=("ask",), calibration=("right", "wrong", "half"))
    primary_metric: ClassVar[str] = "accuracy"
    prompts_version: ClassVar[str] = "count-v1"

    def load(self, dataset: DatasetOptions, options: Options) -> Loaded:
        if dataset.n < 0:
            from emocaustics.core.errors import UsageError

            raise UsageError(f"count: n must be >= 0, got {dataset.n}")
        return Loaded([Sample(f"s{i}", {"number": i + dataset.offset}, (i + dataset.offset) % 2 == 0)
                       for i in range(dataset.n)], info={"dataset": "count"})

    async def solve(self, llm: Any, sample: Sample, options: Options) -> Any:
        from emocaustics.solve.ask import Ask, Asker
        from emocaustics.solve.schema import schema_of

        asker = Asker(llm, system="Answer as JSON.", affinity=sample.id)
        return (await asker.ask(Ask("answer", f"Is {sample.input['number']} even?", Even, schema_of(Even)))).answer

    def predict(self, method: str, samples: list[Sample], options: Options) -> dict[str, Any]:
        from emocaustics.core.task import Failure

        if method == "half":  # every other sample fails: for exit-status tests
            return {s.id: (s.target if i % 2 else Failure("predict", "no answer")) for i, s in enumerate(samples)}
        return {s.id: (s.target if method == "right" else not s.target) for s in samples}

    def score(self, samples: list[Sample], predictions: dict[str, Any], options: Options,
              ctx: ScoreContext) -> Scored:
        rows = []
        for s in samples:
            p = predictions.get(s.id)
            if isinstance(p, (bool, str)):
                rows.append({"sample_id": s.id, "metric": "accuracy", "value": float(p == s.target)})
            else:
                rows.append({"sample_id": s.id, "metric": "accuracy", "value": 0.0, "status": "failed",
                             "reason": str(p)})
        frame = rows_frame(rows)
        return Scored(frame, {"accuracy": frame["value"].mean()})


def write_job(path: Path, body: str) -> Path:
    path.write_text(body, encoding="utf-8")
    return path


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under a folder with its bytes: 'nothing changed on disk' is an equal snapshot."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


CALIBRATION_JOB = """
name: {name}
dataset: {{n: {n}}}
runs:
  - {{task: count, method: {method}}}
scoring: {{embedder: minilm}}
"""
