"""The LLM solver with a schema-answering double (no engine): prompts, schemas, span location, the utterance
method's history rule, retries, and that no gold field reaches a prompt."""

from __future__ import annotations

import asyncio
import json

import pytest
from extract_doubles import SchemaLLM

from emocaustics.core.task import Sample, SolveFailed, parse_options
from emocaustics.models.base import Completion
from emocaustics.tasks.ecpe import prompts as P
from emocaustics.tasks.ecpe.solver import solve
from emocaustics.tasks.ecpe.task import EcpeTask
from emocaustics.tasks.ecpe.validate import check_prediction

TEXTS = ["I lost my job today .", "Oh no , that is terrible !", "But I got a new one !"]


def sample(target=None, extra=None) -> Sample:
    utts = [{"utterance_ID": i, "speaker": sp, "text": t, **(extra or {})}
            for i, (sp, t) in enumerate(zip(["Ross", "Monica", "Ross"], TEXTS), 1)]
    return Sample("1375", {"conversation_ID": 1375, "utterances": utts}, target)


def run(coro):
    return asyncio.run(coro)


def test_direct_one_call_spans_located_by_the_token_rule():
    def answer(req, n):
        return {"pairs": [
            {"emotion_utterance": 2, "emotion": "sadness", "cause_utterance": 1, "cause_span": "I lost my job ."},
            {"emotion_utterance": 2, "emotion": "sadness", "cause_utterance": 1, "cause_span": "I lost my job"},
            {"emotion_utterance": 3, "emotion": "joy", "cause_utterance": 3, "cause_span": "got a brand new one"},
            {"emotion_utterance": 9, "emotion": "joy", "cause_utterance": 3, "cause_span": "x"},
        ]}
    llm = SchemaLLM(answer)
    pred = run(solve(llm, sample(), "direct"))
    assert llm.batches == [1]
    # "I lost my job ." cleaned -> "I lost my job" -> tokens [0, 4); the second is then a duplicate
    # "got a brand new one" is not in utterance 3 -> the whole utterance [0, 7), one miss
    assert pred["subtask1"] == [["2_sadness", "1_0_4"], ["3_joy", "3_0_7"]]
    assert pred["subtask2"] == [["2_sadness", "1"], ["3_joy", "3"]]
    assert (pred["span_misses"], pred["duplicates"]) == (1, 1)
    assert pred["spans"] == ["I lost my job .", "got a brand new one"]  # the model's text, the first of duplicates
    assert pred["dropped"] == ["utterance number out of 1..3: emotion 9, cause 3"]  # only a non-guided backend
    assert set(pred) == {"subtask1", "subtask2", "spans", "span_misses", "duplicates", "dropped", "no_cause"}
    req = llm.requests[0]
    assert req.messages[0] == {"role": "system", "content": P.SYSTEM}
    assert "[2] Monica: Oh no , that is terrible !" in req.messages[-1]["content"]
    item = req.schema["properties"]["pairs"]["items"]["properties"]
    assert item["emotion_utterance"]["enum"] == [1, 2, 3] and item["cause_utterance"]["enum"] == [1, 2, 3]
    assert item["cause_span"]["maxLength"] == len(TEXTS[1]) + 8  # the longest utterance, plus a little
    assert req.schema["properties"]["pairs"]["maxItems"] == 40
    assert req.affinity == "1375"


def test_utterance_method_one_call_per_utterance_with_its_history_only():
    def answer(req, n):
        user = req.messages[-1]["content"]
        if "Look at utterance [2]" in user:
            return {"emotion": "sadness", "causes": [{"cause_utterance": 1, "cause_span": "lost my job"},
                                                     {"cause_utterance": 3, "cause_span": "new one"}]}
        if "Look at utterance [3]" in user:
            return {"emotion": "joy", "causes": []}
        return {"emotion": "neutral", "causes": [{"cause_utterance": 1, "cause_span": "ignored"}]}
    llm = SchemaLLM(answer)
    pred = run(solve(llm, sample(), "utterance"))
    assert llm.batches == [3]  # independent calls, all in flight together
    for i, req in enumerate(llm.requests, 1):
        user = req.messages[-1]["content"]
        for j, text in enumerate(TEXTS, 1):
            assert (text in user) == (j <= i), (i, j)  # no later utterance is shown
        assert req.schema["properties"]["causes"]["items"]["properties"]["cause_utterance"]["enum"] == \
            list(range(1, i + 1))
    # utterance 1 neutral: nothing; utterance 2: [1,4) "lost my job" ok, cause 3 after it dropped; 3: joy, no cause
    assert pred["subtask1"] == [["2_sadness", "1_1_4"]]
    assert pred["dropped"] == ["cause utterance 3 after emotion utterance 2"]
    assert pred["no_cause"] == 1
    # the shared part comes first: request 2's prompt starts with request 1's history
    first = llm.requests[0].messages[-1]["content"]
    assert llm.requests[1].messages[-1]["content"].startswith(first.split("\n\n")[0])


