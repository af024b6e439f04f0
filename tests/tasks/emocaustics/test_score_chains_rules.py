"""Emotion-chain rules (spec mode) with injected similarities: the worked example, judge handling. The reference's
rules are in test_score_reference_compat.py."""

from __future__ import annotations

import pytest

from emocaustics.tasks.emocaustics.data.schema import Emotion, Event
from emocaustics.tasks.emocaustics.score.chains import ChainRules, judge_prefetch, score_dialogue_chains


def table_sim(pairs: dict[tuple[str, str], float]):
    """A symmetric similarity lookup; unknown pairs are 0.0 (unrelated)."""

    def sim(a: str, b: str) -> float:
        return pairs.get((a, b), pairs.get((b, a), 0.0))

    return sim


def emo(state: str, reason: str, src: str) -> Emotion:
    return Emotion(state=state, reason=reason, source_ids=tuple(s for s in src.split(",") if s), source_raw=src)


# The spec's worked example: GT holder "1" has two events (4 and 5 emotions); the prediction one event with three
# emotions that matches GT event 1; its reasons match GT emotions 1, 3 and 4.
GT = {
    "1": (
        Event("e1", (emo("negative", "g1", "2"), emo("negative", "g2", "2"), emo("positive", "g3", "1"),
                     emo("negative", "g4", "2"))),
        Event("e2", tuple(emo("neutral", f"h{i}", "2") for i in range(5))),
    )
}
PRED = {
    "1": (
        Event("p1", (emo("negative", "q1", "2"),   # state ok, source ok -> 2
                     emo("positive", "q3", "2"),   # state ok, source "2" vs GT "1" -> 1 (the spec text counts 2)
                     emo("positive", "q4", "2"))),  # state wrong, source ok -> 1
    )
}
SIMS = {("e1", "p1"): 0.9, ("e2", "p1"): 0.1, ("g1", "q1"): 0.95, ("g3", "q3"): 0.85, ("g4", "q4"): 0.82,
        # GT emotion 2's best predicted reason is q1, below the 0.8 gate
        ("g2", "q1"): 0.5, ("g2", "q3"): 0.2}


def test_worked_example_scores_025_not_03125():
    out = score_dialogue_chains(GT, PRED, table_sim(SIMS))
    assert out.score == pytest.approx(0.25)
    rows = [r for r in out.items if r.event_index == 0]
    assert [r.points for r in rows] == [2.0, 0.0, 1.0, 1.0]
    assert [r.reason_ok for r in rows] == [True, False, True, True]
    assert rows[2].source_ok is False and rows[2].gt_source == "1" and rows[2].pred_source == "2"
    second = [r for r in out.items if r.event_index == 1]
    assert len(second) == 5 and not any(r.event_matched for r in second)
    assert sum(r.contribution for r in out.items) == pytest.approx(0.25)


def test_spec_uses_each_predicted_event_once():
    gt = {"A": (Event("x", (emo("negative", "r", "B"),)), Event("y", (emo("negative", "r", "B"),)))}
    pred = {"A": (Event("px", (emo("negative", "r", "B"),)),)}
    sims = {("x", "px"): 0.9, ("y", "px"): 0.95}
    out = score_dialogue_chains(gt, pred, table_sim(sims))
    # x takes px first (GT order), y finds nothing left
    assert [r.event_matched for r in out.items] == [True, False]
    assert out.score == pytest.approx(0.5)


def test_multi_id_source_membership():
    gt = {"A": (Event("x", (emo("negative", "r", "B,C"),)),)}
    for src, expect in (("C", 1.0), ("B", 1.0), ("D", 0.5), ("B,C", 1.0), ("B,D", 0.5), ("", 0.5)):
        pred = {"A": (Event("x", (emo("negative", "r", src),)),)}
        assert score_dialogue_chains(gt, pred, table_sim({})).score == pytest.approx(expect), src


def test_state_compared_trimmed_and_lowercased_only():
    gt = {"A": (Event("x", (emo("negative", "r", "B"),)),)}
    assert score_dialogue_chains(gt, {"A": (Event("x", (emo(" Negative ", "r", "B"),)),)}, table_sim({})).score == 1.0
    assert score_dialogue_chains(gt, {"A": (Event("x", (emo("neg", "r", "B"),)),)}, table_sim({})).score == 0.5


def test_holder_missing_from_prediction_and_empty_gt_holder():
    gt = {"A": (Event("x", (emo("negative", "r", "B"),)),), "B": ()}
    # A missing in the prediction -> 0; B has no GT events and no predicted ones -> full
    assert score_dialogue_chains(gt, {}, table_sim({})).score == pytest.approx(0.5)
    # B predicted an event it should not have -> 0 for B
    pred = {"A": (Event("x", (emo("negative", "r", "B"),)),), "B": (Event("z", ()),)}
    out = score_dialogue_chains(gt, pred, table_sim({}))
    assert out.holder_scores == {"A": 1.0, "B": 0.0}
    # extra predicted holders are ignored
    pred2 = {"A": pred["A"], "Z": (Event("w", ()),)}
    assert score_dialogue_chains(gt, pred2, table_sim({})).score == 1.0


