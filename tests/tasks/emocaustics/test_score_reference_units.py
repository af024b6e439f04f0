"""`--compat reference` building blocks, one function at a time, with exact numbers and exact messages (issue 29:
mutation survivors of refjudge, refsextuple and refchains). The end-to-end worked examples are in
test_score_reference_compat.py."""

from __future__ import annotations

import asyncio

import pytest

from emocaustics.models.base import Completion
from emocaustics.tasks.emocaustics.score.prompts import REFERENCE_CHAIN_SYSTEM, REFERENCE_SEXTUPLE_SYSTEM
from emocaustics.tasks.emocaustics.score.refjudge import (
    Answer,
    ReferenceCrash,
    ReferenceJudge,
    answer_value,
    answer_value_or_zero,
    as_question_text,
)

# ------------------------------------------------------------------------------------------------------- refjudge


def test_question_text_is_the_f_string_of_the_value():
    assert [as_question_text(v) for v in (None, 2.0, 3, "x", "")] == ["None", "2.0", "3", "x", ""]


def test_answer_value_reads_integers_as_int_does():
    # int() accepts surrounding spaces and a sign; only the value 1 means "similar"
    assert [answer_value(Answer(t), "w") for t in ("1", " 1\n", "+1", "01", "0", "2", "-1")] == [1, 1, 1, 1, 0, 0, 0]


def test_answer_value_failures_say_where_and_why():
    with pytest.raises(ReferenceCrash) as exc:
        answer_value(Answer("1.0"), "holder 1 event 0")
    assert str(exc.value) == ("holder 1 event 0: judge answer '1.0' is not an integer; the reference's int() raises "
                              "here")
    long = "是" * 100  # only the first 80 characters are quoted
    with pytest.raises(ReferenceCrash) as exc:
        answer_value(Answer(long), "w")
    assert str(exc.value) == f"w: judge answer {'是' * 80!r} is not an integer; the reference's int() raises here"
    with pytest.raises(ReferenceCrash) as exc:
        answer_value(Answer(None, "timeout"), "w")
    assert str(exc.value) == "w: the judge call failed (timeout); the reference stops here"
    with pytest.raises(ReferenceCrash) as exc:
        answer_value(Answer(None), "w")
    assert str(exc.value) == "w: the judge call failed (no answer); the reference stops here"
    with pytest.raises(ReferenceCrash) as exc:  # an error wins over a text that would read as 1
        answer_value(Answer("1", "late"), "w")
    assert str(exc.value) == "w: the judge call failed (late); the reference stops here"


def test_answer_value_or_zero_counts_every_failure_as_zero():
    answers = (Answer("1"), Answer(" 1 "), Answer("2"), Answer("1.0"), Answer(None, "e"), Answer("1", "e"))
    assert [answer_value_or_zero(a) for a in answers] == [1, 1, 0, 0, 0, 0]


class ListLLM:
    """Answers each request with the next completion of a list; records the requests of every call."""

    name = "list-llm"

    def __init__(self, completions: list[Completion]) -> None:
        self.completions = completions
        self.calls: list[list] = []

    async def generate(self, requests):
        self.calls.append(list(requests))
        out, self.completions = self.completions[:len(requests)], self.completions[len(requests):]
        return out


def test_reference_judge_asks_each_question_once_per_task():
    llm = ListLLM([Completion("1"), Completion("", error="boom"), Completion("0")])
    judge = ReferenceJudge(llm)
    assert judge.name == "list-llm" and judge.asked == 0 and judge.cache == {}
    got = asyncio.run(judge.answers("sextuple", [("A", "a"), ("B", "b"), ("A", "a")]))
    # duplicates asked once; a failed call keeps no text and names its error
    assert got == {("A", "a"): Answer("1"), ("B", "b"): Answer(None, "boom")}
    assert list(got) == [("A", "a"), ("B", "b")] and judge.asked == 2 and len(llm.calls) == 1
    req = llm.calls[0][0]
    assert req.messages == ({"role": "system", "content": REFERENCE_SEXTUPLE_SYSTEM},
                            {"role": "user", "content": "文本A: A\n文本B: a\n请判断是否相似(0或1):"})
    assert req.schema is None and req.sampling.temperature == 0.0 and req.sampling.seed is None
    assert llm.calls[0][1].messages[1]["content"] == "文本A: B\n文本B: b\n请判断是否相似(0或1):"
    # cached: nothing new asked; the same question under the chain task is a new question with the chain prompt
    again = asyncio.run(judge.answers("sextuple", [("B", "b")]))
    assert again == {("B", "b"): Answer(None, "boom")} and len(llm.calls) == 1 and judge.asked == 2
    chain = asyncio.run(judge.answers("chain", [("A", "a")]))
    assert chain == {("A", "a"): Answer("0")} and judge.asked == 3 and len(llm.calls) == 2
    assert llm.calls[1][0].messages[0]["content"] == REFERENCE_CHAIN_SYSTEM
    assert set(judge.cache) == {("sextuple", ("A", "a")), ("sextuple", ("B", "b")), ("chain", ("A", "a"))}


