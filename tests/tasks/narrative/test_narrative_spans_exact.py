"""Text spans by exact value (issue 29): the English full-stop rules one case each, sentence splitting at the text's
edges, boundaries at the first and last sentence, the whole spans result of a worked story (exclusion of events
aligned to span-less GT events), the parts of B, and counts -> score with absent counts."""

import pytest
from tasks.narrative.evaluators import evaluate_spans
from tasks.narrative.narrative_builders import SIX, close, doc, ev, story

from emocaustics.tasks.narrative import spans
from emocaustics.tasks.narrative.spans import (boundaries, boundary_similarity, optimal_iou_pairs,
                                               sentence_range, split_sentences)


@pytest.mark.parametrize("text, pieces", [
    ("Is 3. Ok", ["Is 3. ", "Ok"]),  # no word before the dot, but no space either: a stop
    ("3. x", ["3. ", "x"]),  # the same at offset 1
    ("a . b", ["a . b"]),  # a dot standing alone after a space: no stop
    (". x", [". x"]),  # a dot at the very start: no stop
    ("In the USA. Then", ["In the USA. ", "Then"]),  # an upper-case word, not a single initial: a stop
    ("a. b", ["a. ", "b"]),  # a single lower-case letter is no initial: a stop
    ('He said "yes." Then', ['He said "yes." ', "Then"]),  # closing quote, then a space: a stop
    ("a\n b", ["a\n ", "b"]),  # a line break takes the one space after it
    ("a\n", ["a\n"]),  # a line break at the end
    ("。ab", ["。", "ab"]),  # a terminator at offset 0
])
def test_english_and_edge_sentences(text, pieces):
    assert [text[a:b] for a, b in split_sentences(text)] == pieces


def test_leading_whitespace_joins_the_first_sentence():
    assert split_sentences("\n\nabc") == [(0, 5)]
    assert split_sentences("\n ") == [(0, 2)]  # whitespace only: one piece, nothing to join
    assert split_sentences("") == []


def test_boundaries_and_sentence_range_at_the_edges():
    # sentences 1-2 of 4: a boundary before sentence 1 and one before sentence 3
    assert boundaries([(1, 2)], 4) == {1, 3}
    assert sentence_range((0, 2), split_sentences(SIX)) == (0, 0)  # inside sentence 0 = [0, 3)


def test_boundary_similarity_parts():
    assert boundary_similarity(set(), set(), 3) == {"b": 1.0, "numerator": 0.0, "denominator": 0, "exact": 0,
                                                    "near_misses": 0, "insertions": 0, "deletions": 0}
    # {2} against {2, 4}: 1 match, 1 deletion: B = 1 / 2
    assert boundary_similarity({2}, {2, 4}, 6) == {"b": 0.5, "numerator": 1.0, "denominator": 2, "exact": 1,
                                                   "near_misses": 0, "insertions": 0, "deletions": 1,
                                                   "substitutions": 0}


def test_pairs_of_iou_zero_are_dropped():
    assert optimal_iou_pairs([(0, 5)], [(10, 20)]) == []


def test_spans_whole_result():
    gt = [ev("e1", 0, 6), ev("e2", agents=["X"]), ev("e3", 12, 18)]
    pred = [ev("p1", 0, 5), ev("p2", 9, 15, agents=["X"])]
    # alignment: p1-e1 by IoU 5/6; p2 to the span-less e2 by participants (0.5 beats its IoU 3/9 with e3): e3 missed.
    # GT sentences (0, 1), (4, 5): boundaries {2, 4}; p1 covers (0, 1): {2}; p2's boundaries {3, 5} are excluded
    # (its GT event has no span). B: 1 match, 1 deletion = 1/2. IoU: only p1 (p2 is left out): 5/6 over 2 GT spans
    # = 5/12. Score (1/2 + 5/12) / 2 = 11/24.
    r = evaluate_spans(story(doc(SIX, [], pred)), story(doc(SIX, [], gt)))
    assert close(r, {
        "component": "spans", "score": 11 / 24, "gt_incomplete": True,
        "reason": "1 GT event(s) without a valid span excluded", "skipped_events": 1,
        "metrics": {"boundary_similarity": 0.5, "mean_iou": 5 / 12, "exact": 1, "near_misses": 0, "insertions": 0,
                    "deletions": 1, "excluded_boundaries": 2, "sentences": 6, "gt_boundaries": 2,
                    "pred_boundaries": 1},
        "counts": {"b_numerator": 1.0, "b_denominator": 2, "b_files": 1, "iou_sum": 5 / 6, "gt_spans": 2},
        "extra": ["p2"], "missing": ["e3"],
        "details": {"events": [{"gt": "e1", "gt_sentences": [0, 1], "pred": "p1", "pred_sentences": [0, 1],
                                "sentence_exact": True},
                               {"gt": "e3", "gt_sentences": [4, 5], "pred": None, "pred_sentences": None,
                                "sentence_exact": False}],
                    "iou_pairs": [["p1", "e1", 0.8333]]},
        "event_ok": {"0": True, "2": False}})


