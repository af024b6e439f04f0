"""The core's reusable solvers (solve/solvers.py) on worked examples, against a scripted stand-in for a model (no
engine, no Ray): the template filled with the sample's fields, the schema sent, self-consistency's vote and tie rule."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import BaseModel, Field

from emocaustics.core.task import Sample, SolveFailed
from emocaustics.models.base import Completion
from emocaustics.solve.solvers import Generate, MultipleChoice, majority, template_fields


class Scripted:
    """Stands in for a model: answers each request with the next scripted JSON text, and keeps the requests."""

    name = "scripted"

    def __init__(self, answers: list[str]) -> None:
        self.answers, self.requests = list(answers), []

    async def generate(self, requests):
        self.requests.extend(requests)
        return [Completion(text=self.answers.pop(0), prompt_tokens=5, generated_tokens=3) for _ in requests]


class City(BaseModel):
    city: str = Field(max_length=20)


def test_generate_fills_the_template_and_asks_with_the_schema() -> None:
    llm = Scripted(['{"city": "Paris"}'])
    solver = Generate(City, "Capital of {country} ({id})?", system="Be brief.", field="city")
    got = asyncio.run(solver.solve(llm, Sample("fr", {"country": "France"}, "Paris")))
    assert got == "Paris"
    (req,) = llm.requests
    assert req.messages == ({"role": "system", "content": "Be brief."},
                            {"role": "user", "content": "Capital of France (fr)?"})
    assert req.schema["properties"]["city"]["maxLength"] == 20 and req.sampling.temperature == 0.0
    assert asyncio.run(Generate(City, "{country}").solve(Scripted(['{"city": "Rome"}']),
                                                         Sample("it", {"country": "Italy"}))) == {"city": "Rome"}


def test_generate_names_a_missing_field_and_reasks_an_unparseable_answer() -> None:
    with pytest.raises(SolveFailed, match=r"template field 'capital' is not a field of sample fr \(its fields: "
                                          r"country\)"):
        asyncio.run(Generate(City, "{capital}").solve(Scripted([]), Sample("fr", {"country": "France"})))
    llm = Scripted(["not json", '{"city": "Lima"}'])
    assert asyncio.run(Generate(City, "{country}", field="city").solve(llm, Sample("pe", {"country": "Peru"}))) \
        == "Lima"
    assert [r.sampling.seed for r in llm.requests] == [0, 1]  # the re-ask samples on a new seed
    assert template_fields("{a} and {b.c} and {a} {{x}}") == ["a", "b"]


def test_majority_vote_and_its_tie_rule() -> None:
    assert majority(["B", "A", "B"]) == ("B", {"A": 1, "B": 2})
    assert majority(["C", "A", "A", "C", "B"]) == ("C", {"A": 2, "B": 1, "C": 2})  # tie: the earliest sample's
    assert majority(["A"]) == ("A", {"A": 1})


def test_multiple_choice_with_self_consistency() -> None:
    llm = Scripted([json.dumps({"answer": a}) for a in ["C", "B", "B"]])
    solver = MultipleChoice("{question}\n{choices}", n=3, temperature=0.8, seed=7)
    sample = Sample("q1", {"question": "Which is a fruit?", "choices": ["stone", "apple", "chair"]}, "B")
    got = asyncio.run(solver.solve(llm, sample))
    assert got == {"answer": "B", "choice": "apple", "index": 1, "votes": {"B": 2, "C": 1}}
    assert llm.requests[0].messages[-1]["content"] == "Which is a fruit?\nA. stone\nB. apple\nC. chair"
    assert [r.sampling.seed for r in llm.requests] == [7, 8, 9]
    assert {r.sampling.temperature for r in llm.requests} == {0.8}
    assert llm.requests[0].schema["properties"]["answer"]["enum"] == ["A", "B", "C"]  # only this question's letters
    one = Scripted(['{"answer": "A"}'])
    asyncio.run(MultipleChoice("{question} {choices}").solve(one, sample))
    assert one.requests[0].sampling.temperature == 0.0  # one sample is greedy
    with pytest.raises(SolveFailed, match="field 'choices' must be a list of 2 to 26 choices"):
        asyncio.run(MultipleChoice("{question}").solve(one, Sample("q2", {"question": "?", "choices": "ab"})))
    with pytest.raises(ValueError, match="needs a temperature above 0"):
        MultipleChoice("{question}", n=3, temperature=0)