# ---------------------------------------------------------------------------------------------------- refsextuple

from emocaustics.tasks.emocaustics.data.schema import Sextuple, Utterance  # noqa: E402
from emocaustics.tasks.emocaustics.score import refsextuple as rs  # noqa: E402

EMPTY_CAND = {"target": "", "aspect": "", "opinion": "", "sentiment": "", "rationale": ""}


def test_sextuple_embed_text_spaces_falsy_values_and_refuses_non_text():
    assert [rs.embed_text(v, "w") for v in (None, "", 0, False, [], "x")] == [" ", " ", " ", " ", " ", "x"]
    with pytest.raises(ReferenceCrash) as exc:
        rs.embed_text(5, "f, field target")
    assert str(exc.value) == "f, field target: int 5 is not text; the embeddings API refuses it"


def test_sextuple_gt_records_use_the_chat_file_keys():
    utts = [Utterance(0, "s", "1", Sextuple("t", "a", "o", "negative", "r")), Utterance(1, "s", "2", None)]
    assert rs.gt_records(utts) == [
        {"Target": "t", "Aspect": "a", "Opinion": "o", "Sentiment": "negative", "Rationale": "r"},
        {"Target": "", "Aspect": "", "Opinion": "", "Sentiment": "", "Rationale": ""}]


def test_sextuple_prediction_lines_shapes_and_keys():
    for empty in ({}, "", []):
        assert rs.prediction_lines(empty, "f") == []
    pred = [
        {"final_model_response": {"Target": "T", "target": "t", "Aspect": "A", "Opinion": "no", "opinions": None,
                                  "Sentiment": "S", "Rationale": "R"}},
        {"final_model_response": [{"opinion": "o", "sentiment": "s"}, {"aspect": "a", "rationale": "r"}]},
        {"final_model_response": []}, {"final_model_response": "text"}, {},
    ]
    assert rs.prediction_lines(pred, "f") == [
        [{"target": "t", "aspect": "A", "opinion": None, "sentiment": "S", "rationale": "R"}],
        [{**EMPTY_CAND, "opinion": "o", "sentiment": "s"}, {**EMPTY_CAND, "aspect": "a", "rationale": "r"}],
        [EMPTY_CAND], [EMPTY_CAND], [EMPTY_CAND]]


@pytest.mark.parametrize(("pred", "message"), [
    ({"a": 1}, "f: top level is dict; the reference indexes it as a list"),
    ("abc", "f: top level is str; the reference indexes it as a list"),
    (5, "f: top level is int; the reference indexes it as a list"),
    ([{}, 7], "f, record 1: int, the reference calls .get on it"),
    ([{}, {"final_model_response": [{}, "x"]}], "f, record 1, candidate 1: str, not an object"),
])
def test_sextuple_prediction_lines_crash_where_the_reference_does(pred, message):
    with pytest.raises(ReferenceCrash) as exc:
        rs.prediction_lines(pred, "f")
    assert str(exc.value) == message


GT_REC = {"Target": "T", "Aspect": "A", "Opinion": "", "Sentiment": "negative", "Rationale": "R"}


def test_sextuple_needed_pairs_every_candidate_in_order():
    lines = [[{**EMPTY_CAND, "target": "t1", "aspect": "A"}, {**EMPTY_CAND, "opinion": "o2"}]]
    # (gt, pred) per field target, aspect, opinion, rationale; falsy values become " "; only min(len) lines
    assert rs.needed_pairs([GT_REC, GT_REC], lines, "f") == [
        ("T", "t1"), ("A", "A"), (" ", " "), ("R", " "),
        ("T", " "), ("A", " "), (" ", "o2"), ("R", " ")]
    with pytest.raises(ReferenceCrash) as exc:
        rs.needed_pairs([GT_REC], [[EMPTY_CAND, {**EMPTY_CAND, "rationale": 3}]], "f")
    assert str(exc.value) == "f, record 0, candidate 1, field rationale: int 3 is not text; the embeddings API refuses it"
    with pytest.raises(ReferenceCrash) as exc:
        rs.needed_pairs([{**GT_REC, "Aspect": 1.5}], [[EMPTY_CAND]], "f")
    assert str(exc.value) == ("f, record 0, candidate 0, ground truth Aspect: float 1.5 is not text; the embeddings "
                              "API refuses it")


def key_sim(table):
    """Cosine from a table keyed by (gt, pred); unknown pairs 0.0."""
    return lambda a, b: table.get((a, b), 0.0)


