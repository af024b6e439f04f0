"""The peer race (benchmarks/peer_race.py) and the contention benchmark (benchmarks/contention_bench.py): their own
logic, fast. The stand-in's answers and counts in process, the floor and the designed accuracy, each tool held to the
same connections, the stall arithmetic; and an emocaustics-only race at 5 questions as a whole process (10 ms a call).
The peers themselves (inspect_ai, lm-eval) are not installed here: they live in venvs of their own."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from benchmarks.contention_bench import STALL_S, count_answers, stall_of
from benchmarks.peer_race import (MCStandin, command, correct_letter, designed_accuracy, floor_s, prepare, questions,
                                  race, standin_letter)


def test_the_floor_is_one_latency_or_the_calls_through_the_connections():
    assert [floor_s(n, 0.2, 64) for n in (1, 400, 2000)] == [0.2, 1.25, 6.25]  # issue 55's table
    assert floor_s(0, 0.2, 64) == 0.0


def test_the_stand_in_is_wrong_on_every_fifth_question_only():
    wrong = [i for i in range(20) if standin_letter(i) != correct_letter(i)]
    assert wrong == [4, 9, 14, 19]
    assert designed_accuracy(1) == 1.0 and designed_accuracy(400) == 0.8 and designed_accuracy(2000) == 0.8
    assert [q["target"] for q in questions(4)] == [correct_letter(i) for i in range(4)]
    assert len({q["target"] for q in questions(8)}) == 4  # the right letter is not always the same one


def test_the_stand_in_answers_each_format_and_counts_asks_per_question():
    async def go() -> dict:
        s = MCStandin(0.001, 4)
        schema = {"type": "json_schema", "json_schema": {"schema": {"type": "object"}}}
        a = await s.answer({"messages": [{"role": "user", "content": "Question 4: which?"}], "response_format": schema})
        b = await s.answer({"messages": [{"role": "user", "content": [{"type": "text", "text": "Question 7: x"}]}]})
        c = await s.answer({"messages": [{"role": "user", "content": "Question 7: again"}]})
        await s.answer({"messages": [{"role": "user", "content": "no number here"}]})
        texts = [r["choices"][0]["message"]["content"] for r in (a, b, c)]
        return {"texts": texts, "stats": s.stats()}

    got = asyncio.run(go())
    assert json.loads(got["texts"][0]) == {"answer": standin_letter(4)}  # a schema asked: JSON (emocaustics)
    assert got["texts"][1:] == [f"ANSWER: {standin_letter(7)}"] * 2  # else the peers' format
    st = got["stats"]
    assert (st["calls"], st["questions_asked"], st["max_asks_per_question"], st["unrecognised"]) == (4, 2, 2, 1)


def test_every_tool_is_held_to_the_same_connections(tmp_path):
    files = prepare(tmp_path, 3)
    cmds = {t: command(t, files, "http://127.0.0.1:1/v1", tmp_path / "out", 64)
            for t in ("emocaustics", "inspect_ai", "lm_eval")}
    assert cmds["emocaustics"][cmds["emocaustics"].index("--model") + 1].endswith("?concurrency=64")
    assert cmds["inspect_ai"][cmds["inspect_ai"].index("--max-connections") + 1] == "64"
    assert "responses_api=false" in cmds["inspect_ai"]  # chat completions, as the stand-in serves
    assert "num_concurrent=64" in cmds["lm_eval"][cmds["lm_eval"].index("--model_args") + 1]
    assert len(files["data"].read_text().splitlines()) == 3


def test_a_stall_is_a_stretch_in_which_neither_the_endpoint_nor_the_driver_moved():
    t = 1000.0
    calm = stall_of([t + 0.3, t + 0.5, t + 1.0], t, t + 0.95, [0.05], [40.0])
    assert (calm["first_answer_s"], calm["max_gap_s"], calm["idle_waiting_s"], calm["stalled"]) == (0.3, 0.5, 0, False)
    # the first answer 6 s after the first request, the endpoint done after its first second: seconds 1-5 idle
    late = stall_of([t + 6.0, t + 6.1], t, t + 0.5, [0.05], [30.0, 0.0])
    assert late["first_answer_s"] == 6.0 and late["idle_waiting_s"] == 5 and late["stalled"]
    # the same first answer while the endpoint served a chain of calls throughout: slow, but no stall
    chain = stall_of([t + 6.0, t + 6.1], t, t + 5.9, [0.05], [3.0] * 6)
    assert chain["max_gap_s"] == 6.0 and chain["idle_waiting_s"] == 0 and not chain["stalled"]
    # the last answer recorded well after the endpoint's last answer
    tail = stall_of([t + 0.3, t + 0.5 + STALL_S + 1], t, t + 0.4, [0.05], [5.0])
    assert tail["last_answer_lag_s"] == pytest.approx(STALL_S + 1.1) and tail["stalled"]
    assert stall_of([], t, None, [], [])["stalled"]  # nothing recorded at all


def test_answers_are_counted_from_a_run_folder(tmp_path):
    (tmp_path / "predictions" / "a").mkdir(parents=True)
    (tmp_path / "predictions" / "a" / "predictions.jsonl").write_text('{"id": 1}\n{"id": 2}\n')
    (tmp_path / "predictions" / "b").mkdir()
    for i in (1, 2, 3):
        (tmp_path / "predictions" / "b" / f"output_chat_{i}.json").write_text("{}")
    assert count_answers(tmp_path) == 5 and count_answers(tmp_path / "nothing") == 0


def test_an_emocaustics_race_at_five_questions(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    res = race([5], ["emocaustics"], repeats=1, warmups=0, latency=0.01, slots=16, connections=4, work=tmp_path)
    size = res["figures"]["sizes"]["5"]
    one = size["tools"]["emocaustics"]
    assert one["runs"][0]["rc"] == 0, one["runs"][0].get("stderr_tail")
    assert one["one_call_per_question"] and one["designed_accuracy_reported"], one["runs"][0]
    assert one["runs"][0]["accuracy"] == size["designed_accuracy"] == 0.8
    assert size["floor_s"] == 0.013  # 5 calls x 10 ms over 4 connections
