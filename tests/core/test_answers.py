"""Which answer schemas guided decoding can constrain (core/answers.py, issue 41 point 10): every string bounded
(maxLength), every list bounded (maxItems), through nested models, unions and Optional."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, Field

from emocaustics.core.answers import check_answer_models, unbounded
from emocaustics.core.task import Task
from emocaustics.core.errors import UsageError


class Span(BaseModel):
    text: str = Field(max_length=50)
    note: str | None = None  # Optional: its string branch has no bound


class Bounded(BaseModel):
    label: Literal["a", "b"]
    score: int
    why: str = Field(max_length=20)
    tags: list[Literal["x", "y"]] = Field(max_length=2)


class Nested(BaseModel):
    spans: list[Span] = Field(max_length=3)


@pytest.mark.parametrize("model, found", [
    (Bounded, None),
    (Span, ("note", "string")),
    (Nested, ("spans[].note", "string")),
])
def test_the_first_unbounded_field_is_found(model, found) -> None:
    assert unbounded(model.model_json_schema()) == found


def test_a_task_declaring_an_unbounded_answer_is_refused_with_the_fix() -> None:
    class Ok(Task):
        name, answer_models = "ok", (Bounded,)

    class Bad(Task):
        name, answer_models = "bad", (Bounded, Nested)

    class Plain(Task):
        name = "plain"

    check_answer_models(Ok())
    check_answer_models(Plain())  # a task that declares none
    with pytest.raises(UsageError, match=r"task 'bad': answer schema Nested, field 'spans\[\]\.note'.*"
                                         r"note: str = Field\(max_length=N\)"):
        check_answer_models(Bad())
