"""Relationships and sentiment compared whole (issue 29): one worked story each with every outcome (matched, false
positive, missed in an aligned and in an unaligned event, skipped GT, extra), the polarity of label sets, and the
counts -> score functions with absent counts."""

import pytest
from tasks.narrative.evaluators import evaluate_relationships, evaluate_sentiment
from tasks.narrative.narrative_builders import SIX, close, doc, ev, rel, story

from emocaustics.tasks.narrative import relationships, sentiment
from emocaustics.tasks.narrative.sentiment import polarity
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
                                 rel("B", "C", sentiment=["love", "hope"]), rel("C", "A", sentiment=["annoyance"])]),
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
        "extra": ["e1: B -> C: love, hope"], "missing": ["e2: B -> A"],
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


def rels_of(pred_events, gt_events, **kw):
    return evaluate_relationships(story(doc(SIX, [], pred_events)), story(doc(SIX, [], gt_events)), **kw)


def test_pair_relationships_keeps_every_event_s_pairs():
    from emocaustics.tasks.narrative.alignment import align_events
    from emocaustics.tasks.narrative.characters import Resolver
    from emocaustics.tasks.narrative.relationships import RelPairing, pair_relationships

    gt = story(doc(SIX, [], [ev("e1", 0, 6, rels=[rel("A", "B"), rel("A", "C")]),
                             ev("e2", agents=["Q"], rels=[rel("Q", "R")]),
                             ev("e3", 12, 18, rels=[rel("B", "C"), rel("C", "D")]),
                             ev("e4", agents=["W"]), ev("e5", agents=["U"])]))
    pred = story(doc(SIX, [], [ev("p1", 0, 6, rels=[rel("A", "B")]), ev("p3", 12, 18, rels=[rel("B", "C")]),
                               ev("p4", agents=["W"], rels=[rel("W", "V")]),
                               ev("p5", agents=["U"], rels=[rel("U", "T")])]))
    # p1-e1, p3-e3 by span; p4-e4, p5-e5 by participants; e2 unaligned. e1 and e3 each leave one GT pair
    # (missed in an aligned event: 2), e2's pair is missed outright; e4 and e5 have no GT pairs: skipped, and the
    # predicted pairs there are extra
    resolve = Resolver(gt.characters, pred.characters)
    rp = pair_relationships(pred, gt, align_events(pred, gt, SIX, resolve), resolve)
    assert rp == RelPairing(matched=[((0, 0), (0, 0)), ((1, 0), (2, 0))], false_pos=[],
                            missed=[(0, 1), (1, 0), (2, 1)], missed_in_aligned=2, extra=[(2, 0), (3, 0)],
                            skipped_events=[3, 4], skipped_relationships=[], events_with_gt=3)


def test_relationship_event_verdicts_one_cause_each():
    # a level-2 error alone (listed first), a false positive alone, a missed pair alone: each makes the event wrong
    r = rels_of([ev("e1", 0, 6, rels=[rel("A", "C", "family", "spouses"), rel("A", "B", "family", "siblings")])],
                [ev("e1", 0, 6, rels=[rel("A", "C", "family", "siblings"), rel("A", "B", "family", "siblings")])])
    # tp 2: F1 1; level1 2/2; level2 1/2 -> (1 + 1 + 1/2) / 3 = 5/6
    assert r["event_ok"] == {"0": False} and r["score"] == pytest.approx(5 / 6)
    r = rels_of([ev("e1", 0, 6, rels=[rel("A", "B", "family"), rel("C", "D", "family")])],
                [ev("e1", 0, 6, rels=[rel("A", "B", "family")])])
    assert r["event_ok"] == {"0": False}
    r = rels_of([ev("e1", 0, 6, rels=[rel("A", "B", "family")])],
                [ev("e1", 0, 6, rels=[rel("A", "B", "family"), rel("A", "C", "family")])])
    assert r["event_ok"] == {"0": False}
    # a predicted level left empty where the GT has one: "missing", and the event is wrong
    r = rels_of([ev("e1", 0, 6, rels=[rel("A", "B", "family")])],
                [ev("e1", 0, 6, rels=[rel("A", "B", "family", "siblings")])])
    assert r["details"]["matched"] == [{"pair": "e1: A -> B", "level1": "correct", "level2": "missing"}]
    assert r["event_ok"] == {"0": False}
    r = rels_of([ev("e1", 0, 6, rels=[rel("A", "B", "family", "siblings")])],
                [ev("e1", 0, 6, rels=[rel("A", "B", "family", "siblings")])])
    assert r["event_ok"] == {"0": True} and r["gt_incomplete"] is False and r["reason"] is None


