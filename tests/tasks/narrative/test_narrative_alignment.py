"""Event alignment: spans by IoU, fallback to participants and action type, optimal (not greedy) assignment,
missed and extra events, GT missing."""

import pytest
from tasks.narrative.evaluators import align_events
from tasks.narrative.narrative_builders import act, ch, doc, ev, story

from emocaustics.tasks.narrative.alignment import evaluate_events, iou


def run(pred_events, gt_events, text="x" * 40, pred_chars=None, gt_chars=None):
    p = story(doc(text, pred_chars or [], pred_events))
    g = story(doc(text, gt_chars or [], gt_events))
    a = align_events(p, g, text)
    return a, evaluate_events(p, g, a)


def test_exact_spans_align_one_to_one():
    a, r = run([ev("p1", 10, 20), ev("p2", 0, 10)], [ev("g1", 0, 10), ev("g2", 10, 20)])
    assert sorted((p, g) for p, g, _, _ in a.pairs) == [(0, 1), (1, 0)]
    assert all(w == 1.0 and b == "span" for _, _, w, b in a.pairs)
    assert r["score"] == 1.0 and r["gt_incomplete"] is False


def test_assignment_maximises_the_total_where_greedy_does_not():
    # GT a = [0,10), b = [8,20); pred p1 = [0,11), p2 = [1,10)
    # IoU(p1,a) = 10/11 = .909 (the best single pair), IoU(p1,b) = 3/20 = .15,
    # IoU(p2,a) = 9/10 = .9, IoU(p2,b) = 2/19 = .105
    # greedy (best pair first): p1-a + p2-b = .909 + .105 = 1.014; optimal: p1-b + p2-a = .15 + .9 = 1.05
    assert iou((0, 11), (0, 10)) == pytest.approx(10 / 11) and iou((1, 10), (8, 20)) == pytest.approx(2 / 19)
    a, _ = run([ev("p1", 0, 11), ev("p2", 1, 10)], [ev("a", 0, 10), ev("b", 8, 20)])
    assert sorted((p, g) for p, g, _, _ in a.pairs) == [(0, 1), (1, 0)]
    assert sum(w for _, _, w, _ in a.pairs) == pytest.approx(3 / 20 + 9 / 10)


def test_fallback_uses_participants_through_aliases_and_action_type():
    chars = [ch("Tom Hale", ["the ferryman"])]
    # GT has no span: participants {Tom Hale} = {the ferryman} (J = 1), same type -> 0.5 * 1 + 0.5 * 1 = 1.0
    a, r = run([ev("p1", 0, 10, agents=["the ferryman"], action=act(type_="give"))],
               [ev("g1", agents=["Tom Hale"], action=act(type_="give"))], gt_chars=chars)
    assert a.pairs == [(0, 0, 1.0, "fallback")] and r["score"] == 1.0
    # another type: 0.5 * 1 + 0.5 * 0 = 0.5, still aligned
    a, _ = run([ev("p1", agents=["Tom Hale"], action=act(type_="take"))],
               [ev("g1", agents=["Tom Hale"], targets=["Lila"], action=act(type_="give"))])
    # J = |{Tom}| / |{Tom, Lila}| = 1/2 -> 0.5 * 0.5 + 0 = 0.25
    assert a.pairs == [(0, 0, 0.25, "fallback")]


def test_fallback_needs_a_shared_participant():
    a, r = run([ev("p1", agents=["A"], action=act(type_="give"))], [ev("g1", agents=["B"], action=act(type_="give"))])
    assert a.pairs == [] and a.missed == [0] and a.extra == [0]
    assert r["score"] == 0.0 and r["missing"] == ["g1"] and r["extra"] == ["p1"]


def test_spans_on_both_sides_decide_alone():
    # same participants, disjoint spans: not the same event
    a, _ = run([ev("p1", 20, 30, agents=["A"])], [ev("g1", 0, 10, agents=["A"])])
    assert a.pairs == []


def test_event_absent_from_gt_is_extra_not_a_false_positive():
    a, r = run([ev("p1", 0, 10), ev("p2", 10, 20), ev("p3", 30, 40)], [ev("g1", 0, 10), ev("g2", 10, 20)])
    # recall = 2 aligned / 2 GT events = 1.0; p3 listed as extra, the score does not move
    assert r["score"] == 1.0 and r["extra"] == ["p3"] and r["gt_incomplete"] is True
    assert r["metrics"]["extra"] == 1


def test_partial_and_empty_predictions():
    _, r = run([ev("p1", 0, 10)], [ev("g1", 0, 10), ev("g2", 10, 20), ev("g3", 20, 30)])
    assert r["score"] == pytest.approx(1 / 3) and r["missing"] == ["g2", "g3"]
    _, r = run([], [ev("g1", 0, 10)])
    assert r["score"] == 0.0


@pytest.mark.parametrize("gt_events", [[], None])
def test_gt_without_events_is_unscored(gt_events):
    _, r = run([ev("p1", 0, 10)], gt_events)
    assert r["score"] is None and r["gt_incomplete"] is True and r["skipped_events"] == 1 and r["extra"] == ["p1"]


def test_ties_go_to_the_event_at_the_same_position():
    # no spans, identical participants and types: story order decides
    evs = [ev("g1", agents=["A"], targets=["B"]), ev("g2", agents=["A"], targets=["B"])]
    a, _ = run([ev("p1", agents=["A"], targets=["B"]), ev("p2", agents=["A"], targets=["B"])], evs)
    assert sorted((p, g) for p, g, _, _ in a.pairs) == [(0, 0), (1, 1)]
