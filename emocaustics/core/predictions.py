"""Predictions paired with the samples they answer: the one rule a job (`jobs.runner`, from its rows in memory) and
`emocaustics score TASK` share, so that a folder scores the same either way.

A sample with neither a prediction nor a failure row is a failure ("no prediction was written"), never a silent
gap: it counts 0 and is listed. A prediction whose id is no sample's pairs with nothing: it is not scored, and the
caller names it (`score TASK` refuses a folder of which none pairs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from emocaustics.core.task import Failure, Sample

NOT_WRITTEN = Failure("solve", "no prediction was written for this sample")


@dataclass
class Paired:
    predictions: dict[str, Any]  # what was found, and a Failure for every sample without an entry
    missing: list[str]  # sample ids that had neither a prediction nor a failure row
    unpaired: list[str]  # ids found that are no sample's

    @property
    def failed(self) -> list[str]:
        """Sample ids scored as failures: a failure row, or nothing written."""
        return [k for k, v in self.predictions.items() if isinstance(v, Failure) and k not in self.unpaired]


def pair(samples: list[Sample], found: dict[str, Any]) -> Paired:
    ids = {s.id for s in samples}
    predictions = dict(found)
    missing = [s.id for s in samples if s.id not in found]
    for sid in missing:
        predictions[sid] = NOT_WRITTEN
    return Paired(predictions, missing, sorted(k for k in found if k not in ids))
