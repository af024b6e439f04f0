"""Relationships and sentiment compared whole (issue 29): one worked story each with every outcome (matched, false
positive, missed in an aligned and in an unaligned event, skipped GT, extra), the polarity of label sets, and the
counts -> score functions with absent counts."""

import pytest
from tasks.narrative.narrative_builders import SIX, close, doc, ev, rel, story

from emocaustics.tasks.narrative import relationships, sentiment
from emocaustics.tasks.narrative.relationships import evaluate_relationships
from emocaustics.tasks.narrative.sentiment import evaluate_sentiment, polarity
from emocaustics.tasks.narrative.taxonomy import default_taxonomy


def test_relationships_whole_result():
    gt = [ev("e1", 0, 6, rels=[rel("A", "B", "family", "siblings"), rel("A", "C", "social", ""),
                               rel("B", "C", "hostility", "rivals"), rel("A", None, "family")]),
          ev("e2", 6, 12, rels=None), ev("e3", 12, 18, rels=[rel("C", "A", "family", "parent_child")])]
    pred = [ev("p1", 0, 6, rels=[rel("A", "B", "family", "spouses"), rel("A", "C", "social", "neighbours"),
                                 rel("C", "B", "hostility", "rivals")]),
            ev("p2", 6, 12, rels=[rel("A", "D", "social", "strangers")]), ev("p3", agents=["Z"], rels=[rel("Z", "Y")])]
    # p1-e1, p2-e2 by span; e3 missed; p3 (no span, no shared participant) extra.
    # e1: A->B and A->C matched, C->B a false positive, B->C left (missed in an aligned event), A->None skipped;
    # e2 has no GT relationship: p2's pair is extra; e3's C->A missed; p3's Z->Y extra.
    # tp 2, fp 1, fn 2: P 2/3, R 1/2, F1 = (2/3) / (7/6) = 4/7. level1 2 of 2; level2: spouses wrong, "" -> extra:
    # 0 of 1. Score (4/7 + 1 + 0) / 3 = 11/21. Coverage 2 / (2 + 1) = 2/3.
    r = evaluate_relationships(story(doc(SIX, [], pred)), story(doc(SIX, [], gt)))
    assert close(r, {
        "component": "relationships", "score": 11 / 21, "gt_incomplete": True,
        "reason": "1 GT event(s) without relationships skipped; 1 GT relationship(s) without agent or target skipped",
        "skipped_events": 1,
        "metrics": {"pair_precision": 2 / 3, "pair_recall": 0.5, "pair_f1": 4 / 7, "level1_accuracy": 1.0,
                    "level2_accuracy": 0.0, "pair_coverage": 2 / 3, "false_positives": 1, "level_extra": 1},
        "counts": {"tp": 2, "fp": 1, "fn": 2, "l1_correct": 2, "l1_total": 2, "l2_correct": 0, "l2_total": 1},
        "extra": ["p2: A -> D", "p3: Z -> Y"], "missing": ["e1: B -> C", "e3: C -> A"],
        "details": {"matched": [{"pair": "e1: A -> B", "level1": "correct", "level2": "wrong"},
                                {"pair": "e1: A -> C", "level1": "correct", "level2": "extra"}],
                    "false_positives": ["p1: C -> B"]},
        "event_ok": {"0": False, "2": False}})


def test_relationships_unscored_whole_result():
    r = evaluate_relationships(story(doc(SIX, [], [ev("e1", 0, 6, rels=[rel("A", "B")])])),
                               story(doc(SIX, [], [ev("e1", 0, 6, rels=[rel("A", None)]), ev("e2", 6, 12)])))
    assert r == {"component": "relationships", "score": None, "gt_incomplete": True,
                 "reason": "no ground-truth event has a relationship with both agent and target", "skipped_events": 2,
                 "metrics": {m: None for m in relationships.METRICS}, "counts": {}, "extra": ["e1: A -> B"],
                 "missing": [], "details": [], "event_ok": {}}


