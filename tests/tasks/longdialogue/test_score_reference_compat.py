"""`--compat reference`: worked examples of every rule of the published scoring scripts (get_quadruples_score.py,
get_emo_score.py), with exact numbers, through a stand-in embedder whose cosines are chosen by hand and a stand-in
judge that answers from a table (the reference's own prompt and answer format)."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from emocaustics.models.base import ChatRequest, Completion
from emocaustics.tasks.longdialogue.data.schema import Dialogue, Emotion, Event, Sextuple, Utterance
from emocaustics.tasks.longdialogue.score.plan import score_with_ray
from emocaustics.tasks.longdialogue.score.prompts import REFERENCE_CHAIN_SYSTEM, REFERENCE_SEXTUPLE_SYSTEM
from emocaustics.tasks.longdialogue.score.reference import RawPrediction


def score_sextuples(dialogues, predictions, **kw):  # the engine in this process, through the one dispatch
    return score_with_ray("sextuple", dialogues, predictions, ray=False, **kw)


def score_chains(dialogues, predictions, **kw):
    return score_with_ray("emotion", dialogues, predictions, ray=False, **kw)


class AxisEmbedder:
    """Ground-truth texts lie on their own axes; a predicted text has the cosines given for it with those texts and
    the rest of its length on a private axis; any other text is orthogonal to everything else. An `alias` embeds
    exactly as another text (an exact tie)."""

    name = "axis-embedder"

    def __init__(self, gt: list[str], pred: dict[str, dict[str, float]], alias: dict[str, str] | None = None) -> None:
        self.alias = alias or {}
        self.gt = {t: i for i, t in enumerate(gt)}
        self.pred = pred
        self.private: dict[str, int] = {}
        self.dim = 64

    def vector(self, text: str) -> np.ndarray:
        text = self.alias.get(text, text)
        v = np.zeros(self.dim, dtype=np.float32)
        if text in self.gt:
            v[self.gt[text]] = 1.0
            return v
        axis = len(self.gt) + self.private.setdefault(text, len(self.private))
        rest = 1.0
        for g, c in self.pred.get(text, {}).items():
            v[self.gt[g]] = c
            rest -= c * c
        v[axis] = math.sqrt(max(rest, 0.0))
        return v

    async def embed(self, texts: list[str]) -> np.ndarray:
        if "" in texts:  # as an embeddings API does: the reference sends " " for an empty text
            raise ValueError("empty input")
        return np.stack([self.vector(t) for t in texts])


class TableJudge:
    """Answers the reference's question from a table keyed by (text A, text B); "0" when not listed."""

    name = "table-judge"

    def __init__(self, table: dict[tuple[str, str], str]) -> None:
        self.table = table
        self.requests: list[ChatRequest] = []

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        self.requests += requests
        out = []
        for r in requests:
            m = re.fullmatch(r"文本A: (.*)\n文本B: (.*)\n请判断是否相似\(0或1\):", r.messages[1]["content"], re.S)
            assert m, r.messages[1]["content"]
            out.append(Completion(text=self.table.get((m.group(1), m.group(2)), "0")))
        return out

    def asked(self) -> list[tuple[str, str]]:
        return [tuple(re.findall(r"文本[AB]: (.*)", r.messages[1]["content"])) for r in self.requests]  # type: ignore[misc]


# ------------------------------------------------------------------------------------------------------- sextuples

def sx(t, a, o, s, r):
    return Sextuple(target=t, aspect=a, opinion=o, sentiment=s, rationale=r)


SX_DIALOGUE = Dialogue(id=1, utterances=(
    Utterance(0, "s0", "1", sx("T", "A", "O", "negative", "R")),
    Utterance(1, "s1", "2", None),
    Utterance(2, "s2", "1", sx("T2", "", "O2", "positive", "R2")),
), chat_files=("chat_1.json",))

SX_EMBEDDER = AxisEmbedder(["T", "A", "O", "R", "T2", "O2", "R2", " "],
                           {"Ta": {"T": 0.6}, "Tb": {"T": 0.8}, "Ab": {"A": 0.3}, "Ob": {"O": -0.5}})

