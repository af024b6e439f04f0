"""The methods' behaviour against a deterministic stand-in model: what each prompt contains (no look-ahead, RAG
history passed, event context first and as of the right window), retries and failure reasons, merge of states."""

import asyncio
import json
import re

import numpy as np
import pytest

from emocaustics.solve.schema import validate_answer
from emocaustics.tasks.longdialogue.data.schema import Emotion
from emocaustics.tasks.longdialogue.extract import chains as C
from emocaustics.tasks.longdialogue.extract import sextuple as S
from emocaustics.solve.ask import Asker, ContextExceeded, StepFailed
from emocaustics.solve.schema import token_budget
from emocaustics.models.base import Completion, ErrorKind
from extract_doubles import SchemaLLM, unit_vectors

N = 23


def dialogue(n=N):
    return S.DialogueInput(7, tuple(f"第{i:03d}句话" for i in range(n)), tuple(str(i % 2 + 1) for i in range(n)))


def utter_ids(text):
    return {int(m) for m in re.findall(r"第(\d{3})句话", text)}


def run(coro):
    return asyncio.run(coro)


def test_direct_one_call_per_utterance_with_whole_history_and_nothing_later():
    llm = SchemaLLM()
    recs = run(S.direct(Asker(llm), dialogue()))
    assert len(recs) == N and len(llm.requests) == N
    for i, r in enumerate(llm.requests):
        assert utter_ids(r.messages[-1]["content"]) == set(range(i + 1))
    assert recs[0]["input_sentence"] == "第000句话" and recs[0]["holder"] == "1"
    assert set(recs[0]["final_model_response"][0]) == {"target", "aspect", "opinion", "sentiment", "rationale"}


def test_direct_over_the_context_is_reported_not_truncated():
    def answer(req, n):
        if len(utter_ids(req.messages[-1]["content"])) > 10:
            return Completion(text="", error="prompt too long: 5000 tokens, max_model_len 4096",
                              kind=ErrorKind.CONTEXT_LENGTH)
    with pytest.raises(ContextExceeded, match="direct utterance 10: prompt exceeds the model's context"):
        run(S.direct(Asker(SchemaLLM(answer)), dialogue()))


def test_rag_passes_retrieved_history_from_this_dialogue_only():
    d = dialogue(30)
    groups = [i % 5 for i in range(30)]  # utterances 5 apart are identical in embedding space
    emb = unit_vectors(groups)
    llm = SchemaLLM()
    run(S.rag(Asker(llm), d, emb, k=10, top_k=2, threshold=0.9))
    prompt = llm.requests[25].messages[-1]["content"]
    retrieved, recent = prompt.split("最近的对话：")
    assert utter_ids(retrieved) == {0, 5}  # same group as 25, outside its recent window, top 2 (ties: earliest)
    assert utter_ids(recent) == set(range(16, 26))
    for i, r in enumerate(llm.requests):  # never anything after the utterance
        assert max(utter_ids(r.messages[-1]["content"])) == i
    assert utter_ids(llm.requests[3].messages[-1]["content"].split("最近的对话：")[0]) == set()  # nothing earlier


def test_rag_waits_for_embeddings_only_from_utterance_k_on():
    """Utterances before K have nothing older than their recent history to retrieve: their calls go out before any
    row is embedded, and a dialogue of at most K utterances never asks for embeddings (its texts are not embedded)."""
    from emocaustics.tasks.longdialogue.embeddings import Embeddings
    from emocaustics.tasks.longdialogue.extract.dialogue import ExtractConfig

    emb = unit_vectors([i % 5 for i in range(30)])
    asked: list[int] = []
    sent_before_rows: list[int] = []
    llm = SchemaLLM()

    async def upto(n):  # the rows come once the first calls are out (never, if rag waited for them first)
        asked.append(n)
        for _ in range(1000):
            if len(llm.requests) >= 10:
                break
            await asyncio.sleep(0)
        sent_before_rows.append(len(llm.requests))
        return emb

    run(S.rag(Asker(llm), dialogue(30), Embeddings(lambda: upto(30), upto), k=10, top_k=2, threshold=0.9))
    assert asked == [30] and sent_before_rows == [10]  # utterances 0-9 asked first; then 10-29, one chunk
    llm = SchemaLLM()
    assert len(run(S.rag(Asker(llm), dialogue(10), None, k=10, top_k=2))) == 10  # no embeddings at all
    with pytest.raises(AssertionError, match="rag needs embeddings: utterance 10"):
        run(S.rag(Asker(SchemaLLM()), dialogue(11), None, k=10, top_k=2))
    cfg = ExtractConfig(task="sextuple", method="rag", window=10)
    assert [cfg.needs_embeddings(False, n) for n in (0, 10, 11)] == [False, False, True]
    assert not ExtractConfig(task="sextuple", method="rag", top_k=0).needs_embeddings(False, 100)