def test_sextuple_choose_orders_target_aspect_sentiment_opinion_rationale():
    base = {**EMPTY_CAND, "sentiment": "neg"}
    gt = {**GT_REC, "Sentiment": "negative", "Opinion": "O"}
    sims = {("T", "t"): 0.5, ("A", "a1"): 0.4, ("A", "a2"): 0.4, ("O", "o1"): 0.9, ("O", "o2"): 0.2,
            ("R", "r"): 0.3, ("T", "t9"): 0.51}
    c0 = {**base, "target": "t", "aspect": "a1", "opinion": "o1"}  # (0.5, 0.4, 0, 0.9, 0)
    c1 = {**base, "target": "t", "aspect": "a2", "opinion": "o2", "sentiment": "negative"}  # (0.5, 0.4, 1, 0.2, 0)
    c2 = {**c1, "rationale": "r"}  # (0.5, 0.4, 1, 0.2, 0.3): the rationale decides between c1 and c2
    c3 = dict(c2)  # equal to c2: the first of equals stays
    line = rs.choose(gt, [c0, c1, c2, c3], key_sim(sims), 4, "f")
    assert (line.index, line.n_candidates, line.chosen, line.sentiment_correct, line.judged) == (4, 4, 2, 1, None)
    assert line.sims == {"target": 0.5, "aspect": 0.4, "opinion": 0.2, "rationale": 0.3}
    assert line.gt is gt and line.pred is c2
    # the opinion decides when sentiment ties; the target beats everything else
    assert rs.choose(gt, [c1, {**c1, "opinion": "o1"}], key_sim(sims), 0, "f").chosen == 1
    assert rs.choose(gt, [c2, {**c0, "target": "t9"}], key_sim(sims), 0, "f").chosen == 1
    assert rs.choose(gt, [{**c0, "aspect": ""}, c0], key_sim(sims), 0, "f").chosen == 1  # aspect 0.4 > 0.0


def test_sextuple_score_file_and_means_with_a_judge():
    gt = [GT_REC, {**GT_REC, "Sentiment": "positive"}, GT_REC]
    pred = [{"final_model_response": {"target": "t", "aspect": "A", "sentiment": "negative", "rationale": "R"}},
            {"final_model_response": {"target": "T", "sentiment": "negative"}}]
    sims = {("T", "t"): 0.6, ("A", "A"): 1.0, (" ", " "): 1.0, ("R", "R"): 1.0, ("T", "T"): 1.0}
    answers = {("T", "t"): Answer("1"), ("A", "A"): Answer("1"), ("", ""): Answer("x"), ("R", "R"): Answer("0"),
               ("T", "T"): Answer("1"), ("A", ""): Answer(None, "e"), ("R", ""): Answer("1")}
    plain = rs.score_file(gt, pred, key_sim(sims), None, "f")
    assert [ln.judged for ln in plain] == [None, None] and len(plain) == 2  # the third gt line has no prediction
    lines = rs.score_file(gt, pred, key_sim(sims), answers, "f")
    # line 0: T/t "1", A/A "1", ""/"" "x" -> 0, R/R "0"; line 1: T/T "1", A/"" failed -> 0, ""/"" 0, R/"" "1"
    assert [ln.judged for ln in lines] == [{"target": 1, "aspect": 1, "opinion": 0, "rationale": 0},
                                           {"target": 1, "aspect": 0, "opinion": 0, "rationale": 1}]
    assert [(ln.index, ln.chosen, ln.sentiment_correct) for ln in lines] == [(0, 0, 1), (1, 0, 0)]
    assert lines[1].sims == {"target": 1.0, "aspect": 0.0, "opinion": 1.0, "rationale": 0.0}
    assert rs.judge_questions(lines[:1]) == [("T", "t"), ("A", "A"), ("", ""), ("R", "R")]
    means = rs.file_means(lines, judged=True)
    # scheme1: target (0.6 + 1) / 2, aspect (1 + 0) / 2, opinion (1 + 1) / 2, rationale (1 + 0) / 2, sentiment 1/2
    assert means == {"scheme1_avg_target_similarity": 0.8, "scheme1_avg_aspect_similarity": 0.5,
                     "scheme1_avg_opinion_similarity": 1.0, "scheme1_avg_rationale_similarity": 0.5,
                     "scheme1_avg_sentiment_correct": 0.5,
                     "scheme2_avg_target_similarity": 1.0, "scheme2_avg_aspect_similarity": 0.5,
                     "scheme2_avg_opinion_similarity": 0.0, "scheme2_avg_rationale_similarity": 0.5,
                     "scheme2_avg_sentiment_correct": 0.5}
    assert list(means)[:5] == [f"scheme1_{m}" for m in rs.METRICS] and tuple(means) == rs.COLUMNS
    no_judge = rs.file_means(plain, judged=False)
    assert no_judge["scheme1_avg_target_similarity"] == 0.8 and no_judge["scheme2_avg_target_similarity"] is None
    assert no_judge["scheme2_avg_sentiment_correct"] is None
    assert rs.file_means([], judged=True) == dict.fromkeys(rs.COLUMNS, 0.0)  # a file with no line: 0.0
