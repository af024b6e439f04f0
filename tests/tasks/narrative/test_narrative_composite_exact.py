"""Composite scoring by exact value (issue 29): the weights parser's messages, the renormalised overall score with
absent and zero weights, the summary's issues and taxonomy findings with their roles, the failed-story floor, and
the weights, taxonomy and n_t that score_story passes on."""

import pytest
from tasks.narrative.narrative_builders import SIX, ch, doc, ev, rel, story

from emocaustics.core.errors import UsageError
from emocaustics.tasks.narrative.composite import (COMPONENTS, error_result, failed_result, parse_weights, score_pair,
                                                   score_story, weighted_overall)
from emocaustics.tasks.narrative.taxonomy import Taxonomy


def test_parse_weights_reads_a_dict_and_names_the_bad_value():
    assert parse_weights({"characters": 2, "spans": "0.5"}) == {c: 1.0 for c in COMPONENTS} | {"characters": 2.0,
                                                                                                "spans": 0.5}
    # "spans" alone: no "=", so the value is "" -- not a number
    with pytest.raises(UsageError, match=r"^weight for 'spans' must be a number, got ''$"):
        parse_weights("spans")
    # only the first "=" splits: the value "1=2" is not a number (the name stays "spans")
    with pytest.raises(UsageError, match=r"^weight for 'spans' must be a number, got '1=2'$"):
        parse_weights("spans=1=2")


def test_weighted_overall_leaves_out_components_without_a_weight():
    # "x" has no weight at all: left out -> 1.0 * 1 / 1
    assert weighted_overall({"a": 1.0, "x": 0.5}, {"a": 1}) == 1.0


def test_error_result_by_value():
    assert error_result("bad json", "gt") == {"overall_score": None, "component_scores": {c: None for c in COMPONENTS},
                                              "detailed_results": {}, "summary": {}, "error": "bad json",
                                              "error_in": "gt"}


# Ground truth: SIX (18 characters), one character A whose archetype "wizard" is outside the taxonomy, e1 = [0, 6) and
# e2 = [12, 40) (outside the text). Prediction: another text, character A "oracle", p1 = [0, 6) and p2 = [30, 50).
GT = doc(SIX, [ch("A", None, "wizard")], [ev("e1", 0, 6, agents=["A"]), ev("e2", 12, 40, agents=["A"])])
PRED = doc("y" * 60, [ch("A", None, "oracle")], [ev("p1", 0, 6, agents=["A"]), ev("p2", 30, 50, agents=["A"])])


def test_summary_issues_and_taxonomy_findings_by_role():
    r = score_pair(PRED, GT, "spans=0")
    s = r["summary"]
    assert s["issues"] == [
        {"kind": "span_out_of_range", "role": "gt", "path": "$.narrative_events[1].text_span",
         "message": "offsets [12, 40) fall outside the text (length 18)"},
        # the prediction's spans are placed in the GT text
        {"kind": "span_out_of_range", "role": "pred", "path": "$.narrative_events[1].text_span",
         "message": "offsets [30, 50) fall outside the text (length 18)"},
        {"kind": "text_mismatch", "role": "pred", "path": "$.source_info.text_content",
         "message": "prediction text_content differs from the ground truth's; spans placed in the GT text"}]
    assert s["out_of_taxonomy"] == [
        {"kind": "out_of_taxonomy", "role": "gt", "path": "$.characters[0].archetype",
         "message": "archetype 'wizard' is not in the taxonomy"},
        {"kind": "out_of_taxonomy", "role": "pred", "path": "$.characters[0].archetype",
         "message": "archetype 'oracle' is not in the taxonomy"}]
    # characters 1 (F1 1, archetype compared as a string: wrong -> (1 + 0) / 2 = 0.5); events: p1-e1 by span (IoU 1),
    # p2-e2 by participants (the spans are invalid): J 1 -> 0.5 * 1 + 0.5 * 0 (no action type) = 0.5 > 0: recall 1;
    # spans weighted 0: left out of the weights used
    assert r["component_scores"]["characters"] == 0.5 and r["component_scores"]["events"] == 1.0
    assert s["weights_used"] == {"characters": 0.5, "events": 0.5}
    assert s["gt_incomplete_components"] == ["relationships", "sentiment", "actions", "spans"]
    assert r["overall_score"] == 0.75


def test_no_mismatch_issue_when_the_texts_agree_or_one_is_absent():
    same_text = doc(SIX, [], [ev("e1", 0, 6)])
    assert score_pair(same_text, same_text)["summary"]["issues"] == []
    # the prediction has no text: its spans are placed in the GT's and scored there (spans 1, not unscored)
    r = score_pair(doc(None, [], [ev("e1", 0, 6)]), same_text)
    assert r["summary"]["issues"] == [] and r["component_scores"]["spans"] == 1.0
    r = score_pair(same_text, doc(None, [], [ev("e1", 0, 6)]))
    assert r["summary"]["issues"] == [] and r["component_scores"]["spans"] == 1.0


# GT sentences 0-1 | 2-4 | 5 (boundaries {2, 5}); prediction 0-1 | 2 | 3-5 (boundaries {2, 3}): 3 is 2 sentences from
# 5. Events align in order (IoU 1, 3/9 and 3/9 beat the alternative 6/12 + 0).
NEAR = (doc(SIX, [], [ev("p1", 0, 6), ev("p2", 6, 9), ev("p3", 9, 18)]),
        doc(SIX, [], [ev("e1", 0, 6), ev("e2", 6, 15), ev("e3", 15, 18)]))


