"""A whole benchmark in one file: is each number even? Scored by accuracy; the calibration predictors need no model.

Its numbers are published data (one JSON file with a sha256), fetched by `emocaustics data fetch parity` and located
by the core: `dataset.data`, else $EMOCAUSTICS_PARITY_DATA, else the fetch cache. The URL is a test's file:// copy
($PARITY_DATA_URL) standing in for a publisher's server.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, ClassVar, Literal

from emocaustics.core.datasource import DataSource
from emocaustics.core.task import (DatasetOptions, Failure, Loaded, Methods, Options, Sample, ScoreContext, Scored, Task,
                                   rows_frame)

SOURCE = DataSource(
    name="parity", title="Parity numbers", env_var="EMOCAUSTICS_PARITY_DATA",
    urls=(os.environ.get("PARITY_DATA_URL", "https://example.invalid/parity.json"),),
    sha256="43141d02d64ee22ae0bf441e60074e78250f63ae069e22773da4bf5c7c7904a9", format="file", filename="parity.json",
    marks=("parity.json",), what="parity data folder", needs="parity.json", notes=("Licence: CC0 (made up)",))


class ParityOptions(Options):
    method: Literal["always-even", "oracle"]


class ParityDataset(DatasetOptions):
    n: int | None = None  # the first n numbers (default: all)


class ParityTask(Task):
    name: ClassVar[str] = "parity"
    description: ClassVar[str] = "is the number even? (a plug-in task from its own package)"
    Options: ClassVar[type[Options]] = ParityOptions
    Dataset: ClassVar[type[DatasetOptions]] = ParityDataset
    methods = Methods(calibration=("always-even", "oracle"))
    primary_metric: ClassVar[str] = "accuracy"
    metric_docs: ClassVar[dict[str, str]] = {"accuracy": "1 when the answer names the number's parity"}
    data_sources: ClassVar[tuple[DataSource, ...]] = (SOURCE,)

    def load(self, dataset: DatasetOptions, options: Options) -> Loaded:
        root = SOURCE.locate(dataset.data)
        numbers = json.loads((root / "parity.json").read_text(encoding="utf-8"))["numbers"][:dataset.n]
        return Loaded([Sample(f"n{i}", {"number": i}, i % 2 == 0) for i in numbers], info={"root": str(root)})

    def predict(self, method: str, samples: list[Sample], options: Options) -> dict[str, Any]:
        return {s.id: True if method == "always-even" else s.target for s in samples}

    def finalize(self, out: Path, samples: list[Sample], predictions: dict[str, Any], options: Options) -> list[Path]:
        # What a solver would leave behind: predictions.jsonl, for `emocaustics score parity --pred` to read back.
        (out / "predictions.jsonl").unlink(missing_ok=True)
        for s in samples:
            self.store.write_prediction(out, s.id, predictions[s.id])
        return [out / "predictions.jsonl"]

    def score(self, samples: list[Sample], predictions: dict[str, Any], options: Options,
              ctx: ScoreContext) -> Scored:
        rows = [{"sample_id": s.id, "metric": "accuracy", "value": float(predictions.get(s.id) == s.target),
                 "status": "failed" if isinstance(predictions.get(s.id), Failure) else "ok"}
                for s in samples]
        frame = rows_frame(rows)
        return Scored(frame, {"accuracy": frame["value"].mean()})