def test_spans_with_nothing_skipped_has_no_reason_and_no_partner_for_a_missed_event():
    r = evaluate_spans(story(doc(SIX, [], [ev("p1", 0, 6), ev("p2", 6, 400)])),
                       story(doc(SIX, [], [ev("e1", 0, 6), ev("e2", 6, 12)])))
    # p2's span is out of range, so it aligns by participants only -- and has none: e2 is missed, not p2's
    assert r["details"]["events"][1] == {"gt": "e2", "gt_sentences": [2, 3], "pred": None, "pred_sentences": None,
                                         "sentence_exact": False}
    assert r["reason"] is None and r["gt_incomplete"] is False


@pytest.mark.parametrize("gt_text, events, reason, skipped", [
    (None, [ev("e1", 0, 6), ev("e2")], "no text_content to place spans in", 2),
    (SIX, [ev("e1"), ev("e2", 50, 60), ev("e3", 6, 6)], "no ground-truth event has a valid text span", 3)])
def test_spans_unscored_whole_result(gt_text, events, reason, skipped):
    r = evaluate_spans(story(doc(None, [], [ev("p1", 0, 6)])), story(doc(gt_text, [], events)))
    assert r == {"component": "spans", "score": None, "gt_incomplete": True, "reason": reason,
                 "skipped_events": skipped, "metrics": {"boundary_similarity": None, "mean_iou": None}, "counts": {},
                 "extra": [], "missing": [], "details": [], "event_ok": {}}


def test_spans_text_given_or_from_either_side():
    evs = [ev("e1", 0, 6), ev("e2", 6, 18)]
    # no text in either file: the text passed in places the spans (exact: 1)
    assert evaluate_spans(story(doc(None, [], evs)), story(doc(None, [], evs)), text=SIX)["score"] == 1.0
    # the GT has text, the prediction none: the GT's text is used
    assert evaluate_spans(story(doc(None, [], evs)), story(doc(SIX, [], evs)))["score"] == 1.0


def test_evaluate_spans_passes_n_t_on():
    # GT sentences 0-1 | 2-4 | 5: {2, 5}; prediction 0-1 | 2 | 3-5: {2, 3}; the miss is 2 sentences away
    pred = story(doc(SIX, [], [ev("p1", 0, 6), ev("p2", 6, 9), ev("p3", 9, 18)]))
    gt = story(doc(SIX, [], [ev("e1", 0, 6), ev("e2", 6, 15), ev("e3", 15, 18)]))
    # n_t = 2: 1 match, 2 additions -> 1/3; n_t = 3: a near miss weighted 2/3 -> 1 - (2/3) / 2 = 2/3
    assert evaluate_spans(pred, gt)["metrics"]["boundary_similarity"] == pytest.approx(1 / 3)
    assert evaluate_spans(pred, gt, n_t=3)["metrics"]["boundary_similarity"] == pytest.approx(2 / 3)


def test_spans_score_from_counts_reads_absent_counts():
    # no B denominator but a file: B = 1; IoU 1/2 -> (1 + 1/2) / 2
    assert spans.score_from_counts({"b_files": 1, "iou_sum": 1.0, "gt_spans": 2}) == 0.75
    # no file, no denominator: B not measured -> IoU alone
    assert spans.score_from_counts({"iou_sum": 1.0, "gt_spans": 2}) == 0.5
    # iou_sum absent: 0 of 2 -> (1 + 0) / 2; gt_spans absent: IoU not measured -> B alone
    assert spans.score_from_counts({"b_files": 1, "gt_spans": 2}) == 0.5
    assert spans.score_from_counts({"b_files": 1, "iou_sum": 0.5}) == 1.0