def test_score_story_passes_n_t_on_and_defaults_to_two():
    pred, gt = story(NEAR[0]), story(NEAR[1])
    # n_t = 2: distance 2 is no near miss: 1 match, 2 additions -> B = 1 - 2/3 = 1/3
    assert score_story(pred, gt)["detailed_results"]["spans"]["metrics"]["boundary_similarity"] == pytest.approx(1 / 3)
    # n_t = 3: a transposition weighted 2/3 -> B = 1 - (2/3) / 2 = 2/3
    r = score_story(pred, gt, n_t=3)
    assert r["detailed_results"]["spans"]["metrics"]["boundary_similarity"] == pytest.approx(2 / 3)


def test_score_story_uses_the_given_taxonomy():
    # a taxonomy where joy is negative: GT joy vs predicted fear -> labels wrong (F1 0), polarity right (1) -> 0.5;
    # with the default taxonomy (joy positive, fear negative) the polarity would be wrong too -> 0
    tax = Taxonomy(relationships={}, sentiments={"joy": "negative", "fear": "negative"}, categories={}, archetypes=())
    pred = story(doc(SIX, [], [ev("e1", 0, 6, rels=[rel("A", "B", sentiment=["fear"])])]))
    gt = story(doc(SIX, [], [ev("e1", 0, 6, rels=[rel("A", "B", sentiment=["joy"])])]))
    assert score_story(pred, gt)["component_scores"]["sentiment"] == 0.0
    assert score_story(pred, gt, taxonomy=tax)["component_scores"]["sentiment"] == 0.5


def test_failed_result_keeps_weights_taxonomy_and_unscored_components():
    gt = story(doc(SIX, [ch("A", None, "hero")], [ev("e1", 0, 6)]))
    tax = Taxonomy(relationships={}, sentiments={}, categories={}, archetypes=("mentor",))
    r = failed_result(gt, "no prediction file", "characters=3", tax)
    # characters, events and spans have GT: 0 each; relationships, sentiment and actions have none: None
    assert r["component_scores"] == {"characters": 0.0, "events": 0.0, "relationships": None, "sentiment": None,
                                     "actions": None, "spans": 0.0}
    assert r["overall_score"] == 0.0 and r["failed"] == "no prediction file"
    assert r["summary"]["weights_used"] == {"characters": 0.6, "events": 0.2, "spans": 0.2}  # 3, 1, 1 of 5
    assert [i["message"] for i in r["summary"]["out_of_taxonomy"]] == ["archetype 'hero' is not in the taxonomy"]


def test_failed_result_of_a_gt_with_nothing_to_score_is_none():
    r = failed_result(story(doc(SIX, [], [])), "prediction unusable")
    assert r["overall_score"] is None and r["component_scores"] == {c: None for c in COMPONENTS}


def test_parse_weights_error_messages_in_full():
    with pytest.raises(UsageError, match=r"^unknown component 'nope' in weights; components: characters, events, "
                                         r"relationships, sentiment, actions, spans$"):
        parse_weights("nope=1")
    with pytest.raises(UsageError, match=r"^weight for 'spans' must not be negative$"):
        parse_weights("spans=-1")


def test_score_pair_names_the_unreadable_side_and_passes_n_t_and_taxonomy_on():
    assert score_pair("x", doc())["error"] == "prediction, field '$': expected an object, found a string"
    assert score_pair(doc(), "x")["error"] == "ground truth, field '$': expected an object, found a string"
    # n_t: default 2 -> B 1/3, 3 -> 2/3 (the NEAR pair above)
    spans_b = lambda r: r["detailed_results"]["spans"]["metrics"]["boundary_similarity"]  # noqa: E731
    assert spans_b(score_pair(*NEAR)) == pytest.approx(1 / 3)
    assert spans_b(score_pair(*NEAR, n_t=3)) == pytest.approx(2 / 3)
    tax = Taxonomy(relationships={}, sentiments={"joy": "negative", "fear": "negative"}, categories={}, archetypes=())
    pred = doc(SIX, [], [ev("e1", 0, 6, rels=[rel("A", "B", sentiment=["fear"])])])
    gt = doc(SIX, [], [ev("e1", 0, 6, rels=[rel("A", "B", sentiment=["joy"])])])
    assert score_pair(pred, gt, taxonomy=tax)["component_scores"]["sentiment"] == 0.5


def test_failed_result_zeroes_a_floor_above_zero():
    # one GT event over the whole text: no GT boundary, so the empty prediction's B is 1 and its spans floor
    # (1 + IoU 0) / 2 = 0.5; events 0: floor overall 0.25 -- a failed story still counts 0 everywhere
    r = failed_result(story(doc(SIX, [], [ev("e1", 0, 18)])), "no prediction file")
    assert r["overall_score"] == 0.0
    assert r["component_scores"] == {"characters": None, "events": 0.0, "relationships": None, "sentiment": None,
                                     "actions": None, "spans": 0.0}
    assert set(r) == {"overall_score", "component_scores", "detailed_results", "summary", "failed"}
