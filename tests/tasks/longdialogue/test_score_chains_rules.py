"""Emotion-chain rules (spec mode) with injected similarities: the worked example, judge handling. The reference's
rules are in test_score_reference_compat.py."""

from __future__ import annotations

import pytest

from emocaustics.tasks.longdialogue.data.schema import Emotion, Event
from emocaustics.tasks.longdialogue.score.chains import ChainRules, judge_prefetch, score_dialogue_chains


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
    assert yes.items[0].judge == "yes" and yes.items[0].event_matched and yes.items[0].event_sim == 0.75
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


# ---- exact rows, weights and helpers (mutation survivors of chains.py, issue 29)

from emocaustics.tasks.longdialogue.score.chains import (  # noqa: E402
    ChainItem,
    ChainOutcome,
    needed_pairs,
    source_ok,
)


def test_on_judge_error_must_be_zero_or_unscored():
    with pytest.raises(ValueError) as exc:
        ChainRules(on_judge_error="skip")
    assert str(exc.value) == "on_judge_error must be 'zero' or 'unscored', not 'skip'"
    assert ChainRules().event_threshold == 0.7 and ChainRules().reason_threshold == 0.8


def test_outcome_score_is_the_mean_of_scored_holders():
    assert ChainOutcome(holder_scores={"A": 1.0, "B": 0.25, "C": None}).score == 0.625  # (1 + 0.25) / 2
    assert ChainOutcome(holder_scores={"A": None}).score is None and ChainOutcome().score is None


def test_source_ok_ids_or_free_text():
    # ids on both sides: the predicted ones must be among the GT's (blank ids ignored)
    assert source_ok(Emotion("s", "r", ("1", "2")), Emotion("s", "r", (" 2 ", "")))
    assert not source_ok(Emotion("s", "r", ("1",)), Emotion("s", "r", ("1", "3")))
    # no parseable id on one side: the trimmed raw texts must be equal, and not empty
    assert source_ok(Emotion("s", "r", (), "牛牛"), Emotion("s", "r", (), " 牛牛 "))
    assert not source_ok(Emotion("s", "r", (), "牛牛"), Emotion("s", "r", (), "羊羊"))
    assert not source_ok(Emotion("s", "r", (), " "), Emotion("s", "r", (), " "))
    assert not source_ok(Emotion("s", "r", (" ",), "x"), Emotion("s", "r", ("1",), "y"))


def test_rows_weights_and_contributions_by_hand():
    # holder A: GT events x (two emotions) and y (none); px matches x at 0.9; y finds only py at 0.5 (< 0.7).
    # x's emotions (weight 1/2 / 2 = 1/4 each): r1 -> u1 (0.85, state ok, source ok) 2 points;
    # r2 -> u2 (0.9, state wrong, source ok) 1 point. x = 3/4 of its points, y = 0 -> holder (0.75 + 0) / 2 = 0.375
    # holder B has no GT events and none predicted -> 1. Dialogue: (0.375 + 1) / 2 = 0.6875
    gt = {"A": (Event("x", (emo("joy", "r1", "1"), emo("sad", "r2", "2"))), Event("y", ())), "B": ()}
    pred = {"A": (Event("px", (emo("joy", "u1", "1"), emo("fear", "u2", "2"))), Event("py", ()))}
    sims = {("x", "px"): 0.9, ("y", "py"): 0.5, ("y", "px"): 0.2, ("x", "py"): 0.1, ("r1", "u1"): 0.85,
            ("r2", "u2"): 0.9, ("r1", "u2"): 0.1, ("r2", "u1"): 0.2}
    out = score_dialogue_chains(gt, pred, table_sim(sims))
    assert out.holder_scores == {"A": 0.375, "B": 1.0} and out.score == 0.6875 and out.judge_failures == 0
    e1, e2, ev, hb = out.items
    base = dict(holder="A", event_index=0, gt_event="x", pred_event_index=0, pred_event="px", event_sim=0.9,
                judge="not_asked", event_matched=True, kind="emotion", max_points=2.0, weight=0.25)
    assert e1 == ChainItem(**base, emotion_index=0, gt_state="joy", gt_reason="r1", gt_source="1",
                           pred_emotion_index=0, pred_state="joy", pred_reason="u1", pred_source="1", reason_sim=0.85,
                           reason_ok=True, state_ok=True, source_ok=True, points=2.0, contribution=0.25)
    assert e2 == ChainItem(**base, emotion_index=1, gt_state="sad", gt_reason="r2", gt_source="2",
                           pred_emotion_index=1, pred_state="fear", pred_reason="u2", pred_source="2", reason_sim=0.9,
                           reason_ok=True, state_ok=False, source_ok=True, points=1.0, contribution=0.125)
    assert ev == ChainItem(holder="A", kind="event", event_index=1, gt_event="y", pred_event_index=1, pred_event="py",
                           event_sim=0.5, judge="not_asked", event_matched=False, points=0.0, max_points=1.0,
                           weight=0.5, contribution=0.0)
    assert hb == ChainItem(holder="B", kind="holder", points=1.0, max_points=1.0, weight=1.0, contribution=1.0)


