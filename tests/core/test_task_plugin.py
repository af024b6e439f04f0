"""A new benchmark is one folder: a tiny yes/no task defined in this file alone is registered, run by
`emocaustics run` on the session's engine over a 2-config grid, and its rows are read back from scores.parquet,
rows.parquet and the report. Nothing outside this file knows the task."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, ClassVar, Literal

import polars as pl
import pytest
from pydantic import BaseModel, ConfigDict

from emocaustics.core.task import (DatasetOptions, Loaded, Methods, Options, Sample, ScoreContext, Scored, SolveFailed,
                                   Task, register, rows_frame, unregister)

QUESTIONS = [("Is water wet?", "yes"), ("Is fire cold?", "no"), ("Do fish swim?", "yes"), ("Can stones fly?", "no"),
             ("Is the sun a star?", "yes"), ("Is ice hot?", "no")]


class YesNoAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    answer: Literal["yes", "no"]


class YesNoOptions(Options):
    method: Literal["ask", "always-yes"]
    style: Literal["plain", "polite"] = "plain"


class YesNoDataset(DatasetOptions):
    n: int = len(QUESTIONS)


class YesNoTask(Task):
    name: ClassVar[str] = "yesno"
    description: ClassVar[str] = "yes/no questions scored by accuracy (test task)"
    Options: ClassVar[type[Options]] = YesNoOptions
    Dataset: ClassVar[type[DatasetOptions]] = YesNoDataset
    methods = Methods(solver=("ask",), calibration=("always-yes",))
    primary_metric: ClassVar[str] = "accuracy"

    def load(self, dataset: DatasetOptions, options: Options) -> Loaded:
        return Loaded([Sample(f"q{i}", {"question": q}, gold) for i, (q, gold) in enumerate(QUESTIONS[:dataset.n])])

    async def solve(self, llm: Any, sample: Sample, options: Options) -> Any:
        from emocaustics.solve.ask import Ask, Asker
        from emocaustics.solve.schema import schema_of

        polite = "Please answer: " if options.style == "polite" else ""
        asker = Asker(llm, system="Answer yes or no as JSON.", affinity=sample.id)
        try:
            return (await asker.ask(Ask("answer", polite + sample.input["question"], YesNoAnswer,
                                        schema_of(YesNoAnswer)))).answer
        except SolveFailed:
            raise

    def predict(self, method: str, samples: list[Sample], options: Options) -> dict[str, Any]:
        return {s.id: "yes" for s in samples}

    def score(self, samples: list[Sample], predictions: dict[str, Any], options: Options,
              ctx: ScoreContext) -> Scored:
        rows = []
        for s in samples:
            p = predictions.get(s.id)
            if isinstance(p, str):
                rows.append({"sample_id": s.id, "metric": "accuracy", "value": float(p == s.target)})
                rows.append({"sample_id": s.id, "metric": "said_yes", "value": float(p == "yes")})
            else:
                rows.append({"sample_id": s.id, "metric": "accuracy", "value": 0.0, "status": "failed",
                             "reason": str(p)})
        frame = rows_frame(rows)
        acc = frame.filter(pl.col("metric") == "accuracy")["value"].mean()
        return Scored(frame, {"accuracy": acc})


JOB = """
name: yesno-grid
dataset: {n: 6}
models:
  smoke: {spec: smoke}
runs:
  - {task: yesno, options: {method: always-yes}}
grid:
  task: [yesno]
  model: [smoke]
  method: [ask]
  style: [plain, polite]
scoring: {embedder: minilm}
"""


@pytest.fixture
def yesno_task():
    task = register(YesNoTask())
    yield task
    unregister(task.name)


def test_calibration_scores_without_a_model(yesno_task):
    samples = yesno_task.load(YesNoDataset(), YesNoOptions(method="always-yes")).samples
    scored = yesno_task.score(samples, yesno_task.predict("always-yes", samples, None), None, ScoreContext())
    assert scored.summary["accuracy"] == pytest.approx(3 / 6)  # three of the six answers are "yes"


def test_a_task_from_one_file_runs_as_a_job(yesno_task, smoke_pool, tmp_path: Path):
    from emocaustics.jobs.runner import run_job
    from emocaustics.jobs.spec import load_job

    job_file = tmp_path / "job.yaml"
    job_file.write_text(JOB, encoding="utf-8")
    job = load_job(job_file, overrides={"output": str(tmp_path / "runs"), "cache_dir": str(tmp_path / "cache")})
    assert [r.label for r in job.expand()] == ["yesno_always-yes", "yesno_ask_smoke_style=plain",
                                                 "yesno_ask_smoke_style=polite"]
    before = asyncio.run(smoke_pool.stats())["calls"]
    run_dir = run_job(job, out=str(tmp_path / "run"))
    assert asyncio.run(smoke_pool.stats())["calls"] - before >= 12  # 6 questions x 2 configs, on the session engine

    scores = pl.read_parquet(run_dir / "scores.parquet")
    assert dict(scores.group_by("run").len().iter_rows()) == {
        "yesno_always-yes": 6, "yesno_ask_smoke_style=plain": 6, "yesno_ask_smoke_style=polite": 6}
    asked = scores.filter(pl.col("method") == "ask")
    assert not asked["failed"].any(), asked  # the schema-guided answers all parse: every question has a prediction
    assert set(asked["score"].to_list()) <= {0.0, 1.0} and "c_said_yes" in scores.columns
    assert (asked["kind"] == "engine-check").all() and asked["llm_calls"].sum() >= 12
    always = scores.filter(pl.col("run") == "yesno_always-yes")
    assert always["score"].mean() == pytest.approx(0.5)

    rows = pl.read_parquet(run_dir / "rows.parquet")
    assert set(rows["metric"]) == {"accuracy", "said_yes"} and rows["task"].unique().to_list() == ["yesno"]
    summary = pl.read_csv(run_dir / "summary.csv")
    assert summary.height == 3 and set(summary["task"]) == {"yesno"}
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "yesno_ask_smoke_style=polite" in page and "yesno_always-yes" in page

    # A second run into a new folder is answered by the response cache: no new engine calls.
    calls = asyncio.run(smoke_pool.stats())["calls"]
    run_job(job, out=str(tmp_path / "again"))
    assert asyncio.run(smoke_pool.stats())["calls"] == calls
