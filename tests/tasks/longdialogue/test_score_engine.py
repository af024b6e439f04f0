"""The scoring machinery on hand-built dialogues: failures as rows, embedding once, judge batching/retry/failures,
prediction files (round trip and malformed ones), oracle = 1.0 and baseline below it."""

from __future__ import annotations

import json

import pytest

from emocaustics.tasks.longdialogue.data.schema import Dialogue, Emotion, Event, Sextuple, Utterance
from emocaustics.models.base import ChatRequest, Completion
from emocaustics.tasks.longdialogue.score.judge import Judge
from emocaustics.tasks.longdialogue.score.plan import score_with_ray
from emocaustics.tasks.longdialogue.score.predictions import (
    read_prediction_files,
    write_chain_predictions,
)
from emocaustics.tasks.longdialogue.score.predictors import predict
from tests.fakes.openai_embeddings import FakeEmbeddingsServer
from tests.fakes.sextuple_files import write_candidates


def score_sextuples(dialogues, predictions, **kw):  # the engine in this process, through the one dispatch
    return score_with_ray("sextuple", dialogues, predictions, ray=False, **kw)


def score_chains(dialogues, predictions, **kw):
    return score_with_ray("emotion", dialogues, predictions, ray=False, **kw)


def sx(t, a, o, s, r):
    return Sextuple(target=t, aspect=a, opinion=o, sentiment=s, rationale=r)


def emo(state, reason, src):
    return Emotion(state, reason, (src,), src)


D1 = Dialogue(
    id=1,
    utterances=(
        Utterance(0, "这口服液他坚决不能喝", "1", sx("口服液", "口服液的合理性", "是欺诈行为", "negative", "认为没有效果")),
        Utterance(1, "嗯。", "2", None),
        Utterance(2, "你这是虚伪", "2", sx("1的行为", "教育态度", "认为1虚伪", "negative", "只讲大道理")),
    ),
    chat_files=("chat_1.json",),
    chains={"1": (Event("口服液争执", (emo("negative", "指控口服液为欺诈", "2"), emo("negative", "被指责虚伪", "2"))),),
            "2": (Event("教育分歧", (emo("negative", "批评教育方式", "1"),)),)},
)
D2 = Dialogue(id=2, utterances=(Utterance(0, "好的", "1", sx("", "", "", "", "")), Utterance(1, "不行", "2",
              sx("1", "提议", "反对", "negative", "不同意"))), chat_files=("chat_2.json",),
              chains={"1": (), "2": (Event("反对提议", (emo("negative", "不同意提议", "1"),)),)})
D3 = Dialogue(id=3, utterances=(Utterance(0, "x", "1", None),), chat_files=("chat_3.json",), chains=None)


@pytest.fixture(scope="module")
def embed_server():
    with FakeEmbeddingsServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def embedder(embed_server):
    return f"openai:fake-embed@{embed_server.base_url}"


def test_oracle_scores_one_and_failures_are_rows(embedder):
    preds = predict("oracle", "sextuple", [D1, D2])
    res = score_sextuples([D1, D2, D3], preds, embedder=embedder)
    s = res.summary
    assert s["per_dialogue"]["1"] == 1.0 and s["per_dialogue"]["2"] == 1.0
    assert s["per_dialogue"]["3"] == 0.0 and s["failures"] == [{"dialogue": 3, "reason": "missing prediction"}]
    assert s["score"] == pytest.approx(2 / 3)
    assert s["micro_score"] == pytest.approx(5 / 6)  # 5 of 6 utterances scored full
    assert res.items.height == 5 and set(res.items["dialogue"]) == {1, 2}
    assert s["components"]["sentiment"] == 1.0


def test_length_mismatch_and_malformed_reason(embedder):
    preds = {1: [[D1.utterances[0].gt]], 2: "malformed prediction: output_chat_2.json, record 0: boom"}
    res = score_sextuples([D1, D2], preds, embedder=embedder)
    reasons = {f["dialogue"]: f["reason"] for f in res.summary["failures"]}
    assert "prediction has 1 utterances, ground truth has 3" in reasons[1]
    assert "record 0" in reasons[2]
    assert res.summary["score"] == 0.0


def test_each_distinct_text_embedded_once(embed_server, embedder):
    before = sum(r["n_inputs"] for r in embed_server.requests)
    # a prediction that repeats one text everywhere: many pairs, few distinct texts
    pred = {1: [[sx("t", "同一句话", "同一句话", "negative", "同一句话")], [], [sx("t", "同一句话", "同一句话", "x", "同一句话")]]}
    res = score_sextuples([D1], pred, embedder=embedder)
    sent = sum(r["n_inputs"] for r in embed_server.requests) - before
    assert sent == res.summary["distinct_texts"]
    assert res.summary["texts_requested"] > res.summary["distinct_texts"]
    row = res.items.filter(res.items["utterance"] == 0).row(0, named=True)
    assert 0.0 <= row["aspect_sim"] < 0.8 and row["sentiment_ok"] and row["points"] == 1


def test_baseline_well_below_oracle(embedder):
    ds = [D1, D2]
    for task, fn in (("sextuple", score_sextuples), ("emotion", score_chains)):
        oracle = fn(ds, predict("oracle", task, ds), embedder=embedder).summary["score"]
        base = fn(ds, predict("baseline", task, ds), embedder=embedder).summary["score"]
        assert oracle == 1.0 and base < 0.7, task