def test_matched_event_without_emotions_and_parsed_sources_shown():
    gt = {"A": (Event("x", ()), Event("z", (Emotion("joy", "r", ("1", "2"), ""),)))}
    pred = {"A": (Event("x", ()), Event("z", (Emotion("joy", "r", ("2", "1"), ""),)))}
    out = score_dialogue_chains(gt, pred, table_sim({}))
    ev, em = out.items
    assert (ev.kind, ev.points, ev.max_points, ev.weight, ev.contribution) == ("event", 1.0, 1.0, 0.5, 0.5)
    assert (em.gt_source, em.pred_source, em.points, em.contribution) == ("1,2", "2,1", 2.0, 0.5)
    assert out.score == 1.0


def test_an_unmatched_best_event_stays_free_for_later_ones():
    # x's best, px at 0.5, does not match, so px is still there for y (0.9)
    gt = {"A": (Event("x", ()), Event("y", ()))}
    pred = {"A": (Event("px", ()),)}
    out = score_dialogue_chains(gt, pred, table_sim({("x", "px"): 0.5, ("y", "px"): 0.9}))
    assert [(r.pred_event_index, r.event_matched) for r in out.items] == [(0, False), (0, True)]
    assert out.score == 0.5


def test_reason_ties_go_to_the_identical_text_then_to_more_points():
    gt = {"A": (Event("x", (emo("joy", "r", "1"),)),)}
    # u and r both at cosine 1.0: the identical text r wins although u comes first (and would earn as much)
    pred = {"A": (Event("x", (emo("joy", "u", "1"), emo("joy", "r", "1"))),)}
    out = score_dialogue_chains(gt, pred, table_sim({("r", "u"): 1.0}))
    assert out.items[0].pred_emotion_index == 1
    # u1 and u2 tie at 0.9; u2 earns 2 points (u1: 1), so u2 counts although it comes later
    pred2 = {"A": (Event("x", (emo("sad", "u1", "1"), emo("joy", "u2", "1"))),)}
    out2 = score_dialogue_chains(gt, pred2, table_sim({("r", "u1"): 0.9, ("r", "u2"): 0.9}))
    assert out2.items[0].pred_emotion_index == 1 and out2.score == 1.0
    # the points are state + source: v1 (state ok, source "2" wrong) earns 1, v2 (both ok) 2 -> v2
    pred3 = {"A": (Event("x", (emo("joy", "v1", "2"), emo("joy", "v2", "1"))),)}
    out3 = score_dialogue_chains(gt, pred3, table_sim({("r", "v1"): 0.9, ("r", "v2"): 0.9}))
    assert out3.items[0].pred_emotion_index == 1 and out3.items[0].points == 2.0


