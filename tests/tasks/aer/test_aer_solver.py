"""The solver: reading answers, the retry, failures with their raw output, self-consistency, and every prompt x
context mode through a schema-guided double (layout, examples, affinity)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from emocaustics.core.task import Failure, ScoreContext, SolveFailed, get_task, parse_options
from emocaustics.models.base import Completion, ErrorKind
from emocaustics.tasks.aer import prompts
from emocaustics.scoring.reducers import majority as vote
from emocaustics.tasks.aer.solver import Unreadable, read_answer
from extract_doubles import SchemaLLM
from tasks.aer.aer_fixtures import KeywordEmbedder, ScriptedLLM, standard_dataset

TASK = get_task("aer")


@pytest.mark.parametrize("text, parsed, expected, how", [
    ('{"answer": ["C", "A"]}', None, ["A", "C"], "json"),
    ("```json\n{\"answer\": [\"B\", \"B\"]}\n```", None, ["B"], "json"),
    ("", {"answer": ["D"]}, ["D"], "schema"),
    ("Both A and C came first.\nAnswer: A, C", None, ["A", "C"], "text"),
    ("**Final answer:** B and D", None, ["B", "D"], "text"),
    ("A,C", None, ["A", "C"], "text"),
    ("[B]", None, ["B"], "text"),
])
def test_read_answer_accepts(text, parsed, expected, how) -> None:
    letters, _, got_how = read_answer(Completion(text=text, parsed=parsed), "zero-shot")
    assert letters == expected and got_how == how


@pytest.mark.parametrize("text, needle", [
    ('{"answer": ["E"]}', "field answer.0"),
    ('{"answer": []}', "field answer"),
    ('{"choice": "A"}', "field answer"),
    ("I think the answer is probably A", "no JSON answer"),
    ("Answer: none of them", "answer line without letters"),
    ("Answer: A, E", "answer line without letters"),
    ("", "no JSON answer"),
])
def test_read_answer_rejects(text, needle) -> None:
    with pytest.raises(Unreadable, match=needle):
        read_answer(Completion(text=text), "zero-shot")


def test_cot_reads_reasoning_and_needs_it_in_json() -> None:
    letters, reasoning, _ = read_answer(Completion(text='{"reasoning": "B came first.", "answer": ["B"]}'), "cot")
    assert (letters, reasoning) == (["B"], "B came first.")
    with pytest.raises(Unreadable, match="field reasoning"):
        read_answer(Completion(text='{"answer": ["B"]}'), "cot")
    letters, reasoning, how = read_answer(Completion(text="B happened just before.\nAnswer: B"), "cot")
    assert (letters, reasoning, how) == (["B"], "B happened just before.", "text")


def _prepared(root: Path, split: str = "sample", **opts):
    options = parse_options(TASK, {"method": "llm", **opts})
    loaded = TASK.load(TASK.Dataset(split=split, data=str(root)), options)
    emb = KeywordEmbedder(["harbour", "storm", "mayor", "Report"])
    return TASK.prepare(loaded.samples, options, ScoreContext(embedder=emb)), options


@pytest.mark.parametrize("prompt", ["zero-shot", "few-shot", "cot"])
@pytest.mark.parametrize("context", ["none", "full", "retrieve"])
def test_every_prompt_and_context_mode_runs_schema_guided(tmp_path: Path, prompt: str, context: str) -> None:
    samples, options = _prepared(standard_dataset(tmp_path), prompt=prompt, context=context)
    llm = SchemaLLM()
    preds = {s.id: asyncio.run(TASK.solve(llm, s, options)) for s in samples}
    assert len(llm.requests) == len(samples)  # one guided answer each, nothing unreadable
    assert all(p["answer"] == ["A"] for p in preds.values())  # the double's first enum value
    r = llm.requests[0]
    assert r.schema is not None and set(r.schema["properties"]) == ({"reasoning", "answer"} if prompt == "cot"
                                                                     else {"answer"})
    assert r.messages[0] == {"role": "system", "content": prompts.SYSTEM}
    user = r.messages[1]["content"]
    # documents (or passages) first, then examples, then the question last
    order = [user.find(m) for m in ("Documents about", "Passages from", "Solved examples", "Observed event: The")]
    present = [i for i in order if i >= 0]
    assert present == sorted(present) and user.rstrip().endswith(prompts.instruction(prompt).rstrip())
    assert ("Documents about" in user) == (context == "full") and ("Passages from" in user) == (context == "retrieve")
    assert ("Solved examples" in user) == (prompt == "few-shot")
    assert "data:image" not in user
    scored = TASK.score(samples, preds, options, ScoreContext())
    # the double answers A everywhere: q-1 (A) exact, q-2 (A,B) partial, q-6 (A,C) partial, the rest wrong
    assert scored.summary["score"] == pytest.approx((1 + 0.5 + 0.5) / 6)


def test_questions_of_a_topic_share_the_prompt_prefix(tmp_path: Path) -> None:
    samples, options = _prepared(standard_dataset(tmp_path), prompt="few-shot", context="full")
    llm = SchemaLLM()
    for s in samples[:2]:  # q-1, q-2: topic 1
        asyncio.run(TASK.solve(llm, s, options))
    a, b = (r.messages[1]["content"] for r in llm.requests)
    prefix = a[: a.rindex("Observed event: The")]
    assert b.startswith(prefix) and "Documents about the topic \"Events in town 1\"" in prefix
    same = TASK.placement(samples[0], options).affinity
    assert same == TASK.placement(samples[1], options).affinity == "aer:sample:topic-1"
    assert TASK.placement(samples[0], parse_options(TASK, {"method": "llm", "context": "none"})).affinity == "aer:q-1"
    assert TASK.placement(samples[0], options).weight >= 1.0


def test_few_shot_examples_come_from_another_split_never_the_own_topic(tmp_path: Path) -> None:
    samples, _ = _prepared(standard_dataset(tmp_path), prompt="few-shot", context="none", shots=2)
    for s in samples:
        shots = s.meta["shots"]
        assert len(shots) == 2
        assert all(x["id"] in {"q-10", "q-11", "q-12", "q-13"} for x in shots)  # dev questions
        assert all(x["topic_id"] != s.input["topic_id"] for x in shots)
    # the same topic draws the same examples (one prefix per topic)
    assert samples[0].meta["shots"] == samples[1].meta["shots"]
    dev, _ = _prepared(standard_dataset(tmp_path / "b"), prompt="few-shot", context="none", split="dev")
    assert all(x["id"].startswith("q-") and int(x["id"][2:]) < 10 for s in dev for x in s.meta["shots"])  # sample
    from emocaustics.core.errors import UsageError

    with pytest.raises(UsageError, match="another split"):
        _prepared(standard_dataset(tmp_path / "c"), prompt="few-shot", context="none", shots_from="sample")


def test_options_that_do_not_apply_are_rejected() -> None:
    with pytest.raises(ValueError, match="shots applies to prompt: few-shot"):
        parse_options(TASK, {"method": "llm", "shots": 5})
    with pytest.raises(ValueError, match="top_k applies to context: retrieve"):
        parse_options(TASK, {"method": "llm", "context": "full", "top_k": 3})
    with pytest.raises(ValueError, match="temperature applies to self-consistency"):
        parse_options(TASK, {"method": "llm", "temperature": 1.0})
    with pytest.raises(ValueError, match="no method"):
        parse_options(TASK, {"method": "bogus"})


def test_unreadable_answer_is_retried_once_with_a_new_seed(tmp_path: Path) -> None:
    samples, options = _prepared(standard_dataset(tmp_path), context="none")
    llm = ScriptedLLM(lambda r, n: "no idea" if n == 0 else {"answer": ["B"]})
    pred = asyncio.run(TASK.solve(llm, samples[0], options))
    assert pred["answer"] == ["B"] and len(llm.requests) == 2
    first, second = (r.sampling for r in llm.requests)
    assert (first.temperature, first.seed) == (0.0, 0) and (second.temperature, second.seed) == (0.7, 1000)


def test_still_unreadable_after_the_retry_is_a_counted_failure_with_raw_output(tmp_path: Path) -> None:
    samples, options = _prepared(standard_dataset(tmp_path), context="none")
    llm = ScriptedLLM(lambda r, n: f"rambling answer number {n}")
    with pytest.raises(SolveFailed) as err:
        asyncio.run(TASK.solve(llm, samples[0], options))
    assert len(llm.requests) == 2 and err.value.step == "answer"
    assert "unreadable answer" in err.value.reason and "rambling answer number" in err.value.reason
    preds = {samples[0].id: Failure(err.value.step, err.value.reason)}
    scored = TASK.score(samples, preds, options, ScoreContext())
    rows = scored.rows
    row = rows.filter((rows["sample_id"] == "q-1") & (rows["metric"] == "score")).row(0, named=True)
    assert row["value"] == 0.0 and row["status"] == "failed" and "rambling" in row["reason"]
    assert scored.summary["failed"] == 1 and "q-1" in scored.summary["missing"]


def test_context_overflow_fails_at_once(tmp_path: Path) -> None:
    samples, options = _prepared(standard_dataset(tmp_path), context="none")
    llm = ScriptedLLM(lambda r, n: Completion(text="", error="rejected", kind=ErrorKind.CONTEXT_LENGTH))
    with pytest.raises(SolveFailed, match="exceeds the model's context"):
        asyncio.run(TASK.solve(llm, samples[0], options))
    assert len(llm.requests) == 1


def test_self_consistency_votes_per_option(tmp_path: Path) -> None:
    samples, _ = _prepared(standard_dataset(tmp_path), context="none")
    options = parse_options(TASK, {"method": "llm", "context": "none", "samples": 5, "seed": 3})
    by_seed = {3: ["A", "B"], 4: ["A"], 5: ["A", "C"], 6: ["B"], 7: ["A", "B"]}
    llm = ScriptedLLM(lambda r, n: {"answer": by_seed[r.sampling.seed]})
    pred = asyncio.run(TASK.solve(llm, samples[0], options))
    # votes A 4, B 3, C 1 of 5: A and B have a majority (> 2.5)
    assert pred["answer"] == ["A", "B"] and pred["votes"] == {"A": 4, "B": 3, "C": 1}
    assert pred["vote_fallback"] is False and len(pred["raw_outputs"]) == 5
    assert sorted(r.sampling.seed for r in llm.requests) == [3, 4, 5, 6, 7]
    assert all(r.sampling.temperature == 0.7 for r in llm.requests)


def test_vote_fallback_and_unreadable_samples(tmp_path: Path) -> None:
    # no letter chosen by more than half of 3: the most frequent set, ties -> the earliest
    assert vote([["C"], ["B"], ["A"]], 3) == (["C"], {"A": 1, "B": 1, "C": 1}, True)
    assert vote([["B"], ["A", "C"], ["A", "C"], ["D"]], 4) == (["A", "C"], {"A": 2, "B": 1, "C": 2, "D": 1}, True)
    samples, _ = _prepared(standard_dataset(tmp_path), context="none")
    options = parse_options(TASK, {"method": "llm", "context": "none", "samples": 3})
    # seed 1 never readable (also its retry, seed 1001): votes among the two read samples
    llm = ScriptedLLM(lambda r, n: "??" if r.sampling.seed in (1, 1001) else {"answer": ["D"]})
    pred = asyncio.run(TASK.solve(llm, samples[0], options))
    assert pred["answer"] == ["D"] and pred["unreadable"] == 1 and pred["samples"][1] is None
    assert len(llm.requests) == 4  # 3 samples + 1 retry


def test_calibration_rows(tmp_path: Path) -> None:
    root = standard_dataset(tmp_path)
    for method, score in (("oracle", 1.0), ("all-options", 0.0)):
        opts = parse_options(TASK, {"method": method})
        samples = TASK.load(TASK.Dataset(split="sample", data=str(root)), opts).samples
        assert TASK.score(samples, TASK.predict(method, samples, opts), opts, ScoreContext()).summary["score"] == score
    opts = parse_options(TASK, {"method": "random", "seed": 5})
    samples = TASK.load(TASK.Dataset(split="sample", data=str(root)), opts).samples
    a, b = TASK.predict("random", samples, opts), TASK.predict("random", samples[2:], opts)
    assert all(1 <= len(p["answer"]) <= 4 for p in a.values())
    assert all(a[k] == b[k] for k in b)  # per-question seeding: the same answer in any selection


def test_finalize_writes_submission_zip_and_results(tmp_path: Path) -> None:
    root = standard_dataset(tmp_path / "data")
    opts = parse_options(TASK, {"method": "llm", "context": "none"})
    samples = TASK.load(TASK.Dataset(split="test", data=str(root)), opts).samples
    preds = {"q-20": {"answer": ["B"], "raw_output": '{"answer": ["B"]}'}, "q-21": Failure("answer", "HTTP 500")}
    paths = TASK.finalize(tmp_path / "out", samples, preds, opts)
    assert [p.name for p in paths] == ["submission.jsonl", "submission.zip", "results.json"]
    assert paths[0].read_text().splitlines() == ['{"id": "q-20", "answer": "B"}', '{"id": "q-21", "answer": ""}']
    doc = json.loads(paths[2].read_text())
    assert doc["config"]["prompt"] == "zero-shot" and doc["config"]["prompts_version"] == prompts.PROMPTS_VERSION
    assert doc["results"]["score"] == 0.5 and doc["results"]["missing"] == ["q-21"]
    assert doc["predictions"][1] == {"id": "q-21", "golden": "A,C", "prediction": "", "raw_output": "answer: HTTP 500",
                                     "score": 0.0}
    scored = TASK.score(samples, preds, opts, ScoreContext())
    assert set(scored.tables) == {"by_gold_size", "by_topic", "sample_info"}
    assert scored.tables["by_gold_size"]["gold_size"].to_list() == [1, 2]
    assert set(scored.rows["metric"].unique()) == {"score", "exact", "partial", "wrong"}