@pytest.mark.parametrize("gt_events, pred_events", [
    # an event without GT relationships
    ([ev("e1", 0, 6, rels=[rel("A", "B", "f", "s")]), ev("e2", 6, 12)],
     [ev("e1", 0, 6, rels=[rel("A", "B", "f", "s")]), ev("e2", 6, 12)]),
    # a GT relationship without target
    ([ev("e1", 0, 6, rels=[rel("A", "B", "f", "s"), rel("A", None, "f")])],
     [ev("e1", 0, 6, rels=[rel("A", "B", "f", "s")])]),
    # a predicted event absent from GT, with a pair
    ([ev("e1", 0, 6, rels=[rel("A", "B", "f", "s")])],
     [ev("e1", 0, 6, rels=[rel("A", "B", "f", "s")]), ev("p2", agents=["Z"], rels=[rel("Z", "Y")])]),
    # level 1 empty in GT, predicted
    ([ev("e1", 0, 6, rels=[rel("A", "B", None, "s")])], [ev("e1", 0, 6, rels=[rel("A", "B", "f", "s")])]),
    # level 2 empty in GT, predicted
    ([ev("e1", 0, 6, rels=[rel("A", "B", "f", None)])], [ev("e1", 0, 6, rels=[rel("A", "B", "f", "x")])]),
])
def test_relationships_gt_incomplete_for_each_cause_alone(gt_events, pred_events):
    assert rels_of(pred_events, gt_events)["gt_incomplete"] is True


def test_relationships_and_sentiment_align_with_the_given_resolver_and_the_gt_text():
    from emocaustics.tasks.narrative.characters import Resolver

    resolve = Resolver(story(doc(characters=[{"name": "Tom Hale", "alias": ["Tom"]}])).characters, [])
    pred = story(doc(None, [], [ev("p1", agents=["Tom"], rels=[rel("Tom", "B", "family", sentiment=["joy"])])]))
    gt = story(doc(None, [], [ev("e1", agents=["Tom Hale"], rels=[rel("Tom Hale", "B", "family",
                                                                       sentiment=["joy"])])]))
    # only the resolver passed in knows Tom is Tom Hale: events align and the pair matches (1), else missed (0)
    assert evaluate_relationships(pred, gt, resolve=resolve)["score"] == 1.0
    assert evaluate_relationships(pred, gt)["score"] == 0.0
    assert evaluate_sentiment(pred, gt, resolve=resolve)["score"] == 1.0
    assert evaluate_sentiment(pred, gt)["score"] == 0.0
    # the prediction has no text: spans placed in the GT's (p1 = e1 by span)
    p = story(doc(None, [], [ev("p1", 0, 6, rels=[rel("A", "B", "family", sentiment=["joy"])])]))
    g = story(doc(SIX, [], [ev("e1", 0, 6, rels=[rel("A", "B", "family", sentiment=["joy"])])]))
    assert evaluate_relationships(p, g)["score"] == 1.0 and evaluate_sentiment(p, g)["score"] == 1.0


def sent_of(pred_rels, gt_rels, gt_more=()):
    return evaluate_sentiment(story(doc(SIX, [], [ev("e1", 0, 6, rels=pred_rels)])),
                              story(doc(SIX, [], [ev("e1", 0, 6, rels=gt_rels), *gt_more])))


def test_sentiment_clean_story_is_complete_and_counts_skipped_events():
    # e2 has no relationship, e3 a labelled one without target (not usable): both skipped
    r = sent_of([rel("A", "B", sentiment=["joy"])], [rel("A", "B", sentiment=["joy"])],
                [ev("e2", 6, 12), ev("e3", 12, 18, rels=[rel("A", None, sentiment=["joy"])])])
    assert r == {"component": "sentiment", "score": 1.0, "gt_incomplete": False, "reason": None, "skipped_events": 2,
                 "metrics": {"label_precision": 1.0, "label_recall": 1.0, "label_f1": 1.0, "polarity_accuracy": 1.0,
                             "labelled_gt_pairs": 1},
                 "counts": {"tp": 1, "fp": 0, "fn": 0, "polarity_correct": 1, "polarity_total": 1},
                 "extra": [], "missing": [],
                 "details": [{"pair": "e1: A -> B", "gt": ["joy"], "pred": ["joy"], "gt_polarity": "positive",
                              "pred_polarity": "positive", "correct": True}],
                 "event_ok": {"0": True}}


def test_sentiment_unlabelled_gt_pair_alone_makes_it_incomplete():
    r = sent_of([rel("A", "B", sentiment=["joy"])], [rel("A", "B", sentiment=["joy"]), rel("A", "C")])
    assert r["gt_incomplete"] is True and r["reason"] == "1 GT relationship(s) without sentiment"


def test_sentiment_other_label_same_polarity_is_not_right():
    r = sent_of([rel("A", "B", sentiment=["fear"])], [rel("A", "B", sentiment=["anger"])])
    assert r["details"][0]["correct"] is False and r["event_ok"] == {"0": False}
