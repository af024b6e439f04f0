"""EmoCaustics's prediction store (`core.contract.PredictionStore`): the reference formats, one file per dialogue
(`extract/output.py`), and `failures.jsonl` keyed by dialogue."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from emocaustics.core.task import Failure


class DialogueStore:
    def __init__(self, task_name: str) -> None:
        self.task_name = task_name

    def write_prediction(self, out: Path, sample_id: str, prediction: Any) -> None:
        from emocaustics.tasks.longdialogue.extract.output import write_prediction

        write_prediction(out, self.task_name, int(sample_id), prediction)

    def write_failure(self, out: Path, sample_id: str, failure: Failure) -> None:
        from emocaustics.tasks.longdialogue.extract.output import append_failure

        append_failure(out, {"dialogue": int(sample_id), "step": failure.step, "reason": failure.reason})

    def read_predictions(self, out: Path) -> dict[str, Any]:
        from emocaustics.tasks.longdialogue.score.predictions import (read_chain_predictions,
                                                                     read_sextuple_predictions)

        reader = read_sextuple_predictions if self.task_name == "sextuple" else read_chain_predictions
        found: dict[str, Any] = {}
        path = out / "failures.jsonl"
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                row = json.loads(line)
                found[str(row["dialogue"])] = Failure(f"extraction {row.get('step')}", str(row.get("reason")))
        found.update({str(k): v for k, v in reader(out).predictions.items()})
        return found
