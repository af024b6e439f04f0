"""Whole component results by exact value (issue 29): characters, events, the GT-missing helpers and the
counts -> score functions, each on a worked example, so that a renamed key, a lost reason or a changed count is seen."""

import pytest
from tasks.narrative.narrative_builders import act, ch, close, doc, ev, story

from emocaustics.tasks.narrative import actions, alignment, characters
from emocaustics.tasks.narrative.alignment import align_events, evaluate_events
from emocaustics.tasks.narrative.characters import evaluate_characters
from emocaustics.tasks.narrative.gtmissing import Outcome, Tally, unscored

CHARACTER_METRICS = {"precision": None, "recall": None, "f1": None, "archetype_accuracy": None}


def chars(pred, gt):
    return evaluate_characters(story(doc(characters=pred)), story(doc(characters=gt)))


def test_characters_whole_result():
    gt = [ch("A", None, "hero"), ch(None, ["Bee", "B2"], "mentor"), ch("C", None, "ally"), ch("", [], "hero")]
    pred = [ch("A", None, "hero"), ch("Bee", None, None), ch("C", None, "villain"), ch("D", None, "sage")]
    # GT character 3 has no name or alias: skipped. Pairs A-A (name = name), Bee-(alias Bee), C-C; D unmatched.
    # tp 3, fp 1, fn 0: P 3/4, R 1, F1 = 2 * 3/4 / (7/4) = 6/7. Archetypes: A right; Bee predicted empty -> missing
    # (wrong); C ally vs villain -> wrong: 1 of 3. Score (6/7 + 1/3) / 2 = 25/42.
    assert close(chars(pred, gt), {
        "component": "characters", "score": 25 / 42, "gt_incomplete": True,
        "reason": "1 GT character(s) without name or alias skipped", "skipped_events": 0,
        "metrics": {"precision": 0.75, "recall": 1.0, "f1": 6 / 7, "archetype_accuracy": 1 / 3, "archetype_extra": 0,
                    "gt_characters": 3, "pred_characters": 4},
        "counts": {"tp": 3, "fp": 1, "fn": 0, "archetype_correct": 1, "archetype_total": 3},
        "extra": ["D"], "missing": [],
        "details": [{"gt": "A", "pred": "A", "archetype": "compared", "archetype_correct": True},
                    {"gt": "Bee", "pred": "Bee", "archetype": "missing", "archetype_correct": False},
                    {"gt": "C", "pred": "C", "archetype": "compared", "archetype_correct": False}],
        "event_ok": {}})


def test_characters_one_gt_archetype_missing_makes_the_result_gt_incomplete():
    # GT archetype empty, predicted "hero": extra (not judged); F1 1, no archetype accuracy -> score 1
    assert chars([ch("A", None, "hero")], [ch("A", None, None)]) == {
        "component": "characters", "score": 1.0, "gt_incomplete": True, "reason": None, "skipped_events": 0,
        "metrics": {"precision": 1.0, "recall": 1.0, "f1": 1.0, "archetype_accuracy": None, "archetype_extra": 1,
                    "gt_characters": 1, "pred_characters": 1},
        "counts": {"tp": 1, "fp": 0, "fn": 0, "archetype_correct": 0, "archetype_total": 0},
        "extra": [], "missing": [],
        "details": [{"gt": "A", "pred": "A", "archetype": "extra", "archetype_correct": None}], "event_ok": {}}


@pytest.mark.parametrize("gt, reason", [([], "ground truth lists no characters"),
                                        ([ch("", [])], "no ground-truth character has a name or alias")])
def test_characters_unscored_whole_result(gt, reason):
    # predicted characters are listed by name, else first alias, else "?"
    assert chars([ch("", []), ch(None, ["Zed", "Z2"])], gt) == {
        "component": "characters", "score": None, "gt_incomplete": True, "reason": reason, "skipped_events": 0,
        "metrics": CHARACTER_METRICS, "counts": {}, "extra": ["?", "Zed"], "missing": [], "details": [],
        "event_ok": {}}