CAND_B = {"target": "Tb", "aspect": "Ab", "opinion": "Ob", "sentiment": "negative", "rationale": ""}
SX_PRED = RawPrediction([
    {"final_model_response": [
        # three spec points (aspect/opinion/rationale identical) but a weaker target: the reference passes it over
        {"target": "Ta", "aspect": "A", "opinions": "O", "Opinion": "not read", "Sentiment": "Negative",
         "Rationale": "R"},
        CAND_B,
        dict(CAND_B),  # equal to the one before: the first of equals is kept
    ]},
    {"final_model_response": {}},  # one empty candidate: every field " " against the empty ground truth's " "
    {"final_model_response": "not a list"},  # read as no candidate: one empty candidate
    {"final_model_response": []},  # beyond the ground truth's length: not scored
], "output_chat_1.json")

SX_JUDGE = {("T", "Tb"): "1", ("A", "Ab"): " 1 ", ("O", "Ob"): "1.0", ("R", ""): "2", ("", ""): "1"}


def test_sextuple_reference_metrics_worked_example():
    judge = TableJudge(SX_JUDGE)
    res = score_sextuples([SX_DIALOGUE], {1: SX_PRED}, embedder=SX_EMBEDDER, judge=judge, compat="reference")
    c = res.summary["components"]
    # scheme1, per line (target, aspect, opinion, rationale, sentiment):
    #   line 0 chooses candidate 1 by target cosine 0.8: (0.8, 0.3, -0.5, 0 [" " vs "R"], 1);
    #   line 1 empty vs empty: (1, 1, 1, 1, 1 ["" == ""]); line 2 empty candidate: (0, 1 [" " vs " "], 0, 0, 0)
    assert c["scheme1_avg_target_similarity"] == pytest.approx(1.8 / 3, abs=1e-6)
    assert c["scheme1_avg_aspect_similarity"] == pytest.approx(2.3 / 3, abs=1e-6)
    assert c["scheme1_avg_opinion_similarity"] == pytest.approx(0.5 / 3, abs=1e-6)
    assert c["scheme1_avg_rationale_similarity"] == pytest.approx(1 / 3, abs=1e-6)
    assert c["scheme1_avg_sentiment_correct"] == 2 / 3  # "Negative" would not have matched "negative"
    # scheme2 (judge): line 0: "1", " 1 " -> 1; "1.0" (not an integer) -> 0; "2" -> 0; line 1: 1,1,1,1; line 2: 0,1,0,0
    assert c["scheme2_avg_target_similarity"] == 2 / 3
    assert c["scheme2_avg_aspect_similarity"] == 1.0
    assert c["scheme2_avg_opinion_similarity"] == 1 / 3
    assert c["scheme2_avg_rationale_similarity"] == 1 / 3
    assert c["scheme2_avg_sentiment_correct"] == 2 / 3
    assert res.summary["judge_failures"] == 1  # "1.0": counted 0, as the script's bare except does
    items = res.items.sort("utterance")
    assert items["chosen"].to_list() == [1, 0, 0]
    assert items["pred_opinion"].to_list()[0] == "Ob"
    row = res.dialogues.row(0, named=True)
    assert row["weight"] == 3.0 and "the first 3 are scored" in row["reason"]
    assert row["score"] == pytest.approx((1.8 + 2.3 + 0.5 + 1 + 2) / 3 / 5, abs=1e-6)
    # the reference's own prompt, and only the chosen candidate's four fields asked
    first = judge.requests[0].messages
    assert first[0]["content"] == REFERENCE_SEXTUPLE_SYSTEM and first[1]["content"].startswith("文本A: T\n文本B: Tb\n")
    assert judge.requests[0].schema is None
    assert set(judge.asked()) == {("T", "Tb"), ("A", "Ab"), ("O", "Ob"), ("R", ""), ("", ""), ("T2", ""), ("O2", ""),
                                  ("R2", "")}


def test_sextuple_reference_spec_mode_keeps_its_rules():
    parsed = [[sx("Ta", "A", "O", "Negative", "R"), sx("Tb", "Ab", "Ob", "negative", "")], [], []]
    spec = score_sextuples([SX_DIALOGUE], {1: parsed}, embedder=SX_EMBEDDER)
    assert spec.summary["per_dialogue"]["1"] == pytest.approx(8 / 12)  # candidate 0: 4 points by spec
    ref = score_sextuples([SX_DIALOGUE], {1: parsed}, embedder=SX_EMBEDDER, compat="reference")
    assert ref.items.sort("utterance")["chosen"].to_list() == [1, 0, 0]
    assert ref.summary["components"]["scheme2_avg_target_similarity"] is None  # no judge: scheme2 not computed