def test_sentiment_whole_result():
    gt = [ev("e1", 0, 6, rels=[rel("A", "B", sentiment=["joy", "trust"]), rel("A", "C", sentiment=["anger"]),
                               rel("B", "C", sentiment=None), rel("C", "A", sentiment=["annoyance"])]),
          ev("e2", 6, 12, rels=[rel("B", "A", sentiment=["fear"])])]
    pred = [ev("e1", 0, 6, rels=[rel("A", "B", sentiment=["joy", "fear"]), rel("A", "C", sentiment=None),
                                 rel("B", "C", sentiment=["love"]), rel("C", "A", sentiment=["annoyance"])]),
            ev("e2", 6, 12, rels=[])]
    # A->B: tp 1 (joy), fp 1 (fear), fn 1 (trust); polarity positive vs mixed: wrong.
    # A->C: predicted empty: fn 1, polarity missing. B->C: GT unlabelled, predicted love: extra.
    # C->A: tp 1; "annoyance" is outside the taxonomy: polarity unjudged (extra), pair right.
    # e2 B->A not predicted: fn 1. tp 2, fp 1, fn 3: P 2/3, R 2/5, F1 = (8/15) / (16/15) = 1/2; polarity 0 of 2.
    # Score (1/2 + 0) / 2 = 1/4.
    r = evaluate_sentiment(story(doc(SIX, [], pred)), story(doc(SIX, [], gt)))
    assert close(r, {
        "component": "sentiment", "score": 0.25, "gt_incomplete": True,
        "reason": "1 GT relationship(s) without sentiment", "skipped_events": 0,
        "metrics": {"label_precision": 2 / 3, "label_recall": 0.4, "label_f1": 0.5, "polarity_accuracy": 0.0,
                    "labelled_gt_pairs": 4},
        "counts": {"tp": 2, "fp": 1, "fn": 3, "polarity_correct": 0, "polarity_total": 2},
        "extra": ["e1: B -> C: love"], "missing": ["e2: B -> A"],
        "details": [{"pair": "e1: A -> B", "gt": ["joy", "trust"], "pred": ["joy", "fear"], "gt_polarity": "positive",
                     "pred_polarity": "mixed", "correct": False},
                    {"pair": "e1: A -> C", "gt": ["anger"], "pred": [], "gt_polarity": "negative",
                     "pred_polarity": None, "correct": False},
                    {"pair": "e1: C -> A", "gt": ["annoyance"], "pred": ["annoyance"], "gt_polarity": "unknown",
                     "pred_polarity": "unknown", "correct": True}],
        "event_ok": {"0": False, "1": False}})


def test_sentiment_unscored_whole_result():
    r = evaluate_sentiment(story(doc(SIX, [], [ev("e1", 0, 6, rels=[rel("A", "B", sentiment=["joy"])])])),
                           story(doc(SIX, [], [ev("e1", 0, 6, rels=[rel("A", "B")]), ev("e2", 6, 12)])))
    assert r == {"component": "sentiment", "score": None, "gt_incomplete": True,
                 "reason": "no ground-truth relationship carries a sentiment label", "skipped_events": 2,
                 "metrics": {m: None for m in sentiment.METRICS}, "counts": {}, "extra": [], "missing": [],
                 "details": [], "event_ok": {}}


def test_polarity_of_label_sets():
    tax = default_taxonomy()
    assert polarity(("joy",), tax) == "positive" and polarity(("joy", "gratitude"), tax) == "positive"
    assert polarity(("joy", "fear"), tax) == "mixed" and polarity(("joy", "fear", "surprise"), tax) == "mixed"
    assert polarity(("joy", "annoyance"), tax) == "unknown"  # one unknown label leaves the set unjudged


@pytest.mark.parametrize("module, key", [(relationships, "l1"), (relationships, "l2"), (sentiment, "polarity")])
def test_pair_scores_from_counts_read_absent_counts_as_zero(module, key):
    # fp 1 only: P 0, R 0 -> F1 0; tp 1 only: F1 1
    assert module.score_from_counts({"fp": 1}) == 0.0 and module.score_from_counts({"tp": 1}) == 1.0
    # tp 1 with fn 1 (fp absent) or fp 1 (fn absent): F1 2/3
    assert module.score_from_counts({"tp": 1, "fn": 1}) == pytest.approx(2 / 3)
    assert module.score_from_counts({"tp": 1, "fp": 1}) == pytest.approx(2 / 3)
    # accuracy 0 of 2 (correct absent): mean(1, 0) = 1/2; correct 0 of nothing: not measured -> mean(1) = 1
    assert module.score_from_counts({"tp": 1, f"{key}_total": 2}) == 0.5
    assert module.score_from_counts({"tp": 1, f"{key}_correct": 0}) == 1.0