@pytest.mark.parametrize("method", ["direct", "utterance"])
def test_no_gold_field_reaches_a_prompt(method):
    secret = {"emotions": ["SECRETLABEL"] * 3, "subtask1": [["2_sadness", "1_SECRETSPAN"]],
              "subtask2": [["2_sadness", "1"]]}
    plain, leaky = SchemaLLM(), SchemaLLM()
    run(solve(plain, sample(), method))
    run(solve(leaky, sample(secret, extra={"emotion": "SECRETEMOTION"}), method))
    texts = [json.dumps(r.messages) for r in leaky.requests]
    assert not any(s in t for t in texts for s in ("SECRET", "sadness\"", "2_sadness"))
    assert [r.messages for r in leaky.requests] == [r.messages for r in plain.requests]


def test_unreadable_answer_is_retried_with_a_new_seed_and_counted_in_the_stats_row_not_the_prediction():
    from emocaustics.solve.item import Item, solve_item

    def answer(req, n):
        return "not json" if n == 0 else {"pairs": []}
    llm = SchemaLLM(answer)
    task = EcpeTask()
    opts = parse_options(task, {"method": "direct"})
    row = run(solve_item(task, opts, llm, Item(sample(), task.placement(sample(), opts))))
    assert row.ok and "unparseable" not in row.prediction and "retries" not in row.prediction
    assert (row.stats["unparseable"], row.stats["retries"], row.stats["llm_calls"]) == (1, 1, 2)
    assert llm.requests[1].sampling.seed != llm.requests[0].sampling.seed


def test_an_answer_that_stays_unreadable_fails_naming_the_step():
    llm = SchemaLLM(lambda req, n: Completion(text="", error="boom"))
    with pytest.raises(SolveFailed) as info:
        run(solve(llm, sample(), "utterance", retries=1))
    assert info.value.step.startswith("utterance 1 of conversation 1375") and "boom" in info.value.reason


def test_task_solve_and_its_files_pass_our_validator(tmp_path):
    task = EcpeTask()
    opts = parse_options(task, {"method": "direct"})
    s = sample({"emotions": ["neutral", "sadness", "joy"], "subtask1": [], "subtask2": []})
    pred = run(task.solve(SchemaLLM(), s, opts))  # the double fills the schema: valid but meaningless pairs
    assert pred["subtask1"]
    paths = task.finalize(tmp_path, [s], {s.id: pred}, opts)
    for st in (1, 2):
        records = json.loads((tmp_path / f"Subtask_{st}_pred.json").read_text())
        assert not check_prediction(records, st, "x").errors
    assert [p.name for p in paths] == ["Subtask_1_pred.json", "Subtask_2_pred.json", "submission.zip", "scores.txt",
                                       "per_emotion_subtask1.csv", "per_emotion_subtask2.csv"]
    utterance = parse_options(task, {"method": "utterance"})
    assert task.placement(s, opts).weight == 1.0 and task.placement(s, utterance).weight == 3.0


def test_an_answer_cut_at_its_budget_fails_even_when_json_repair_closed_it():
    # '{"pairs": [{...}, {"emo' cut at max_tokens: json-repair makes a valid answer with the first pair only
    def cut(req, n):
        return Completion(text='{"pairs": [{"emotion_utterance": 2, "emotion": "sadness", "cause_utterance": 1, '
                               '"cause_span": "lost my job"}, {"emo', repaired=True,
                          parsed={"pairs": [{"emotion_utterance": 2, "emotion": "sadness", "cause_utterance": 1,
                                             "cause_span": "lost my job"}]},
                          generated_tokens=req.sampling.max_tokens)
    llm = SchemaLLM(cut)
    with pytest.raises(SolveFailed) as info:
        run(solve(llm, sample(), "direct", retries=1, max_tokens=64))
    assert info.value.step == "direct conversation 1375" and "cut at max_tokens=64" in info.value.reason
    assert len(llm.requests) == 2 and all(r.sampling.max_tokens == 64 for r in llm.requests)  # re-asked once

    def repaired_in_budget(req, n):  # e.g. an unguided endpoint's fenced JSON: repaired, but complete
        return Completion(text='```json\n{"pairs": []}\n```', parsed={"pairs": []}, repaired=True,
                          generated_tokens=12)
    assert run(solve(SchemaLLM(repaired_in_budget), sample(), "direct"))["subtask1"] == []