def test_retrieval_threshold_and_top_k():
    emb = np.array([[1, 0], [0.8, 0.6], [0, 1], [1, 0]], np.float32)
    assert S.retrieve(emb, 3, 1, 5, 0.7) == [0, 1]
    assert S.retrieve(emb, 3, 1, 1, 0.7) == [0]
    assert S.retrieve(emb, 3, 1, 5, 0.9) == [0]


def pass2_prompts(llm):
    return [r.messages[-1]["content"] for r in llm.requests if "事件背景" in r.messages[-1]["content"]]


@pytest.mark.parametrize("mode", ["asof", "strict", "final"])
def test_window_pass2_event_context_first_and_no_future(mode):
    d = dialogue()
    llm = SchemaLLM()
    cfg = S.WindowSettings(k=10, s=5, event_context=mode)
    recs, bucket = run(S.window(Asker(llm), d, unit_vectors(list(range(N))), cfg))
    assert len(recs) == N and all("event" in r for r in recs)
    p2 = pass2_prompts(llm)
    assert len(p2) == N
    by_j = {int(re.search(r"当前句（编号 (\d+)", p).group(1)): p for p in p2}
    for j, p in by_j.items():
        assert p.startswith("事件背景：")  # the shared part first, for the prefix cache
        context, history = p.split("对话：\n", 1)
        assert max(utter_ids(history)) == j  # raw text: never a later utterance
        logged = {int(m) for m in re.findall(r"\[(\d+)\] ", context)}
        w = j // 5
        if mode == "asof":  # the bucket right after the window that absorbed j
            assert logged and max(logged) == min(N, 5 * (w + 1)) - 1
        elif mode == "strict":  # nothing from j's own window
            assert all(i < 5 * w for i in logged)
            assert "所属事件：未知" in p
        else:  # the reference's leak: the final bucket everywhere
            assert max(logged) == N - 1
    # utterances absorbed by the same window share the event context and the history prefix
    assert by_j[6].split("第006句话")[0] == by_j[7].split("第006句话")[0]


def test_pass1_schema_limits_event_ids_and_one_item_per_new_utterance():
    llm = SchemaLLM()
    run(S.window(Asker(llm), dialogue(12), None, S.WindowSettings(k=10, s=5)))
    p1 = [r for r in llm.requests if "事件桶" in r.messages[-1]["content"]]
    assert len(p1) == 3
    items = [r.schema["properties"]["items"] for r in p1]
    assert [(i["minItems"], i["maxItems"]) for i in items] == [(5, 5), (5, 5), (2, 2)]
    # SchemaLLM answers event_id -1 with the same name for all: one event by name, ids on show after it
    assert items[1]["items"]["properties"]["event_id"]["enum"][0] == -1
    for r in p1:
        token_budget(r.schema)  # every answer schema is bounded


def test_bad_answers_are_retried_with_a_new_seed_then_recorded():
    calls = []

    def answer(req, n):
        calls.append(req.sampling.seed)
        return "{not json" if n < 2 else None
    asker = Asker(SchemaLLM(answer), retries=2)
    recs = run(S.direct(asker, dialogue(1)))
    assert len(recs) == 1 and calls == [0, 1, 2] and asker.stats.unparseable == 2 and asker.stats.retries == 2

    asker = Asker(SchemaLLM(lambda req, n: {"sextuples": [{"target": "x"}]}), retries=1)
    with pytest.raises(StepFailed) as e:
        run(S.direct(asker, dialogue(1)))
    assert e.value.step == "direct utterance 0"
    assert "field sextuples.0.aspect" in e.value.reason and "after 2 attempts" in e.value.reason


