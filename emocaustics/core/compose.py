"""A task composed of three parts: a dataset, a solver and a scorer (issue 40 point 5).

    ComposedTask("qa", dataset=load, solver=Generate(Answer, "{question}"), scorer=ExactMatch("answer"))

- `dataset`: a callable `(dataset options) -> Loaded` (samples, defects, info); `Dataset` its options model.
- `solver`: any object with `async solve(llm, sample) -> prediction` (raising `SolveFailed`), and optionally
  `prompt_text` (hashed into `prompts_version`) and `answer_models` (checked when the task registers). The core's
  reusable ones are in `solve/solvers.py`.
- `scorer`: any object with `metrics` (names, the first the primary) and `score(samples, predictions, ctx) -> Scored`
  (`scoring/scorers.py`).

The task has one method, `method` (default "generate"), which calls the model; the rest of the `Task` contract keeps
its defaults (predictions.jsonl, one sample per call, no side inputs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from emocaustics.core.content import content_hash
from emocaustics.core.task import DatasetOptions, Loaded, Methods, Options, Sample, ScoreContext, Scored, Task


class OneSolver(Protocol):
    async def solve(self, llm: Any, sample: Sample) -> Any: ...


class OneScorer(Protocol):
    metrics: tuple[str, ...]

    def score(self, samples: list[Sample], predictions: dict[str, Any], ctx: ScoreContext | None) -> Scored: ...


class ComposedTask(Task):
    def __init__(self, name: str, dataset: Callable[[DatasetOptions], Loaded], solver: OneSolver,
                 scorer: OneScorer, *,
                 description: str = "", method: str = "generate",
                 dataset_options: type[DatasetOptions] = DatasetOptions, **attrs: Any) -> None:
        self.name, self.description = name, description or f"{name}: a composed task"
        self.parts = (dataset, solver, scorer)  # the task is its own data, solver and scorer parts: it calls these
        self.Dataset = dataset_options
        self.methods = Methods(solver=(method,))
        self.primary_metric = scorer.metrics[0]
        self.answer_models = tuple(getattr(solver, "answer_models", ())) + tuple(getattr(scorer, "answer_models", ()))
        self.prompts_version = content_hash([getattr(solver, "prompt_text", ""), getattr(scorer, "prompt_text", "")])
        for key, value in attrs.items():  # e.g. data_sources, metric_docs
            setattr(self, key, value)

    def load(self, dataset: DatasetOptions, options: Options) -> Loaded:
        return self.parts[0](dataset)

    async def solve(self, llm: Any, sample: Sample, options: Options) -> Any:
        return await self.parts[1].solve(llm, sample)

    def score(self, samples: list[Sample], predictions: dict[str, Any], options: Options,
              ctx: ScoreContext) -> Scored:
        return self.parts[2].score(samples, predictions, ctx)
