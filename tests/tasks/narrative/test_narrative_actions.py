"""Action layer: five fields per aligned event, accuracy over the fields the GT has."""

import pytest
from tasks.narrative.evaluators import evaluate_actions
from tasks.narrative.narrative_builders import SIX, act, doc, ev, story


FULL = act("physical", "give", "home", "completed", "climax")


def run(pred_events, gt_events):
    return evaluate_actions(story(doc(SIX, [], pred_events)), story(doc(SIX, [], gt_events)))


def test_exact_with_case_and_width_normalised():
    r = run([ev("e1", 0, 6, action=act("Physical", "ｇｉｖｅ", "home ", "completed", "climax"))],
            [ev("e1", 0, 6, action=FULL)])
    assert r["score"] == 1.0 and r["metrics"]["complete_match_rate"] == 1.0


def test_partial():
    r = run([ev("e1", 0, 6, action=act("physical", "take", "home", "attempted", "climax"))],
            [ev("e1", 0, 6, action=FULL)])
    # 3 of 5 fields right; the event is a partial match
    assert r["score"] == pytest.approx(3 / 5)
    assert (r["metrics"]["complete_match_rate"], r["metrics"]["partial_match_rate"]) == (0.0, 1.0)
    assert r["metrics"]["type_accuracy"] == 0.0 and r["metrics"]["category_accuracy"] == 1.0


def test_partial_gt_action_layer_counts_only_the_fields_gt_has():
    r = run([ev("e1", 0, 6, action=act("verbal", "ask", "home", "completed", "climax"))],
            [ev("e1", 0, 6, action=act("verbal", "", None, "completed", "crisis"))])
    # GT has category, status, function: 2 right of 3; type and context predicted where GT is empty -> extra
    assert r["score"] == pytest.approx(2 / 3) and r["metrics"]["type_accuracy"] is None
    assert r["extra"] == ["e1.type=ask", "e1.context=home"] and r["gt_incomplete"] is True


def test_empty_predicted_fields_are_missing():
    r = run([ev("e1", 0, 6, action=act("physical", "give", "", "completed", None))], [ev("e1", 0, 6, action=FULL)])
    assert r["score"] == pytest.approx(3 / 5) and r["missing"] == ["e1.context", "e1.function"]


def test_missed_gt_event_counts_all_its_fields_wrong():
    r = run([ev("e1", 0, 6, action=FULL)], [ev("e1", 0, 6, action=FULL), ev("e2", 12, 18, action=FULL)])
    # 5 right of 10; complete matches 1 of 2 scored events
    assert r["score"] == 0.5 and r["metrics"]["complete_match_rate"] == 0.5


def test_event_absent_from_gt_is_extra():
    r = run([ev("e1", 0, 6, action=FULL), ev("p2", 12, 18, action=act("verbal", "ask"))], [ev("e1", 0, 6, action=FULL)])
    assert r["score"] == 1.0 and r["extra"] == ["p2.category=verbal", "p2.type=ask"]


@pytest.mark.parametrize("empty", [None, {}, act("", "", None, None, "")])
def test_gt_without_any_action_field_is_unscored(empty):
    r = run([ev("e1", 0, 6, action=FULL), ev("e2", 6, 12, action=FULL)],
            [ev("e1", 0, 6, action=empty), ev("e2", 6, 12, action=None)])
    assert r["score"] is None and r["gt_incomplete"] is True and r["skipped_events"] == 2 and len(r["extra"]) == 10


def test_event_without_gt_action_is_skipped_among_scored_ones():
    r = run([ev("e1", 0, 6, action=FULL), ev("e2", 6, 12, action=act("verbal"))],
            [ev("e1", 0, 6, action=FULL), ev("e2", 6, 12, action={})])
    assert r["score"] == 1.0 and r["skipped_events"] == 1 and r["extra"] == ["e2.category=verbal"]


def test_gt_empty_fields_are_not_wanted_for_a_complete_match():
    r = run([ev("e1", 0, 6, action=act("verbal", "ask", "home", "completed", "crisis"))],
            [ev("e1", 0, 6, action=act("verbal", "", None, "completed", "crisis"))])
    # every field the GT has is right: a complete match, not a partial one (type and context are extra)
    assert r["score"] == 1.0
    assert (r["metrics"]["complete_match_rate"], r["metrics"]["partial_match_rate"]) == (1.0, 0.0)
    assert r["missing"] == [] and r["counts"]["total"] == 3
