"""Relationships: (agent, target) pairs per aligned event, aliases resolved, GT-missing rule."""

import pytest
from tasks.narrative.evaluators import evaluate_relationships
from tasks.narrative.narrative_builders import SIX, ch, doc, ev, rel, story



def run(pred_events, gt_events, pred_chars=None, gt_chars=None):
    return evaluate_relationships(story(doc(SIX, pred_chars or [], pred_events)),
                                  story(doc(SIX, gt_chars or [], gt_events)))


def test_exact():
    rels = [rel("A", "B", "family", "siblings"), rel("B", "A", "family", "siblings")]
    r = run([ev("e1", 0, 6, rels=rels)], [ev("e1", 0, 6, rels=rels)])
    assert r["score"] == 1.0 and r["metrics"]["pair_f1"] == 1.0 and r["metrics"]["level2_accuracy"] == 1.0


def test_partial():
    gt = [rel("A", "B", "family", "siblings"), rel("A", "C", "social", "neighbours"), rel("B", "C", "hostility", "rivals")]
    pred = [rel("A", "B", "family", "spouses"), rel("A", "C", "social", "neighbours"), rel("C", "B", "hostility", "rivals")]
    r = run([ev("e1", 0, 6, rels=pred)], [ev("e1", 0, 6, rels=gt)])
    # tp 2 (A->B, A->C), fp 1 (C->B: direction matters), fn 1 (B->C): P = R = F1 = 2/3
    # level1 2/2 = 1; level2: A->B wrong, A->C right = 1/2; score = (2/3 + 1 + 1/2) / 3 = 13/18
    m = r["metrics"]
    assert (m["pair_precision"], m["pair_recall"], m["pair_f1"]) == pytest.approx((2 / 3, 2 / 3, 2 / 3))
    assert (m["level1_accuracy"], m["level2_accuracy"]) == (1.0, 0.5)
    assert r["score"] == pytest.approx(13 / 18)
    assert r["missing"] == ["e1: B -> C"] and r["details"]["false_positives"] == ["e1: C -> B"]


def test_aliases_resolve_on_both_sides():
    gt_chars = [ch("阿梅", ["梅梅"]), ch("老周", ["周师傅", "舅舅"])]
    r = run([ev("e1", 0, 6, rels=[rel("梅梅", "周师傅", "family", "relatives")])],
            [ev("e1", 0, 6, rels=[rel("阿梅", "老周", "family", "relatives")])], gt_chars=gt_chars)
    assert r["score"] == 1.0 and r["counts"]["tp"] == 1


def test_one_to_many_and_repeated_pairs():
    gt = [rel("A", "B", "family", "siblings"), rel("A", "C", "family", "siblings"), rel("A", "B", "social", "neighbours")]
    pred = [rel("A", "B", "family", "siblings"), rel("A", "C", "family", "siblings")]
    r = run([ev("e1", 0, 6, rels=pred)], [ev("e1", 0, 6, rels=gt)])
    # the repeated key A->B matches once: tp 2, fp 0, fn 1 -> P 1, R 2/3, F1 = 0.8
    assert r["metrics"]["pair_f1"] == pytest.approx(0.8) and r["metrics"]["level1_accuracy"] == 1.0


def test_empty_prediction_is_missing():
    r = run([ev("e1", 0, 6, rels=[])], [ev("e1", 0, 6, rels=[rel("A", "B", "family", "siblings")])])
    # GT present, prediction empty: fn 1 -> F1 0; no matched pair -> level accuracies None -> score 0
    assert r["score"] == 0.0 and r["metrics"]["level1_accuracy"] is None and r["missing"] == ["e1: A -> B"]


@pytest.mark.parametrize("empty", [[], None])
def test_gt_empty_in_one_event_makes_predictions_there_extra(empty):
    gt = [ev("e1", 0, 6, rels=[rel("A", "B", "family", "siblings")]), ev("e2", 6, 12, rels=empty)]
    pred = [ev("e1", 0, 6, rels=[rel("A", "B", "family", "siblings")]),
            ev("e2", 6, 12, rels=[rel("A", "C", "social", "neighbours")])]
    r = run(pred, gt)
    # tp 1, fp 0: the pair in e2 is extra, not a false positive
    assert r["score"] == 1.0 and r["counts"]["fp"] == 0 and r["extra"] == ["e2: A -> C"]
    assert r["gt_incomplete"] is True and r["skipped_events"] == 1


def test_gt_wholly_missing_is_unscored():
    r = run([ev("e1", 0, 6, rels=[rel("A", "B")])], [ev("e1", 0, 6, rels=None), ev("e2", 6, 12, rels=[])])
    assert r["score"] is None and r["gt_incomplete"] is True and r["skipped_events"] == 2 and r["reason"]


def test_gt_relationship_without_target_is_skipped_not_scored():
    r = run([ev("e1", 0, 6, rels=[rel("A", "B", "family")])],
            [ev("e1", 0, 6, rels=[rel("A", None, "family"), rel("A", "B", "family")])])
    assert r["score"] == 1.0 and r["gt_incomplete"] is True and "without agent or target" in r["reason"]


def test_missed_gt_event_counts_its_pairs_but_not_in_coverage():
    gt = [ev("e1", 0, 6, rels=[rel("A", "B", "family", "siblings")]),
          ev("e2", 12, 18, rels=[rel("A", "C", "family", "siblings")])]
    r = run([ev("p1", 0, 6, rels=[rel("A", "B", "family", "siblings")])], gt)
    # tp 1, fn 1 (e2 not aligned): recall 1/2; coverage over aligned events only: 1/1
    assert r["metrics"]["pair_recall"] == 0.5 and r["metrics"]["pair_coverage"] == 1.0


def test_relationships_of_an_event_absent_from_gt_are_extra():
    r = run([ev("p1", 0, 6, rels=[rel("A", "B", "family")]), ev("p2", 12, 18, rels=[rel("X", "Y", "social")])],
            [ev("e1", 0, 6, rels=[rel("A", "B", "family")])])
    assert r["score"] == 1.0 and r["counts"]["fp"] == 0 and r["extra"] == ["p2: X -> Y"]


def test_gt_level_missing_makes_the_predicted_level_extra():
    r = run([ev("e1", 0, 6, rels=[rel("A", "B", "family", "siblings")])],
            [ev("e1", 0, 6, rels=[rel("A", "B", "family", "")])])
    assert r["metrics"]["level2_accuracy"] is None and r["metrics"]["level_extra"] == 1 and r["score"] == 1.0
