"""Text spans: sentence splitting, boundary similarity B (Fournier 2013's worked examples), the optimal span
pairing, the exclusion rule for GT events without spans, GT missing."""

import pytest
from tasks.narrative.evaluators import evaluate_spans
from tasks.narrative.narrative_builders import SIX, doc, ev, story

from emocaustics.tasks.narrative.spans import (boundaries, boundary_similarity, masses,
                                               optimal_iou_pairs, sentence_range, split_sentences)


def sentences(text):
    return [text[a:b] for a, b in split_sentences(text)]


def test_chinese_sentences_keep_closing_quotes_and_break_at_lines():
    text = "他说：“快跑！”她没动。\n第二天……天亮了？！「好。」"
    assert sentences(text) == ["他说：“快跑！”", "她没动。\n", "第二天……", "天亮了？！", "「好。」"]


def test_english_sentences():
    text = 'Mr. Smith came home. "Run!" he said... Then J. K. left?! Yes\nEnd of 3.5 days.'
    assert sentences(text) == ["Mr. Smith came home. ", '"Run!" ', "he said... ", "Then J. K. left?! ", "Yes\n",
                               "End of 3.5 days."]


def test_sentences_tile_the_text():
    for text in ("  lead. x", SIX, "a\n\n\nb", "", "。。。"):
        parts = split_sentences(text)
        assert "".join(text[a:b] for a, b in parts) == text


def test_offsets_map_to_sentences_and_boundaries():
    s = split_sentences(SIX)  # sentence k = [3k, 3k+3)
    assert len(s) == 6
    assert sentence_range((0, 6), s) == (0, 1) and sentence_range((4, 7), s) == (1, 2)
    # a range puts a boundary before its first sentence and after its last, none at the text's ends
    assert boundaries([(0, 1), (2, 3), (4, 5)], 6) == {2, 4}
    assert masses({2, 4}, 6) == (2, 2, 2)


# Fournier (2013)'s error-type examples (also the cases of segeval's own tests, by the same author): one reference
# segmentation, masses (2, 3, 6) -- boundaries after units 2 and 5 of 11 -- against hypotheses with one kind of error
# each. B = 1 - (|A| + w(T)) / (|A| + |T| + |matches|); a near miss is a transposition over a distance d < n_t,
# weighted d / n_t. Every figure below is worked by hand from that formula.
REF = {2, 5}  # boundary positions of masses (2, 3, 6), 11 units


@pytest.mark.parametrize("hyp_masses, expected, parts", [
    # false negative: (5, 6) -> {5}; 1 match, 1 addition: 1 - 1/2
    ((5, 6), 0.5, {"exact": 1, "deletions": 1, "insertions": 0, "near_misses": 0}),
    # false positive: (2, 3, 3, 3) -> {2, 5, 8}; 2 matches, 1 addition: 1 - 1/3
    ((2, 3, 3, 3), 2 / 3, {"exact": 2, "deletions": 0, "insertions": 1, "near_misses": 0}),
    # near miss: (2, 2, 7) -> {2, 4}; 1 match, 1 transposition of distance 1 weighted 1/2: 1 - 0.5/2
    ((2, 2, 7), 0.75, {"exact": 1, "deletions": 0, "insertions": 0, "near_misses": 1}),
    # clustered false positives: (1, 1, 3, 1, 5) -> {1, 2, 5, 6}; 2 matches, 2 additions: 1 - 2/4
    ((1, 1, 3, 1, 5), 0.5, {"exact": 2, "deletions": 0, "insertions": 2, "near_misses": 0}),
])
def test_boundary_similarity_on_the_papers_examples(hyp_masses, expected, parts):
    cuts = [sum(hyp_masses[:k]) for k in range(1, len(hyp_masses))]
    b = boundary_similarity(set(cuts), REF, 11)
    assert b["b"] == pytest.approx(expected)
    assert {k: b[k] for k in parts} == parts


def test_near_miss_tolerance():
    # hypothesis (2, 1, 8) -> {2, 3}: the reference's 5 is 2 away.
    # n_t = 2: not a near miss -> 1 match, 2 additions: 1 - 2/3 = 1/3
    assert boundary_similarity({2, 3}, REF, 11, n_t=2)["b"] == pytest.approx(1 / 3)
    # n_t = 3: a transposition of distance 2 weighted 2/3 -> 1 - (2/3)/2 = 2/3
    assert boundary_similarity({2, 3}, REF, 11, n_t=3)["b"] == pytest.approx(2 / 3)
    # (2, 2, 7) with n_t = 3: distance 1 weighted 1/3 -> 1 - (1/3)/2 = 5/6
    assert boundary_similarity({2, 4}, REF, 11, n_t=3)["b"] == pytest.approx(5 / 6)