def test_unscored_events_leave_the_denominator_and_a_fully_unscored_holder_has_no_score():
    gt = {"A": (Event("x", (emo("joy", "r", "1"),)),), "B": (Event("y", ()),)}
    pred = {"A": (Event("px", (emo("joy", "r", "1"),)),), "B": (Event("py", ()),)}
    sim = table_sim({("x", "px"): 0.9, ("y", "py"): 0.9})
    v = {("x", "px"): None, ("y", "py"): True}
    out = score_dialogue_chains(gt, pred, sim, v, ChainRules(judge=True, on_judge_error="unscored"))
    assert out.holder_scores == {"A": None, "B": 1.0} and out.score == 1.0 and out.judge_failures == 1
    a = out.items[0]
    assert (a.judge, a.unscored, a.event_matched, a.weight, a.contribution) == ("failed", True, False, 0.0, 0.0)
    zero = score_dialogue_chains(gt, pred, sim, v, ChainRules(judge=True))
    assert zero.holder_scores == {"A": 0.0, "B": 1.0} and zero.score == 0.5
    assert (zero.items[0].judge, zero.items[0].unscored) == ("failed", False)


def test_event_and_reason_pairs_are_same_holder_products():
    gt = {"A": (Event("x", (emo("s", "r1", "1"),)), Event("y", (emo("s", "r2", "1"),))), "B": (Event("z", ()),)}
    pred = {"A": (Event("px", (emo("s", "u1", "1"), emo("s", "u2", "1"))), Event("py", ())),
            "C": (Event("pc", (emo("s", "uc", "1"),)),)}
    assert needed_pairs(gt, pred) == {("x", "px"), ("x", "py"), ("y", "px"), ("y", "py"),  # events
                                      ("r1", "u1"), ("r1", "u2"), ("r2", "u1"), ("r2", "u2")}  # reasons


def test_an_event_with_no_candidate_is_scored_and_unmatched():
    out = score_dialogue_chains({"A": (Event("x", ()),)}, {}, table_sim({}), rules=ChainRules(judge=True))
    row = out.items[0]
    assert (row.unscored, row.event_matched, row.pred_event_index, row.event_sim, row.judge) == (False, False, None,
                                                                                                None, None)
    assert (row.weight, row.points) == (1.0, 0.0) and out.holder_scores == {"A": 0.0}


def test_event_threshold_is_inclusive():
    gt = {"A": (Event("x", ()),)}
    pred = {"A": (Event("px", ()),)}
    assert score_dialogue_chains(gt, pred, table_sim({("x", "px"): 0.7})).score == 1.0
    assert score_dialogue_chains(gt, pred, table_sim({("x", "px"): 0.69})).score == 0.0


def test_every_gt_event_gets_a_row_after_the_candidates_run_out():
    # px goes to x; y and z find nothing left: three rows, one matched -> 1/3
    gt = {"A": (Event("x", ()), Event("y", ()), Event("z", ()))}
    out = score_dialogue_chains(gt, {"A": (Event("px", ()),)}, table_sim({("x", "px"): 0.9}))
    assert [(r.gt_event, r.event_matched, r.weight) for r in out.items] == [("x", True, 1 / 3), ("y", False, 1 / 3),
                                                                           ("z", False, 1 / 3)]
    assert out.score == pytest.approx(1 / 3)


def test_holders_after_an_empty_or_pending_holder_are_still_scored():
    y = (Event("y", ()),)
    # a first holder without GT events does not stop the walk
    assert score_dialogue_chains({"B": (), "A": y}, {"A": y}, table_sim({})).holder_scores == {"B": 1.0, "A": 1.0}
    # a first holder waiting for a verdict is left for the next round; the next holder is scored now
    gt = {"A": (Event("x", ()),), "B": y}
    out = score_dialogue_chains(gt, {"A": (Event("px", ()),), "B": y}, table_sim({("x", "px"): 0.9}), {},
                                ChainRules(judge=True))
    assert out.missing == {("x", "px")} and out.holder_scores == {"B": 1.0}