def test_events_whole_result():
    gt = [ev("g1", 0, 10), ev("g2", agents=["A"], targets=["B"], action=act(type_="give")), ev("g3", 30, 40)]
    pred = [ev("p1", 0, 20), ev("p2", agents=["A"], action=act(type_="take")), ev("p3", 20, 30)]
    # p1-g1 by span: IoU 10/20 = 0.5; p2-g2 by participants (g2 has no span): J({A}, {A, B}) = 1/2, other type ->
    # 0.5 * 1/2 = 0.25; p3 shares nothing with g3 (IoU 0): p3 extra, g3 missed. Recall 2/3.
    p, g = story(doc("x" * 40, [], pred)), story(doc("x" * 40, [], gt))
    assert close(evaluate_events(p, g, align_events(p, g, "x" * 40)), {
        "component": "events", "score": 2 / 3, "gt_incomplete": True,
        "reason": "1 predicted event(s) absent from GT listed as extra", "skipped_events": 0,
        "metrics": {"recall": 2 / 3, "aligned": 2, "missed": 1, "extra": 1, "by_span": 1, "by_fallback": 1,
                    "mean_span_iou": 0.5},
        "counts": {"aligned": 2, "gt_events": 3}, "extra": ["p3"], "missing": ["g3"],
        "details": [{"pred": "p1", "gt": "g1", "weight": 0.5, "basis": "span"},
                    {"pred": "p2", "gt": "g2", "weight": 0.25, "basis": "fallback"}],
        "event_ok": {"0": True, "1": True, "2": False}})


def test_events_unscored_whole_result():
    p, g = story(doc("x" * 40, [], [ev("p1", 0, 10), ev("p2")])), story(doc("x" * 40, [], []))
    assert evaluate_events(p, g, align_events(p, g, "x" * 40)) == {
        "component": "events", "score": None, "gt_incomplete": True, "reason": "ground truth has no narrative events",
        "skipped_events": 2, "metrics": {"recall": None, "aligned": None, "missed": None, "extra": None},
        "counts": {}, "extra": ["p1", "p2"], "missing": [], "details": [], "event_ok": {}}


def test_unscored_and_tally_json_by_value():
    assert unscored("spans", "no text", 3, extra=["p1"], metrics=("b",)) == {
        "component": "spans", "score": None, "gt_incomplete": True, "reason": "no text", "skipped_events": 3,
        "metrics": {"b": None}, "counts": {}, "extra": ["p1"], "missing": [], "details": [], "event_ok": {}}
    t = Tally()
    for outcome, right in ((Outcome.COMPARED, True), (Outcome.COMPARED, False), (Outcome.MISSING, False),
                           (Outcome.EXTRA, False), (Outcome.EXTRA, False), (Outcome.BOTH_EMPTY, False)):
        t.add(outcome, right)
    assert t.to_json() == {"correct": 1, "compared": 2, "missing": 1, "extra": 2, "both_empty": 1}


def test_scores_from_counts_read_absent_counts_as_zero():
    # actions: 0 correct of 2 -> 0; nothing in the denominator -> not measured
    assert actions.score_from_counts({"total": 2}) == 0.0 and actions.score_from_counts({"correct": 1}) is None
    # events: 0 aligned of 2 -> 0
    assert alignment.score_from_counts({"gt_events": 2}) == 0.0 and alignment.score_from_counts({"aligned": 1}) is None
    # characters: fp 1 only -> P 0, R 0, F1 0 (no archetypes) = 0; tp 1 only -> F1 1
    assert characters.score_from_counts({"fp": 1}) == 0.0 and characters.score_from_counts({"tp": 1}) == 1.0
    # tp 1, fn 1 (fp absent) -> P 1, R 1/2, F1 2/3; tp 1, fp 1 (fn absent) -> the same 2/3
    assert characters.score_from_counts({"tp": 1, "fn": 1}) == pytest.approx(2 / 3)
    assert characters.score_from_counts({"tp": 1, "fp": 1}) == pytest.approx(2 / 3)