def test_no_boundaries_on_either_side_is_full_agreement():
    assert boundary_similarity(set(), set(), 1)["b"] == 1.0
    assert boundary_similarity({1}, set(), 3)["b"] == 0.0


def test_iou_pairing_is_optimal_where_greedy_is_not():
    pred, gt = [(0, 11), (1, 10)], [(0, 10), (8, 20)]
    pairs = optimal_iou_pairs(pred, gt)
    # greedy would take (0,11)-(0,10) = 10/11 first, then (1,10)-(8,20) = 2/19: total 1.0144
    # optimal: (0,11)-(8,20) = 3/20 and (1,10)-(0,10) = 9/10: total 1.05
    assert sorted((i, j) for i, j, _ in pairs) == [(0, 1), (1, 0)]
    assert sum(v for _, _, v in pairs) == pytest.approx(1.05)
    assert 10 / 11 + 2 / 19 < 1.05


def run(pred_events, gt_events, text=SIX):
    return evaluate_spans(story(doc(text, [], pred_events)), story(doc(text, [], gt_events)))


GT3 = [ev("e1", 0, 6), ev("e2", 6, 12), ev("e3", 12, 18)]  # sentences 0-1, 2-3, 4-5: boundaries {2, 4}


def test_exact():
    r = run(GT3, GT3)
    assert r["score"] == 1.0 and r["metrics"]["exact"] == 2 and r["gt_incomplete"] is False


def test_near_miss_and_iou():
    r = run([ev("e1", 0, 9), ev("e2", 9, 12), ev("e3", 12, 18)], GT3)
    # pred boundaries {3, 4}: 4 exact, 3 a near miss of 2 -> B = 1 - 0.5/2 = 0.75
    # IoU: [0,9)-[0,6) = 6/9, [9,12)-[6,12) = 3/6, [12,18) = 1 -> mean (2/3 + 1/2 + 1)/3 = 13/18
    m = r["metrics"]
    assert (m["boundary_similarity"], m["near_misses"], m["exact"]) == (0.75, 1, 1)
    assert m["mean_iou"] == pytest.approx(13 / 18)
    assert r["score"] == pytest.approx((0.75 + 13 / 18) / 2)  # 53/72


def test_gt_event_without_span_is_excluded_and_its_predicted_boundaries_are_not_insertions():
    gt = [ev("e1", 0, 6), ev("e2", agents=["X"]), ev("e3", 12, 18)]  # GT boundaries {2, 4}
    pred = [ev("e1", 0, 6), ev("e2", 6, 9, agents=["X"]), ev("e3", 12, 18), ev("x9", 9, 12)]
    r = run(pred, gt)
    # e2 aligns by participants to the span-less GT e2: its boundary 3 (and that of the extra event x9) is
    # excluded, not an insertion -> B = 1; IoU over the 2 valid GT spans = 1
    assert r["metrics"]["insertions"] == 0 and r["metrics"]["excluded_boundaries"] == 1
    assert r["score"] == 1.0 and r["gt_incomplete"] is True and r["skipped_events"] == 1
    assert sorted(r["extra"]) == ["e2", "x9"]


def test_span_text_disagreeing_with_offsets_is_scored_by_offsets():
    r = run([ev("e1", 0, 6, text="something else"), ev("e2", 6, 12), ev("e3", 12, 18)], GT3)
    assert r["score"] == 1.0


def test_empty_prediction():
    r = run([ev("e1"), ev("e2"), ev("e3")], GT3)
    # no predicted boundary against {2, 4}: 2 deletions -> B = 0; IoU 0
    assert r["score"] == 0.0 and r["metrics"]["deletions"] == 2


def test_out_of_range_prediction_counts_as_no_span():
    r = run([ev("e1", 0, 6), ev("e2", 6, 400), ev("e3", 12, 18)], GT3)
    assert r["metrics"]["boundary_similarity"] == 1.0 and r["metrics"]["mean_iou"] == pytest.approx(2 / 3)
    assert r["missing"] == ["e2"]
    # the unpaired GT span counts 0 in the score too: (B 1 + IoU (1 + 0 + 1) / 3) / 2
    assert r["counts"]["gt_spans"] == 3 and r["counts"]["iou_sum"] == 2.0
    assert r["score"] == pytest.approx(5 / 6)


@pytest.mark.parametrize("gt_events", [[ev("e1"), ev("e2", None, 5)], [ev("e1", 50, 60)], []])
def test_gt_without_valid_span_is_unscored(gt_events):
    r = run(GT3, gt_events)
    assert r["score"] is None and r["gt_incomplete"] is True and r["reason"]


def test_no_text_is_unscored():
    r = run(GT3, GT3, text=None)
    assert r["score"] is None and "text_content" in r["reason"]