def test_sextuple_reference_failures_are_named_and_left_out_of_the_averages():
    other = Dialogue(id=2, utterances=SX_DIALOGUE.utterances[:1], chat_files=("chat_2.json",))
    missing = Dialogue(id=3, utterances=SX_DIALOGUE.utterances[:1], chat_files=("chat_3.json",))
    preds = {1: SX_PRED, 2: RawPrediction(["not an object"], "output_chat_2.json")}
    res = score_sextuples([SX_DIALOGUE, other, missing], preds, embedder=SX_EMBEDDER, compat="reference")
    reasons = {f["dialogue"]: f["reason"] for f in res.summary["failures"]}
    assert "output_chat_2.json, record 0" in reasons[2] and "the reference raises" in reasons[2]
    assert reasons[3] == "missing prediction"
    assert res.summary["components"]["scheme1_avg_target_similarity"] == pytest.approx(1.8 / 3, abs=1e-6)
    # the mean counts the two failures 0; the micro-average weighs by scored lines, so they (weight 0) drop out of it
    s1 = res.summary["per_dialogue"]["1"]
    assert s1 > 0 and res.summary["score"] == pytest.approx(s1 / 3) and res.summary["micro_score"] == pytest.approx(s1)


def test_sextuple_reference_reads_only_its_keys_and_compares_sentiment_exactly():
    gt = Dialogue(id=4, utterances=(Utterance(0, "s", "1", sx("T", "A", "O", "negative", "R")),),
                  chat_files=("chat_4.json",))
    cand = {"TARGET": "T", "Aspect": "A", "Opinion": "O", "opinions": "Ob", "sentiment": "Negative ",
            "Rationale": "R", "rationale": None}
    res = score_sextuples([gt], {4: RawPrediction([{"final_model_response": cand}], "output_chat_4.json")},
                          embedder=SX_EMBEDDER, compat="reference")
    row = res.items.row(0, named=True)
    # TARGET is no key of theirs (read ""), Opinion neither ("opinions" is), rationale null wins over Rationale
    assert (row["pred_target"], row["pred_opinion"], row["pred_rationale"]) == ("", "Ob", "null")
    assert row["target_similarity"] == 0.0 and row["opinion_similarity"] == pytest.approx(-0.5, abs=1e-6)
    assert row["rationale_similarity"] == 0.0 and row["aspect_similarity"] == 1.0
    assert row["sentiment_correct"] == 0  # "Negative " vs "negative": no trimming, no case folding


# ---------------------------------------------------------------------------------------------------------- chains

def em(state, reason, src):
    return Emotion(state, reason, (), src)


CH_GT = {
    "1": (Event("吵架", (em("negative", "R0", "2"), em("doubt", "R1", "2"))), Event("和好", ())),
    "3": (),  # no events: not in the denominator
    "4": (Event("出门", (Emotion("doubt", "R3", ("2", "3"), "2，3"),)),),
    "5": (Event("上班", (em("negative", "R4", "1"),)),),
}
CH_DIALOGUE = Dialogue(id=7, utterances=(Utterance(0, "x", "1"),), chat_files=("chat_7.json",), chains=CH_GT)
CH_PRED = RawPrediction({
    "1": {"events": [
        {"event": "P0", "emotions": [{"state": "Negative", "reason": "r0a", "source_id": 2},
                                     {"state": "negative", "reason": "r0b", "source_id": "2"}]},
        {"event": "P1", "emotions": [{"state": "doubt", "reason": "r1", "source_id": 2}]},
    ]},
    "4": {"events": [{"event": "出门", "emotions": [{"state": "doubt", "reason": "r3", "source_id": 3.0}]}]},
    "5": {"events": [{"event": "上班", "emotions": [{"state": "negative", "reason": "R4", "source_id": "1"}]}]},
}, "output_emotions_7.json")
CH_EMBEDDER = AxisEmbedder(
    ["吵架", "和好", "R0", "R1", "R3", "出门", "上班", "R4"],
    {"P0": {"吵架": 0.25, "和好": -0.3},  # below 0.3 for 吵架, below 0 for 和好
     "r0a": {"R0": 0.9, "R1": -0.2}, "r1": {"R0": 0.6, "R1": 0.6}, "r3": {"R3": 0.5}},
    alias={"P1": "P0", "r0b": "r0a"})  # exact ties
