"""Sentiment: labels per matched relationship pair (multi-label), polarity through the taxonomy, GT-missing rule."""

import pytest
from tasks.narrative.evaluators import evaluate_sentiment
from tasks.narrative.narrative_builders import SIX, ch, doc, ev, rel, story



def run(pred_rels, gt_rels, gt_chars=None, pred_events=None, gt_events=None):
    p = story(doc(SIX, [], pred_events or [ev("e1", 0, 6, rels=pred_rels)]))
    g = story(doc(SIX, gt_chars or [], gt_events or [ev("e1", 0, 6, rels=gt_rels)]))
    return evaluate_sentiment(p, g)


def test_exact():
    r = run([rel("A", "B", sentiment="joy")], [rel("A", "B", sentiment=["joy"])])
    assert r["score"] == 1.0 and r["metrics"]["polarity_accuracy"] == 1.0


def test_partial_multi_label():
    r = run([rel("A", "B", sentiment=["gratitude", "joy"])], [rel("A", "B", sentiment=["gratitude", "trust"])])
    # tp 1 (gratitude), fp 1 (joy), fn 1 (trust): P = R = F1 = 1/2; polarity positive = positive -> 1
    assert r["metrics"]["label_f1"] == 0.5 and r["metrics"]["polarity_accuracy"] == 1.0
    assert r["score"] == 0.75


def test_wrong_label_right_polarity_and_mixed_polarity():
    r = run([rel("A", "B", sentiment=["fear"])], [rel("A", "B", sentiment=["anger"])])
    assert r["metrics"]["label_f1"] == 0.0 and r["metrics"]["polarity_accuracy"] == 1.0 and r["score"] == 0.5
    r = run([rel("A", "B", sentiment=["joy"])], [rel("A", "B", sentiment=["joy", "fear"])])
    # GT polarity is mixed (positive + negative), predicted positive: wrong. tp 1, fn 1: F1 = 2/3
    assert r["metrics"]["polarity_accuracy"] == 0.0 and r["metrics"]["label_f1"] == pytest.approx(2 / 3)


def test_alias_pairs_match_before_labels_are_compared():
    r = run([rel("梅梅", "舅舅", sentiment=["trust"])], [rel("阿梅", "老周", sentiment=["trust"])],
            gt_chars=[ch("阿梅", "梅梅"), ch("老周", ["舅舅"])])
    assert r["score"] == 1.0


def test_gt_labels_missing_make_predictions_extra_and_empty_prediction_is_missing():
    r = run([rel("A", "B", sentiment=["joy"]), rel("A", "C", sentiment=""), rel("B", "C", sentiment=["fear"])],
            [rel("A", "B", sentiment=""), rel("A", "C", sentiment=["anger", "fear"]), rel("B", "C", sentiment=["fear"])])
    # A->B: GT "" -> extra; A->C: prediction empty -> fn 2, polarity missing (wrong); B->C: tp 1, polarity right
    # P = 1/1, R = 1/3, F1 = 0.5; polarity 1/2; score = 0.5
    assert r["counts"] == {"tp": 1, "fp": 0, "fn": 2, "polarity_correct": 1, "polarity_total": 2}
    assert r["score"] == 0.5 and r["extra"] == ["e1: A -> B: joy"] and r["gt_incomplete"] is True


def test_labels_of_an_unmatched_gt_pair_are_missed():
    r = run([rel("A", "B", sentiment=["joy"])], [rel("A", "B", sentiment=["joy"]), rel("B", "A", sentiment=["love"])])
    # B->A was not predicted: its label is a false negative; polarity only over the matched pair
    assert (r["counts"]["tp"], r["counts"]["fn"]) == (1, 1) and r["metrics"]["polarity_accuracy"] == 1.0
    assert r["missing"] == ["e1: B -> A"]


@pytest.mark.parametrize("value", [None, "", []])
def test_gt_without_any_label_is_unscored(value):
    r = run([rel("A", "B", sentiment=["joy"])], [rel("A", "B", sentiment=value)])
    assert r["score"] is None and r["gt_incomplete"] is True and r["reason"]


def test_label_outside_the_taxonomy_still_compares_as_a_string():
    r = run([rel("A", "B", sentiment=["annoyance"])], [rel("A", "B", sentiment=["Annoyance"])])
    # label tp 1; GT polarity unknown -> polarity unjudged (None), score = F1 = 1
    assert r["metrics"]["label_f1"] == 1.0 and r["metrics"]["polarity_accuracy"] is None and r["score"] == 1.0


def test_nothing_predicted_against_labelled_gt_is_zero():
    r = run([], [rel("A", "B", sentiment=["joy"])])
    assert r["score"] == 0.0


def test_a_both_empty_pair_makes_the_gt_incomplete_through_its_unlabelled_relationship():
    """A matched pair where neither side has a label is a usable GT relationship without sentiment: `unlabelled`
    counts it (so `gt_incomplete` needs no count of its own for such pairs), and the labelled pair still scores."""
    r = run([rel("A", "B", sentiment="joy"), rel("B", "A")], [rel("A", "B", sentiment=["joy"]), rel("B", "A")])
    assert r["score"] == 1.0 and r["gt_incomplete"] is True and r["extra"] == []
    assert r["reason"] == "1 GT relationship(s) without sentiment"
    r = run([rel("A", "B", sentiment="joy")], [rel("A", "B", sentiment=["joy"])])
    assert r["gt_incomplete"] is False and r["reason"] is None