def test_judge_needed_then_decides():
    gt = {"A": (Event("x", (emo("negative", "r", "B"),)),)}
    pred = {"A": (Event("px", (emo("negative", "r", "B"),)),)}
    sim = table_sim({("x", "px"): 0.75})
    rules = ChainRules(judge=True)
    first = score_dialogue_chains(gt, pred, sim, {}, rules)
    assert first.missing == {("x", "px")}
    assert judge_prefetch(gt, pred, sim, rules) == {("x", "px")}
    assert score_dialogue_chains(gt, pred, sim, {("x", "px"): True}, rules).score == 1.0
    no = score_dialogue_chains(gt, pred, sim, {("x", "px"): False}, rules)
    assert no.score == 0.0 and no.items[0].judge == "no"
    # below the embedding threshold the judge is not asked at all in spec mode
    low = table_sim({("x", "px"): 0.5})
    assert score_dialogue_chains(gt, pred, low, {}, rules).missing == set()


def test_judge_failure_zero_or_unscored():
    gt = {"A": (Event("x", (emo("negative", "r", "B"),)), Event("y", (emo("negative", "s", "B"),)))}
    pred = {"A": (Event("px", (emo("negative", "r", "B"),)), Event("y", (emo("negative", "s", "B"),)))}
    sim = table_sim({("x", "px"): 0.9})
    v = {("x", "px"): None}
    zero = score_dialogue_chains(gt, pred, sim, v, ChainRules(judge=True))
    assert zero.score == pytest.approx(0.5) and zero.judge_failures == 1
    uns = score_dialogue_chains(gt, pred, sim, v, ChainRules(judge=True, on_judge_error="unscored"))
    assert uns.score == pytest.approx(1.0) and uns.judge_failures == 1
    assert [r.unscored for r in uns.items] == [True, False]


def test_oracle_is_one():
    out = score_dialogue_chains(GT, GT, table_sim({}), rules=ChainRules(judge=True))
    assert out.score == 1.0 and not out.missing


def test_reason_threshold_is_inclusive():
    gt = {"A": (Event("x", (emo("negative", "r", "B"),)),)}
    pred = {"A": (Event("x", (emo("negative", "r2", "B"),)),)}
    at = score_dialogue_chains(gt, pred, table_sim({("r", "r2"): 0.8}))
    below = score_dialogue_chains(gt, pred, table_sim({("r", "r2"): 0.79}))
    assert at.items[0].reason_ok and at.score == 1.0 and below.score == 0.0


def test_equal_candidates_the_earliest_counts():
    # events: p1 and p2 equally similar to x, with equal points -> p1 (the earliest), whose reason is "u";
    # reasons inside: u1 and u2 equally similar and earning the same -> u1, whose source is the one shown
    gt = {"A": (Event("x", (emo("negative", "r", "B"),)),)}
    pred = {"A": (Event("p1", (emo("negative", "u1", "B"), emo("negative", "u2", "B"))),
                  Event("p2", (emo("negative", "u3", "B"),)))}
    out = score_dialogue_chains(gt, pred, table_sim({("x", "p1"): 0.9, ("x", "p2"): 0.9, ("r", "u1"): 0.85,
                                                     ("r", "u2"): 0.85, ("r", "u3"): 0.85}))
    item = out.items[0]
    assert (item.pred_event_index, item.pred_emotion_index, item.pred_reason) == (0, 0, "u1") and out.score == 1.0


# ---- exact tags and boundaries (mutation survivors of _verdict and judge_prefetch, issue 29)

def test_judge_tags_identical_yes_and_pending_leave_no_rows():
    gt = {"A": (Event("x", (emo("negative", "r", "B"),)),)}
    rules = ChainRules(judge=True)
    # identical texts (after trimming) are the same event without asking: tag "identical"
    same = score_dialogue_chains(gt, {"A": (Event(" x ", (emo("negative", "r", "B"),)),)}, table_sim({}), {}, rules)
    assert same.items[0].judge == "identical" and same.missing == set() and same.score == 1.0
    pred = {"A": (Event("px", (emo("negative", "r", "B"),)),)}
    sim = table_sim({("x", "px"): 0.75})
    yes = score_dialogue_chains(gt, pred, sim, {("x", "px"): True}, rules)
    assert yes.items[0].judge == "yes" and yes.items[0].event_matched
    # a missing verdict: the holder is left for the next round, with no rows and no score
    pending = score_dialogue_chains(gt, pred, sim, {}, rules)
    assert pending.items == [] and pending.holder_scores == {} and pending.score is None
    assert pending.judge_failures == 0


def test_prefetch_at_the_threshold_and_holders_without_prediction():
    gt = {"A": (Event("x", ()),), "B": (Event("y", ()),)}
    pred = {"A": (Event("at", ()), Event("below", ()), Event("x", ()))}
    sim = table_sim({("x", "at"): 0.7, ("x", "below"): 0.69})
    # 0.7 is asked (>= the event threshold), 0.69 is not, identical "x" never; B has no predicted events
    assert judge_prefetch(gt, pred, sim, ChainRules(judge=True)) == {("x", "at")}
    assert judge_prefetch(gt, pred, sim, ChainRules(judge=False)) == set()