CH_JUDGE = {("吵架", "P0"): "1", ("R0", "r0a"): "1", ("R4", "R4"): "1", ("吵架", "P1"): "1"}


def test_chain_reference_rates_worked_example():
    judge = TableJudge(CH_JUDGE)
    res = score_chains([CH_DIALOGUE], {7: CH_PRED}, embedder=CH_EMBEDDER, judge=judge, compat="reference")
    # holder 1 (events worth 1/2): 吵架 takes P0 (tie with P1 at 0.25: the first), below 0.3 but the judge says 1;
    #   emotion R0 (worth 1/4) takes r0a (tie with r0b at 0.9: the first): judge 1, state "Negative" != "negative",
    #   source 2 (an int) in {2}; emotion R1: no cosine above 0 (-0.2) -> nothing; 和好 (no emotions): no
    #   predicted event above 0 (-0.3) -> unmatched, worth nothing, still 1/2 of the denominator.
    # holder 4: identical event; r3 at 0.5, judge 0 -> no reason points; state equal; 3.0 in {2, 3} ("2，3").
    # holder 5: identical reason, judge 1 -> reason 1 and cosine 1; state equal; the string "1" is not in {1}.
    # totals / 3 holders: state 2, source 1.25, reason-judge 1.25, reason-embed 0.9/4 + 1 = 1.225
    c = res.summary["components"]
    assert c == {"total_state_score_percentage": 66.67, "total_source_id_score_percentage": 41.67,
                 "total_reason_llm_score_percentage": 41.67, "total_reason_embed_score_percentage": 40.83}
    assert res.summary["per_dialogue"]["7"] == pytest.approx((66.67 + 41.67) / 200)
    asked = set(judge.asked())
    assert ("吵架", "P0") in asked and ("吵架", "P1") not in asked  # only the chosen event is asked about
    assert not any(a == "和好" for a, _ in asked)  # no candidate above 0: the judge is not asked
    assert ("R1", "r0b") not in asked and ("R3", "r3") in asked and ("出门", "出门") in asked
    assert judge.requests[0].messages[0]["content"] == REFERENCE_CHAIN_SYSTEM
    rows = res.items.filter(res.items["holder"] == "1").sort(["event_index", "emotion_index"])
    assert rows["pred_source"].to_list()[0] == "2" and rows["source_id_score"].to_list() == [1, 0, 0]
    assert rows["weight"].to_list() == [0.25, 0.25, 0.0]


def test_chain_reference_empty_texts_are_embedded_as_a_space():
    gt = {"1": (Event("", (em("negative", "", "1"),)),)}
    d = Dialogue(id=12, utterances=(Utterance(0, "x", "1"),), chat_files=("chat_12.json",), chains=gt)
    pred = RawPrediction({"1": {"events": [{"event": "", "emotions": [
        {"state": "negative", "reason": "", "source_id": 1}]}]}}, "output_emotions_12.json")
    res = score_chains([d], {12: pred}, embedder=CH_EMBEDDER, judge=TableJudge({("", ""): "1"}), compat="reference")
    # " " against " ": cosine 1, so the empty event and the empty reason match; every rate is full
    assert res.summary["components"] == dict.fromkeys(
        ["total_state_score_percentage", "total_source_id_score_percentage", "total_reason_llm_score_percentage",
         "total_reason_embed_score_percentage"], 100.0)


def test_chain_reference_without_judge():
    res = score_chains([CH_DIALOGUE], {7: CH_PRED}, embedder=CH_EMBEDDER, compat="reference")
    c = res.summary["components"]  # 吵架 at 0.25 no longer matches; holders 4 and 5: state 1, source 1 and 0
    assert c["total_state_score_percentage"] == 66.67 and c["total_source_id_score_percentage"] == 33.33
    assert c["total_reason_llm_score_percentage"] is None and c["total_reason_embed_score_percentage"] is None


