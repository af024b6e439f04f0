"""Sextuple rules with injected similarities: every rule of the spec, by hand-built cases."""

from __future__ import annotations

import pytest

from emocaustics.tasks.longdialogue.data.schema import Sextuple, Utterance
from emocaustics.tasks.longdialogue.score.sextuple import (
    LengthMismatch,
    dialogue_points,
    pairs_needed,
    score_dialogue_sextuples,
    score_utterance,
    text_sim,
)


def table_sim(pairs):
    def sim(a, b):
        return pairs.get((a, b), pairs.get((b, a), 0.0))

    return sim


GT = Sextuple(target="t", aspect="a", opinion="o", sentiment="negative", rationale="r")
U = Utterance(index=0, sentence="s", holder="1", gt=GT)


def test_all_fields_match():
    row = score_utterance(U, [GT], table_sim({}))
    assert row.points == 4 and row.rule == "best_candidate"


def test_threshold_is_inclusive_and_target_not_scored():
    pred = Sextuple(target="zz", aspect="a2", opinion="o2", sentiment="negative", rationale="r2")
    row = score_utterance(U, [pred], table_sim({("a2", "a"): 0.8, ("o2", "o"): 0.79, ("r2", "r"): 0.95}))
    assert (row.sentiment_ok, row.aspect_ok, row.opinion_ok, row.rationale_ok) == (True, True, False, True)
    assert row.points == 3 and row.target_sim == 0.0 and row.opinion_sim == pytest.approx(0.79)


def test_sentiment_trim_lower_no_mapping():
    assert score_utterance(U, [Sextuple(sentiment="  NEGATIVE ")], table_sim({})).sentiment_ok
    assert not score_utterance(U, [Sextuple(sentiment="neg")], table_sim({})).sentiment_ok
    assert not score_utterance(U, [Sextuple(sentiment="消极")], table_sim({})).sentiment_ok


def test_best_candidate_most_points_then_summed_similarity():
    c1 = Sextuple(aspect="x1", opinion="y1", sentiment="positive", rationale="z1")
    c2 = Sextuple(aspect="x2", opinion="y2", sentiment="negative", rationale="z2")
    c3 = Sextuple(aspect="x3", opinion="y3", sentiment="negative", rationale="z3")
    sims = {("x1", "a"): 0.9, ("y1", "o"): 0.9, ("z1", "r"): 0.9,  # 3 points (no sentiment), sum 2.7
            ("x2", "a"): 0.9, ("y2", "o"): 0.9, ("z2", "r"): 0.5,  # 3 points (sentiment), sum 2.3
            ("x3", "a"): 0.85, ("y3", "o"): 0.85, ("z3", "r"): 0.7}  # 3 points, sum 2.4 -> wins the tie
    row = score_utterance(U, [c1, c2, c3], table_sim(sims))
    assert row.points == 3 and row.chosen == 0 and row.n_candidates == 3  # c1 has the largest sum
    row = score_utterance(U, [c2, c3], table_sim(sims))
    assert row.points == 3 and row.chosen == 1  # 2.4 beats 2.3
    row = score_utterance(U, [c1, c2, GT], table_sim(sims))
    assert row.points == 4 and row.chosen == 2


def test_empty_ground_truth():
    empty_u = Utterance(index=1, sentence="嗯", holder="2", gt=Sextuple(sentiment="neutral"))
    none_u = Utterance(index=2, sentence="嗯", holder="2", gt=None)
    for u in (empty_u, none_u):
        assert score_utterance(u, [], table_sim({})).points == 4
        # a candidate with only a sentiment is no sextuple
        assert score_utterance(u, [Sextuple(sentiment="neutral")], table_sim({})).points == 4
        row = score_utterance(u, [Sextuple(target="x", opinion="y")], table_sim({}))
        assert row.points == 0 and row.rule == "empty_gt_nonempty_pred"


def test_no_prediction_for_non_empty_gt():
    row = score_utterance(U, [], table_sim({}))
    assert row.points == 0 and row.rule == "no_candidate"


def test_dialogue_score_and_length_mismatch():
    utts = [U, Utterance(index=1, sentence="s2", holder="2", gt=None)]
    rows = score_dialogue_sextuples(utts, [[GT], [Sextuple(opinion="x")]], table_sim({}))
    assert dialogue_points(rows) == pytest.approx(4 / 8)
    with pytest.raises(LengthMismatch) as exc:
        score_dialogue_sextuples(utts, [[GT]], table_sim({}))
    assert "1" in str(exc.value) and "2" in str(exc.value)


def test_pairs_needed_skips_identical_and_empty():
    pred = Sextuple(target="t", aspect="a2", opinion="", sentiment="negative", rationale="r")
    assert pairs_needed([U], [[pred]]) == {("a2", "a")}


def test_threshold_is_inclusive_for_opinion_and_rationale_too():
    pred = Sextuple(target="zz", aspect="a2", opinion="o2", sentiment="positive", rationale="r2")
    row = score_utterance(U, [pred], table_sim({("a2", "a"): 0.79, ("o2", "o"): 0.8, ("r2", "r"): 0.8}))
    assert (row.aspect_ok, row.opinion_ok, row.rationale_ok) == (False, True, True) and row.points == 2


def test_equal_candidates_the_earliest_counts():
    # two candidates with the same points and the same summed similarity: the first one is chosen
    first = Sextuple(target="t1", aspect="a1", opinion="o", sentiment="negative", rationale="r")
    second = Sextuple(target="t2", aspect="a2", opinion="o", sentiment="negative", rationale="r")
    row = score_utterance(U, [first, second], table_sim({("a1", "a"): 0.9, ("a2", "a"): 0.9,
                                                         ("t1", "t"): 0.1, ("t2", "t"): 0.7}))
    assert row.chosen == 0 and row.target_sim == 0.1 and row.points == 4


