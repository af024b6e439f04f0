"""Each solver and scorer a task file names is the core's part of that name, with the file's keys (no engine): the
scorers on a CSV and a Parquet file, the multiple-choice solver's settings, the prompts version following the file."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from emocaustics.core.task import DatasetOptions, get_task
from emocaustics.scoring.scorers import LLMJudge, SetMatch, TokenF1
from emocaustics.solve.solvers import MultipleChoice

TASK = """name: {name}
dataset: {{path: {data}}}
fields: {{target: gold}}
solver: {solver}
scorer: {scorer}
"""


def make(tmp_path: Path, name: str, scorer: str, solver: str = "{name: generate, prompt: '{q}'}",
         data: str = "data.csv"):
    frame = pl.DataFrame({"q": ["Name two primes", "Colour of the sky"], "gold": ["2, 3", "the blue sky"]})
    frame.write_csv(tmp_path / "data.csv")
    frame.write_parquet(tmp_path / "data.parquet")
    path = tmp_path / f"{name}.yaml"
    path.write_text(TASK.format(name=name, data=data, solver=solver, scorer=scorer), encoding="utf-8")
    return get_task(str(path))


def test_the_scorers_by_name_score_as_the_core_does(tmp_path: Path) -> None:
    sets = make(tmp_path, "parts-set", "{name: set_match}")
    assert isinstance(sets.parts[2], SetMatch)
    samples = sets.load(DatasetOptions(), None).samples
    assert [(s.id, s.input, s.target) for s in samples] == [("0", {"q": "Name two primes"}, "2, 3"),
                                                            ("1", {"q": "Colour of the sky"}, "the blue sky")]
    scored = sets.score(samples, {"0": {"answer": "3,2"}, "1": {"answer": "blue sky"}}, None, None)
    assert scored.summary == {"jaccard": pytest.approx(0.5), "exact_set": pytest.approx(0.5)}
    f1 = make(tmp_path, "parts-f1", "{name: token_f1}", data="data.parquet")
    assert isinstance(f1.parts[2], TokenF1) and f1.primary_metric == "f1"
    assert f1.score(samples, {"0": {"answer": "2 3"}, "1": {"answer": "blue sky"}}, None, None).summary == \
        {"f1": pytest.approx((1.0 + 1.0) / 2)}
    judge = make(tmp_path, "parts-judge", "{name: llm_judge, prompt: 'Q {question} R {target} A {prediction}'}")
    assert isinstance(judge.parts[2], LLMJudge) and judge.parts[2].prompt == "Q {question} R {target} A {prediction}"


def test_the_multiple_choice_solver_takes_the_file_keys(tmp_path: Path) -> None:
    frame = pl.DataFrame({"q": ["Which?"], "opts": [["a", "b"]], "gold": ["A"]})
    frame.write_parquet(tmp_path / "mc.parquet")
    task = make(tmp_path, "parts-mc", "{name: exact_match}", data="mc.parquet",
                solver="{name: multiple_choice, prompt: '{q} {choices}', choices: opts, n: 5, temperature: 0.9, "
                       "seed: 3}")
    solver = task.parts[1]
    assert isinstance(solver, MultipleChoice) and (solver.choices, solver.n, solver.temperature, solver.seed) == \
        ("opts", 5, 0.9, 3)
    assert task.methods.solver == ("multiple_choice",)
    assert task.load(DatasetOptions(), None).samples[0].input == {"q": "Which?", "opts": ["a", "b"]}
    other = make(tmp_path, "parts-mc2", "{name: exact_match}", data="mc.parquet",
                 solver="{name: multiple_choice, prompt: '{q} {choices}', choices: opts, n: 4}")
    assert other.prompts_version != task.prompts_version  # the solver's settings are part of it
