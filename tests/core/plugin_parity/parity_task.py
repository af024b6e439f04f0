"""A whole benchmark in one file: is each number even? Scored by accuracy; the calibration predictors need no model."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from emocaustics.core.task import DatasetOptions, Loaded, Options, Sample, ScoreContext, Scored, Task, rows_frame


class ParityOptions(Options):
    method: Literal["always-even", "oracle"]


class ParityDataset(DatasetOptions):
    n: int = 10


class ParityTask(Task):
    name: ClassVar[str] = "parity"
    description: ClassVar[str] = "is the number even? (a plug-in task from its own package)"
    Options: ClassVar[type[Options]] = ParityOptions
    Dataset: ClassVar[type[DatasetOptions]] = ParityDataset
    calibration_methods: ClassVar[tuple[str, ...]] = ("always-even", "oracle")
    primary_metric: ClassVar[str] = "accuracy"
    metric_docs: ClassVar[dict[str, str]] = {"accuracy": "1 when the answer names the number's parity"}

    def load(self, dataset: DatasetOptions, options: Options) -> Loaded:
        return Loaded([Sample(f"n{i}", {"number": i}, i % 2 == 0) for i in range(dataset.n)])

    def predict(self, method: str, samples: list[Sample], options: Options) -> dict[str, Any]:
        return {s.id: True if method == "always-even" else s.target for s in samples}

    def score(self, samples: list[Sample], predictions: dict[str, Any], options: Options,
              ctx: ScoreContext) -> Scored:
        rows = [{"sample_id": s.id, "metric": "accuracy", "value": float(predictions.get(s.id) == s.target)}
                for s in samples]
        frame = rows_frame(rows)
        return Scored(frame, {"accuracy": frame["value"].mean()})