def test_length_mismatch_carries_both_counts_and_says_them():
    utts = [U, Utterance(index=1, sentence="s2", holder="2", gt=None)]
    with pytest.raises(LengthMismatch) as exc:
        score_dialogue_sextuples(utts, [[GT], [], []], table_sim({}))
    assert (exc.value.gt_len, exc.value.pred_len) == (2, 3)
    assert str(exc.value) == "prediction has 3 utterances, ground truth has 2"


# ---- every field of a scored row, per rule (mutation survivors of score_utterance and friends, issue 29)

def test_rows_carry_the_utterance_and_each_rule_its_fields():
    u = Utterance(index=5, sentence="句子", holder="3", gt=GT)
    none = score_utterance(u, [], table_sim({}))
    assert (none.index, none.holder, none.sentence, none.gt, none.gt_empty, none.n_candidates) == (5, "3", "句子", GT,
                                                                                                   False, 0)
    assert (none.chosen, none.pred, none.rule, none.points) == (None, Sextuple(), "no_candidate", 0)
    assert (none.sentiment_ok, none.aspect_ok, none.opinion_ok, none.rationale_ok) == (False, False, False, False)
    assert (none.target_sim, none.aspect_sim, none.opinion_sim, none.rationale_sim) == (0.0, 0.0, 0.0, 0.0)
    empty_u = Utterance(index=6, sentence="嗯", holder="4", gt=None)
    full = score_utterance(empty_u, [Sextuple(sentiment="neutral")], table_sim({}))
    assert (full.index, full.holder, full.sentence, full.gt, full.gt_empty) == (6, "4", "嗯", Sextuple(), True)
    assert (full.chosen, full.pred, full.rule, full.points, full.n_candidates) == (None, Sextuple(),
                                                                                   "empty_gt_empty_pred", 4, 1)
    assert (full.sentiment_ok, full.aspect_ok, full.opinion_ok, full.rationale_ok) == (True, True, True, True)
    assert (full.target_sim, full.aspect_sim, full.opinion_sim, full.rationale_sim) == (None, None, None, None)
    # the first non-empty candidate (index 1, after one with only a sentiment) is shown as the wrong prediction
    wrong = score_utterance(empty_u, [Sextuple(sentiment="neutral"), Sextuple(opinion="y"), Sextuple(aspect="z")],
                            table_sim({}))
    assert (wrong.chosen, wrong.pred, wrong.rule, wrong.points) == (1, Sextuple(opinion="y"),
                                                                    "empty_gt_nonempty_pred", 0)
    assert (wrong.sentiment_ok, wrong.aspect_ok, wrong.opinion_ok, wrong.rationale_ok) == (False,) * 4


def test_a_given_threshold_reaches_every_field():
    pred = Sextuple(target="t", aspect="a2", opinion="o2", sentiment="positive", rationale="r2")
    sim = table_sim({("a2", "a"): 0.6, ("o2", "o"): 0.5, ("r2", "r"): 0.49})
    # threshold 0.5: aspect 0.6 and opinion 0.5 score, rationale 0.49 does not; sentiment wrong -> 2 points
    row = score_utterance(U, [pred], sim, threshold=0.5)
    assert (row.aspect_ok, row.opinion_ok, row.rationale_ok, row.points) == (True, True, False, 2)
    rows = score_dialogue_sextuples([U], [[pred]], sim, threshold=0.5)
    assert [r.points for r in rows] == [2] and dialogue_points(rows) == 2 / 4
    assert score_dialogue_sextuples([U], [[pred]], sim)[0].points == 0  # the default 0.8: none


def test_dialogue_points_of_no_utterances_is_zero():
    assert dialogue_points([]) == 0.0


def test_pairs_needed_goes_on_after_an_empty_ground_truth():
    utts = [Utterance(index=0, sentence="s", holder="1", gt=None), U]
    pred = Sextuple(target="t2", aspect="a", opinion="o", sentiment="negative", rationale="r")
    # the first utterance has nothing to compare; the second asks only its differing target
    assert pairs_needed(utts, [[Sextuple(aspect="x")], [pred]]) == {("t2", "t")}


def test_text_sim_empty_and_identical_texts_never_reach_the_embedder():
    half = lambda a, b: 0.5  # noqa: E731 - whatever the embedder would say
    # both empty (after trimming): identical, 1.0; one empty: 0.0; identical after trimming: exactly 1.0
    assert [text_sim(half, a, b) for a, b in (("", ""), (" ", ""), ("a", ""), ("", "a"), ("a", " a "), ("a", "b"))] == [
        1.0, 1.0, 0.0, 0.0, 1.0, 0.5]


def test_best_candidate_row_reports_its_four_similarities():
    pred = Sextuple(target="t2", aspect="a2", opinion="o2", sentiment="negative", rationale="r2")
    sims = {("t2", "t"): 0.3, ("a2", "a"): 0.81, ("o2", "o"): 0.6, ("r2", "r"): 0.9}
    row = score_utterance(U, [pred], table_sim(sims))
    assert (row.target_sim, row.aspect_sim, row.opinion_sim, row.rationale_sim) == (0.3, 0.81, 0.6, 0.9)
    assert row.points == 3  # sentiment, aspect 0.81, rationale 0.9
