"""A whole task that asks a model, in one file: capitals of countries, answered schema-guided by the core's
`Generate` solver and scored by its `ExactMatch` scorer (issue 40 point 5; tests/tasks/onefile/test_onefile.py).
Importing this module registers the task `capitals`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from emocaustics.core.compose import ComposedTask
from emocaustics.core.task import DatasetOptions, Loaded, Sample, register
from emocaustics.scoring.scorers import ExactMatch
from emocaustics.solve.solvers import Generate

CAPITALS = {"France": "Paris", "Japan": "Tokyo", "Kenya": "Nairobi", "Peru": "Lima"}


class Capital(BaseModel):
    model_config = ConfigDict(extra="forbid")
    city: str = Field(max_length=40)  # bounded: guided decoding stops there


def load(dataset: DatasetOptions) -> Loaded:
    return Loaded([Sample(country.lower(), {"country": country}, city) for country, city in CAPITALS.items()],
                  info={"dataset": "capitals", "questions": len(CAPITALS)})


TASK = register(ComposedTask(
    "capitals", load,
    Generate(Capital, "What is the capital of {country}? Answer as JSON.", system="You answer briefly.",
             field="city"),
    ExactMatch(),
    description="capitals of countries, asked of a model, scored by exact match"))