def test_chain_reference_crashes_fail_the_dialogue_by_name():
    self_gt = {"1": (Event("出门", (em("negative", "R3", "self"),)),)}
    d_self = Dialogue(id=8, utterances=(Utterance(0, "x", "1"),), chat_files=("chat_8.json",), chains=self_gt)
    p_self = RawPrediction({"1": {"events": [{"event": "出门", "emotions": [
        {"state": "negative", "reason": "r3", "source_id": 1}]}]}}, "output_emotions_8.json")
    # the same "self", but no predicted reason above cosine 0: the reference never reads the id and finishes
    d_quiet = Dialogue(id=9, utterances=(Utterance(0, "x", "1"),), chat_files=("chat_9.json",), chains=self_gt)
    p_quiet = RawPrediction({"1": {"events": [{"event": "出门", "emotions": [
        {"state": "negative", "reason": "无关", "source_id": 1}]}]}}, "output_emotions_9.json")
    d_judge = Dialogue(id=10, utterances=(Utterance(0, "x", "1"),), chat_files=("chat_10.json",),
                       chains={"1": (Event("吵架", ()),)})
    p_judge = RawPrediction({"1": {"events": [{"event": "P0", "emotions": []}]}}, "output_emotions_10.json")
    judge = TableJudge({("吵架", "P0"): "是的"})
    res = score_chains([d_self, d_quiet, d_judge], {8: p_self, 9: p_quiet, 10: p_judge}, embedder=CH_EMBEDDER,
                       judge=judge, compat="reference")
    reasons = {f["dialogue"]: f["reason"] for f in res.summary["failures"]}
    assert "source_id 'self'" in reasons[8] and "holder 1 event 0 emotion 0" in reasons[8]
    assert "'是的' is not an integer" in reasons[10]
    assert 9 not in reasons and res.summary["per_dialogue"]["9"] == 0.0
    assert res.summary["per_dialogue"]["8"] == 0.0 and res.dialogues.filter(
        res.dialogues["dialogue"] == 8)["failed"].item()


def test_chain_reference_spec_mode_keeps_its_rules():
    parsed = {"4": (Event("出门", (Emotion("Doubt ", "R3", ("3",), "3"),)),)}
    d = Dialogue(id=11, utterances=(Utterance(0, "x", "4"),), chat_files=("chat_11.json",),
                 chains={"4": CH_GT["4"]})
    spec = score_chains([d], {11: parsed}, embedder=CH_EMBEDDER)
    assert spec.summary["per_dialogue"]["11"] == 1.0  # state trimmed/lower-cased, "3" among "2，3", identical reason
    ref = score_chains([d], {11: parsed}, embedder=CH_EMBEDDER, compat="reference")
    # the reference reads our file: "Doubt " != "doubt", and the string "3" is never in a set of ints
    assert ref.summary["components"]["total_state_score_percentage"] == 0.0
    assert ref.summary["components"]["total_source_id_score_percentage"] == 0.0


def test_reference_mode_reads_prediction_files_as_they_are(tmp_path):
    from emocaustics.tasks.longdialogue.score.predictions import read_prediction_files

    obj = {"1": {"events": [{"event": "出门", "emotions": [{"state": "doubt", "reason": "r3", "source_id": 3.0}]}]}}
    (tmp_path / "output_emotions_7.json").write_text(json.dumps(obj), encoding="utf-8")
    (tmp_path / "output_emotions_8.json").write_text("{not json", encoding="utf-8")
    ps = read_prediction_files(tmp_path, "emotion", raw=True)
    assert ps.predictions[7] == RawPrediction(obj, "output_emotions_7.json")  # 3.0 stays a float
    assert isinstance(ps.predictions[7].obj["1"]["events"][0]["emotions"][0]["source_id"], float)
    assert ps.predictions[8].startswith("unreadable prediction file")


def test_reference_mode_judge_none_spec_means_no_judge():
    res = score_chains([CH_DIALOGUE], {7: CH_PRED}, embedder=CH_EMBEDDER, judge="none", compat="reference")
    assert res.summary["judge"] == "none" and res.summary["components"]["total_state_score_percentage"] == 66.67