def test_failing_pass1_window_fails_the_dialogue_with_its_step():
    def answer(req, n):
        if "编号 5、6" in req.messages[-1]["content"]:
            return Completion(text="", error="engine error: boom")
    with pytest.raises(StepFailed, match=r"pass1 window 1 \(utterances 5-9\): model error: engine error: boom"):
        run(S.window(Asker(SchemaLLM(answer), retries=1), dialogue(12), None, S.WindowSettings(k=10, s=5)))


def test_a_failing_window_stops_the_asks_still_waiting():
    """Window 1's pass 1 fails while window 0's pass-2 asks still wait on the model: they are cancelled at once, not
    left running beside the failure (`sextuple._stop`)."""
    cancelled: list[int] = []

    class Hanging(SchemaLLM):
        async def generate(self, requests):
            await asyncio.sleep(0)  # as a model does: the asks already made get under way meanwhile
            if "请抽取这句话的情感五元组" in requests[0].messages[-1]["content"]:  # a pass-2 ask: never answered
                try:
                    await asyncio.Event().wait()
                except asyncio.CancelledError:
                    cancelled.append(len(requests))
                    raise
            return await super().generate(requests)

    def answer(req, n):
        if "编号 5、6" in req.messages[-1]["content"]:
            return Completion(text="", error="engine error: boom")

    async def main() -> list[int]:
        with pytest.raises(StepFailed, match="pass1 window 1"):
            await S.window(Asker(Hanging(answer), retries=1), dialogue(12), None, S.WindowSettings(k=10, s=5))
        await asyncio.sleep(0)  # the cancelled asks run to their end
        return list(cancelled)

    assert run(main())


def emo(state, reason, *ids):
    return Emotion(state, reason, tuple(ids))


def test_runs_of_identical_states():
    es = [emo(s, "r") for s in ["negative", "negative", "positive", "negative", "negative", "negative", "doubt"]]
    assert C.runs_to_merge(es) == [(0, 2), (3, 6)]
    assert C.runs_to_merge([emo("neutral", "r")]) == []


def test_merge_asks_llm_for_reason_and_unions_source_ids():
    chains = {"1": {"甲": [emo("negative", "被指责", "2"), emo("negative", "被误解", "3", "2"),
                           emo("positive", "和解", "2"), emo("negative", "又吵", "2")]},
              "2": {"乙": [emo("neutral", "a", "1")]}}
    llm = SchemaLLM(lambda req, n: {"reason": "合并后的原因"})
    merged = run(C.merge(Asker(llm), chains))
    assert len(llm.requests) == 1 and llm.batches == [1]
    assert "1. 被指责" in llm.requests[0].messages[-1]["content"] and "2. 被误解" in llm.requests[0].messages[-1]["content"]
    out = merged["1"]["甲"]
    assert [(e.state, e.reason, e.source_ids) for e in out] == [
        ("negative", "合并后的原因", ("2", "3")), ("positive", "和解", ("2",)), ("negative", "又吵", ("2",))]
    assert merged["2"] == chains["2"]
    assert chains["1"]["甲"][0].reason == "被指责"  # the input is not modified


def test_chain_window_uses_sextuple_events_and_json_shape():
    d = dialogue(12)
    prior = [{"input_sentence": s, "holder": h, "event": f"事件{i // 6}", "final_model_response": []}
             for i, (s, h) in enumerate(zip(d.sentences, d.holders))]
    llm = SchemaLLM()
    chains = run(C.window(Asker(llm), d, prior, k=10, s=5))
    enums = [r.schema["properties"]["emotions"]["items"]["properties"]["event"]["enum"] for r in llm.requests]
    assert enums == [["事件0"], ["事件0", "事件1"], ["事件0", "事件1"]]  # events known up to each window's end only
    out = C.to_json(d, chains)
    assert set(out) == {"1", "2"}
    for h in out.values():
        for ev in h["events"]:
            assert set(ev) == {"event", "emotions"}
            for e in ev["emotions"]:
                assert set(e) == {"state", "reason", "source_id"} and e["source_id"] == "1"
    with pytest.raises(ValueError, match="11 records for 12 utterances"):
        run(C.window(Asker(llm), d, prior[:-1]))