def test_chains_no_gt_is_reported_not_scored(embedder):
    res = score_chains([D1, D3], predict("oracle", "emotion", [D1, D3]), embedder=embedder)
    assert res.summary["score"] == 1.0
    assert res.summary["per_dialogue"]["3"] is None
    assert any(f["dialogue"] == 3 and "no usable emotion chains" in f["reason"] for f in res.summary["failures"])


class RuleJudge:
    """Stands in for a remote judge LLM: answers {"same": 1} when both events share their first character.
    `garbage_first` answers nonsense on the first try of those pairs (to exercise the one retry), `always_garbage`
    never answers 0/1."""

    name = "rule-judge"

    def __init__(self, garbage_first=(), always_garbage=()):
        self.calls = []
        self.garbage_first = set(garbage_first)
        self.always_garbage = set(always_garbage)

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        self.calls.append(len(requests))
        out = []
        for r in requests:
            user = r.messages[-1]["content"]
            a = user.split("事件A：")[1].split("\n")[0]
            b = user.split("事件B：")[1].split("\n")[0]
            retry = "注意" in user
            if a in self.always_garbage or (a in self.garbage_first and not retry):
                out.append(Completion(text="我觉得可能吧"))
            else:
                out.append(Completion(text=json.dumps({"same": int(a[0] == b[0])})))
        return out


def chains_pred(event1: str, event2: str):
    return {1: {"1": (Event(event1, D1.chains["1"][0].emotions),), "2": (Event(event2, D1.chains["2"][0].emotions),)}}


def test_judge_batched_retried_and_failures_counted(embedder, monkeypatch):
    import emocaustics.tasks.longdialogue.score.chains as ch
    import emocaustics.tasks.longdialogue.score.policy as pol

    # make every event pair similar enough that the judge decides (the similarity gate is tested elsewhere)
    monkeypatch.setattr(pol.Policy, "chain_rules", ch.ChainRules(event_threshold=-1.0))
    preds = chains_pred("口服液的争执", "另一回事")  # holder 1: judge yes; holder 2: judge no
    llm = RuleJudge(garbage_first={"口服液争执"})
    res = score_chains([D1], preds, embedder=embedder, judge=Judge(llm))
    assert llm.calls == [2, 1]  # one batch for both questions, one retry batch
    assert res.summary["per_dialogue"]["1"] == pytest.approx(0.5)
    assert res.summary["judge_failures"] == 0
    bad = RuleJudge(always_garbage={"口服液争执"})
    zero = score_chains([D1], preds, embedder=embedder, judge=Judge(bad))
    assert zero.summary["judge_failures"] == 1 and zero.summary["per_dialogue"]["1"] == 0.0
    # the judge's own count: questions still not 0/1 after the retry (here one of two)
    assert res.summary["judge_stats"]["failures"] == 0 and zero.summary["judge_stats"]["failures"] == 1
    assert zero.summary["judge_stats"]["asked"] == 2 and zero.summary["judge_stats"]["retried"] == 1
    uns = score_chains([D1], preds, embedder=embedder, judge=Judge(RuleJudge(always_garbage={"口服液争执"})),
                       on_judge_error="unscored")
    # holder 1 leaves the denominator, holder 2 (judge no) scores 0
    assert uns.summary["judge_failures"] == 1 and uns.summary["per_dialogue"]["1"] == 0.0
    assert uns.dialogues.row(0, named=True)["weight"] == 1.0


def test_prediction_files_round_trip(tmp_path, embedder):
    preds = predict("oracle", "sextuple", [D1])
    write_candidates(tmp_path, 1, D1, preds[1])
    write_chain_predictions(tmp_path, 1, D1.chains)
    (tmp_path / "notes.txt").write_text("x")
    sp = read_prediction_files(tmp_path, "sextuple")
    assert sp.predictions[1] == preds[1] and "notes.txt" in sp.ignored
    cp = read_prediction_files(tmp_path, "emotion")
    assert score_chains([D1], cp.predictions, embedder=embedder).summary["score"] == 1.0


def test_malformed_prediction_files_are_failures(tmp_path):
    (tmp_path / "output_chat_1.json").write_text('[{"input_sentence": "a", "final_model_response": [', "utf-8")
    (tmp_path / "output_chat_2.json").write_text(json.dumps([{"input_sentence": "a"}]), "utf-8")
    (tmp_path / "output_chat_3.json").write_text(json.dumps([{"final_model_response": [{"opinion": 3}]}]), "utf-8")
    (tmp_path / "output_chat_4.json").write_text(json.dumps([{"final_model_response": {"Opinion": "x"}}]), "utf-8")
    (tmp_path / "chat_4.json").write_text("[]", "utf-8")
    p = read_prediction_files(tmp_path, "sextuple").predictions
    assert "output_chat_1.json" in p[1] and "line 1" in p[1]
    assert "record 0" in p[2] and "final_model_response" in p[2]
    assert "'opinion'" in p[3] and "int" in p[3]
    assert "two prediction files for dialogue 4" in p[4]