def test_chain_direct_one_call_per_holder_dialogue_first():
    d = dialogue(4)
    llm = SchemaLLM()
    out = C.to_json(d, run(C.direct(Asker(llm), d)))
    assert len(llm.requests) == 2 and llm.batches == [2]
    prompts = [r.messages[-1]["content"] for r in llm.requests]
    assert prompts[0].split("请为说话人")[0] == prompts[1].split("请为说话人")[0]  # shared prefix
    assert utter_ids(prompts[0]) == {0, 1, 2, 3}
    src = llm.requests[0].schema["properties"]["events"]["items"]["properties"]["emotions"]["items"]["properties"]
    assert src["source_id"]["enum"] == ["1", "2"]
    assert set(out) == {"1", "2"} and json.dumps(out, ensure_ascii=False)
    emotions = [e for h in out.values() for ev in h["events"] for e in ev["emotions"]]
    assert emotions and all(e["source_id"] == "1" for e in emotions)  # the answer's source id, as it named it


def test_sequential_steps_carry_critical_path_priorities():
    """Each call's priority is minus the calls of its dialogue that wait for it in sequence (vLLM serves lower values
    first): pass-1 windows count down to the pass-2 round, independent calls stay at 0."""
    from benchmarks.refdriver import extract_one
    from emocaustics.tasks.longdialogue.extract.dialogue import ExtractConfig, make_item

    def of(llm, answer_key):  # the calls whose schema answers with `answer_key`
        return [r.priority for r in llm.requests if answer_key in (r.schema or {}).get("properties", {})]

    d = dialogue()  # 23 utterances: sextuple windows K=20 S=5 -> 5; chain windows K=30 S=10 -> 3
    llm = SchemaLLM()
    run(S.window(Asker(llm), d, None, S.WindowSettings(k=20, s=5)))
    assert of(llm, "items") == [-5, -4, -3, -2, -1]  # pass 1
    assert set(of(llm, "sextuples")) == {0} and len(of(llm, "sextuples")) == N  # pass 2

    llm = SchemaLLM()
    run(S.direct(Asker(llm), d))
    assert set(of(llm, "sextuples")) == {0}

    llm = SchemaLLM()  # chains without a prior sextuple run: its 5 windows, then 3 chain windows and the merge
    item = make_item(d.id, list(d.sentences), list(d.holders), ExtractConfig(task="emotion", method="window"),
                     emb=unit_vectors([0] * N))
    row = run(extract_one(llm, item))
    assert row["ok"], row
    assert of(llm, "items") == [-(5 + 4), -(4 + 4), -(3 + 4), -(2 + 4), -(1 + 4)]
    assert set(of(llm, "sextuples")) == {-4}
    assert of(llm, "emotions") == [-3, -2, -1]


def test_chain_answers_accept_the_dialogues_own_long_holder_names():
    """The published data has holders like "speaker 4" (9 characters) and noisy names over 100: an answer naming one
    (the schema's enum allows it) must parse, or every chain window mentioning that holder fails."""
    from emocaustics.tasks.longdialogue.extract import parse as P

    holders = ["speaker 4", "某" * 100]
    schema = P.chain_window_schema(holders, [], 2)
    answer = {"emotions": [{"holder": h, "event": "吵架", "state": "negative", "reason": "被打断", "source_id": h}
                           for h in holders]}
    assert validate_answer(P.ChainWindowAnswer, answer, "").emotions[1].holder == holders[1]
    assert schema["properties"]["emotions"]["items"]["properties"]["holder"]["enum"] == holders
    direct = {"events": [{"event": "吵架", "emotions": [{"state": "negative", "reason": "被打断", "source_id": holders[0]}]}]}
    validate_answer(P.ChainDirectAnswer, direct, "")


def test_window_pass1_reads_only_the_rows_up_to_its_window_end():
    """`decide` reads utterance j and the events' earlier members: a window asks for rows up to its own end, so a long
    dialogue's first windows do not wait for the rest of its embeddings."""
    d = dialogue()
    vecs = unit_vectors(list(range(N)))
    asked: list[int] = []

    async def whole():
        raise AssertionError("window asked for every row of the dialogue")

    async def upto(n):
        asked.append(n)
        return vecs[:n]

    llm = SchemaLLM()
    recs, _ = run(S.window(Asker(llm), d, S.Embeddings(whole, upto), S.WindowSettings(k=20, s=5)))
    assert len(recs) == N
    assert asked and set(asked) <= {5, 10, 15, 20, 23}  # the windows' ends (K=20, S=5 over 23 utterances)
    assert asked == sorted(asked) and asked[0] < N
