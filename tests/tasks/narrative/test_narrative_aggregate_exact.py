"""Aggregate and reports by exact value (issue 29): hand-built composite results, every figure worked by hand, and the
Markdown reports compared whole, so that a changed word, separator, count or format is seen."""

import pytest

from emocaustics.tasks.narrative.aggregate import (aggregate, compact, markdown_aggregate, markdown_story,
                                                   prf_counts_row, prf_from_counts, to_json)
from emocaustics.tasks.narrative.composite import COMPONENTS

NONE6 = {c: None for c in COMPONENTS}


def scores(**given):
    return NONE6 | given


# Four stories in the averages (a, b, c failed, e with no scorable GT) and one unreadable (d). Weights: characters 3.
# a: characters tp 1, fp 1, fn 1 -> F1 1/2, no archetype -> 0.5; events 2 of 2 -> 1; overall (3 * 0.5 + 1) / 4 = 0.625
# b: characters tp 2 -> F1 1, archetype 1 of 2 -> (1 + 0.5) / 2 = 0.75; events 1 of 2 -> 0.5;
#    relationships tp 1 -> F1 1, level1 1/1, level2 0/1 -> (1 + 1 + 0) / 3 = 2/3; overall (2.25 + 0.5 + 2/3) / 5 = 41/60
# c (failed): characters fn 2 -> 0, events 0 of 3 -> 0; overall 0
# e: nothing scorable: every score None
FILES = {
    "a": {"overall_score": 0.625, "component_scores": scores(characters=0.5, events=1.0),
          "detailed_results": {"characters": {"counts": {"tp": 1, "fp": 1, "fn": 1, "archetype_correct": 0,
                                                         "archetype_total": 0}},
                               "events": {"counts": {"aligned": 2, "gt_events": 2}}},
          "summary": {"total_events": 2, "predicted_events": 3, "aligned_events": 2, "correct_events": 1,
                      "missed_events": 0, "extra_events": 1}},
    "b": {"overall_score": 41 / 60, "component_scores": scores(characters=0.75, events=0.5, relationships=2 / 3),
          "detailed_results": {"characters": {"counts": {"tp": 2, "fp": 0, "fn": 0, "archetype_correct": 1,
                                                         "archetype_total": 2}},
                               "events": {"counts": {"aligned": 1, "gt_events": 2}},
                               "relationships": {"counts": {"tp": 1, "fp": 0, "fn": 0, "l1_correct": 1, "l1_total": 1,
                                                            "l2_correct": 0, "l2_total": 1}}},
          "summary": {"total_events": 2, "aligned_events": 1}},  # the other totals absent: they count 0
    "c": {"overall_score": 0.0, "component_scores": scores(characters=0.0, events=0.0), "failed": "no prediction file",
          "detailed_results": {"characters": {"counts": {"fn": 2}},
                               "events": {"counts": {"aligned": 0, "gt_events": 3}}},
          "summary": {"total_events": 3, "missed_events": 3}},
    "d": {"overall_score": None, "component_scores": NONE6, "error": "bad json"},
    "e": {"overall_score": None, "component_scores": NONE6, "detailed_results": {}, "summary": {}},
}


def test_aggregate_by_value():
    agg = aggregate(FILES, "characters=3", {"unpaired_gt": ["c", "f"], "duplicates": ["g"], "unpaired_pred": ["x"]})
    c = agg["component_scores"]
    # characters: macro (0.5 + 0.75 + 0) / 3 = 5/12; pooled tp 3, fp 1, fn 3 -> P 3/4, R 1/2, F1 0.6;
    # archetype 1 of 2 -> micro (0.6 + 0.5) / 2 = 0.55
    assert c["characters"] == pytest.approx({"macro": 5 / 12, "micro": 0.55, "scored": 3, "unscored": 1,
                                             "precision": 0.75, "recall": 0.5, "f1": 0.6})
    # events: macro (1 + 0.5 + 0) / 3 = 0.5; pooled 3 aligned of 7 -> 3/7; recall only
    assert c["events"] == pytest.approx({"macro": 0.5, "micro": 3 / 7, "scored": 3, "unscored": 1,
                                         "precision": None, "recall": 3 / 7, "f1": None})
    assert c["relationships"] == pytest.approx({"macro": 2 / 3, "micro": 2 / 3, "scored": 1, "unscored": 3,
                                                "precision": 1.0, "recall": 1.0, "f1": 1.0})
    for name in ("sentiment", "actions", "spans"):
        assert c[name] == {"macro": None, "micro": None, "scored": 0, "unscored": 4, "precision": None,
                           "recall": None, "f1": None}
    # overall: macro over a, b, c (e has none): (0.625 + 41/60 + 0) / 3 = 157/360;
    # micro with weights 3, 1, 1: (3 * 0.55 + 3/7 + 2/3) / 5 = 1153/2100
    assert agg["overall_score"] == pytest.approx(157 / 360)
    assert agg["overall_micro"] == pytest.approx(1153 / 2100)
    assert (agg["stories"], agg["files"], agg["failed"]) == (4, 3, {"c": "no prediction file"})
    assert agg["skipped"] == {"unpaired_gt": ["c", "f"], "duplicates": ["g"], "unpaired_pred": ["x"],
                              "errors": {"d": "bad json"}, "overall_unscored": 1}
    # totals over a, b, c, e: total 2 + 2 + 3, predicted 3, aligned 2 + 1, correct 1, missed 3, extra 1
    assert agg["summary"] == {"total_events": 7, "predicted_events": 3, "aligned_events": 3, "correct_events": 1,
                              "missed_events": 3, "extra_events": 1}
    assert agg["per_file"] == {
        "a": {"overall_score": 0.625, "component_scores": FILES["a"]["component_scores"]},
        "b": {"overall_score": 41 / 60, "component_scores": FILES["b"]["component_scores"]},
        "c": {"overall_score": 0.0, "component_scores": FILES["c"]["component_scores"], "failed": "no prediction file"},
        "d": {"error": "bad json"},
        "e": {"overall_score": None, "component_scores": NONE6}}
    assert list(agg["per_file"]) == ["a", "b", "c", "d", "e"]


def test_markdown_aggregate_whole():
    agg = aggregate(FILES, "characters=3", {"unpaired_gt": ["c", "f"], "duplicates": ["g", "h"],
                                            "unpaired_pred": ["x_pred", "y"]})
    # 157/360 = 0.43611, 1153/2100 = 0.54905, 5/12 = 0.41667, 3/7 = 0.42857, 41/60 = 0.68333; c is failed, so the
    # unpaired-GT line names f only
    assert markdown_aggregate(agg) == """# Narrative annotation scores

**2 prediction file(s) pair with no ground-truth story and were not scored** (a prediction pairs by name: \
`<story>.json` or `<story>_pred.json` for the GT `<story>.json`): x_pred, y

**1 of 4 ground-truth stories failed** (counted 0):
- c: no prediction file

**1 ground-truth stories could not be read** (not scored):
- d: bad json

Overall (macro over 4 ground-truth stories, failures count 0): 0.4361; micro: 0.5490; stories scored from a \
prediction: 3; failed: 1

| component | macro | micro | files scored | files unscored |
|---|---|---|---|---|
| characters | 0.4167 | 0.5500 | 3 | 1 |
| events | 0.5000 | 0.4286 | 3 | 1 |
| relationships | 0.6667 | 0.6667 | 1 | 3 |
| sentiment | — | — | 0 | 4 |
| actions | — | — | 0 | 4 |
| spans | — | — | 0 | 4 |

Precision, recall and F1 per component (micro: counts pooled over the stories; actions and spans have none):

| component | of | precision | recall | F1 |
|---|---|---|---|---|
| characters | characters | 0.7500 | 0.5000 | 0.6000 |
| events | GT events aligned (recall only) | — | 0.4286 | — |
| relationships | relationship pairs | 1.0000 | 1.0000 | 1.0000 |
| sentiment | sentiment labels | — | — | — |

| file | overall | characters | events | relationships | sentiment | actions | spans |
|---|---|---|---|---|---|---|---|
| a | 0.6250 | 0.5000 | 1.0000 | — | — | — | — |
| b | 0.6833 | 0.7500 | 0.5000 | 0.6667 | — | — | — |
| c (failed) | 0.0000 | 0.0000 | 0.0000 | — | — | — | — |
| d | error: bad json | | | | | | |
| e | — | — | — | — | — | — | — |

unpaired_gt: f

duplicates: g, h
"""


def test_markdown_aggregate_of_clean_stories_has_no_skip_notes():
    agg = aggregate({"a": FILES["a"]})
    # default weights: (0.5 + 1) / 2 = 0.75 both ways (one story: micro = its own scores)
    assert markdown_aggregate(agg).split("\n")[:4] == [
        "# Narrative annotation scores", "",
        "Overall (macro over 1 ground-truth stories, failures count 0): 0.6250; micro: 0.7500; stories scored from a "
        "prediction: 1; failed: 0", ""]


ISSUE = {"role": "gt", "path": "$.narrative_events[1]", "message": "span end before start"}
OUT_OF_TAXONOMY = {"role": "pred", "path": "$.characters[0].archetype", "message": "'sage' not in the taxonomy"}


def test_markdown_story_whole():
    result = {
        "overall_score": 0.625,
        "detailed_results": {
            "characters": {"score": 0.5, "gt_incomplete": False, "skipped_events": 0, "reason": None,
                           "metrics": {"precision": 0.5, "recall": 0.5, "f1": 0.5, "archetype_accuracy": None,
                                       "gt_characters": 2},
                           "missing": ["B"], "extra": []},
            "events": {"score": None, "gt_incomplete": True, "skipped_events": 2,
                       "reason": "ground truth has no narrative events", "metrics": {"recall": None}, "missing": [],
                       "extra": [f"p{k}" for k in range(1, 22)]},  # 21: the first 20 are shown
            "relationships": {"score": 1.0, "gt_incomplete": True, "skipped_events": 1,
                              "reason": "1 GT event(s) without relationships skipped",
                              "metrics": {"pair_f1": 1.0, "false_positives": 0},
                              "missing": [f"e{k}: A -> B" for k in range(1, 22)], "extra": ["e9: X -> Y"]},
        },
        "summary": {"total_events": 4, "predicted_events": 5, "aligned_events": 3, "correct_events": 1,
                    "missed_events": 1, "extra_events": 2, "issues": [ISSUE], "out_of_taxonomy": [OUT_OF_TAXONOMY]},
    }
    p20 = ", ".join(f"p{k}" for k in range(1, 21))
    e20 = ", ".join(f"e{k}: A -> B" for k in range(1, 21))
    assert markdown_story("s1", result) == f"""# s1

**Overall score**: 0.6250

| component | score | GT incomplete | skipped events | note |
|---|---|---|---|---|
| characters | 0.5000 | no | 0 |  |
| events | — | yes | 2 | ground truth has no narrative events |
| relationships | 1.0000 | yes | 1 | 1 GT event(s) without relationships skipped |

Events: 4 in GT, 5 predicted, 3 aligned, 1 correct, 1 missed, 2 extra.

- **characters**: precision 0.5000, recall 0.5000, f1 0.5000, gt_characters 2
  - missing: B
  - extra (not errors): {p20}
- **relationships**: pair_f1 1.0000, false_positives 0
  - missing: {e20}
  - extra (not errors): e9: X -> Y

Issues:
- gt $.narrative_events[1]: span end before start
- pred $.characters[0].archetype: 'sage' not in the taxonomy
"""


def test_markdown_story_lists_out_of_taxonomy_labels_without_issues():
    result = {"overall_score": None, "detailed_results": {},
              "summary": {"total_events": 0, "predicted_events": 0, "aligned_events": 0, "correct_events": 0,
                          "missed_events": 0, "extra_events": 0, "issues": [], "out_of_taxonomy": [OUT_OF_TAXONOMY]}}
    assert markdown_story("s2", result) == """# s2

**Overall score**: —

| component | score | GT incomplete | skipped events | note |
|---|---|---|---|---|

Events: 0 in GT, 0 predicted, 0 aligned, 0 correct, 0 missed, 0 extra.


Issues:
- pred $.characters[0].archetype: 'sage' not in the taxonomy
"""


def test_compact_keeps_scores_counts_and_totals_only():
    full = {"overall_score": 0.5, "component_scores": scores(events=0.5),
            "detailed_results": {"events": {"score": 0.5, "counts": {"aligned": 1, "gt_events": 2}, "missing": ["g2"]}},
            "summary": {"total_events": 2, "aligned_events": 1, "issues": [ISSUE]}, "failed": "prediction unusable"}
    assert compact(full) == {"overall_score": 0.5, "component_scores": scores(events=0.5),
                             "detailed_results": {"events": {"counts": {"aligned": 1, "gt_events": 2}}},
                             "summary": {"total_events": 2, "predicted_events": 0, "aligned_events": 1,
                                         "correct_events": 0, "missed_events": 0, "extra_events": 0},
                             "failed": "prediction unusable"}
    assert "failed" not in compact(full | {"failed": None})
    assert compact({"overall_score": 0.3, "component_scores": NONE6, "error": "bad json", "summary": {}}) == {
        "overall_score": None, "component_scores": NONE6, "error": "bad json"}


def test_prf_counts_row_by_value():
    assert prf_counts_row(None) == {
        "n_characters_tp": None, "n_characters_fp": None, "n_characters_fn": None, "n_events_aligned": None,
        "n_events_gt_events": None, "n_relationships_tp": None, "n_relationships_fp": None, "n_relationships_fn": None,
        "n_sentiment_tp": None, "n_sentiment_fp": None, "n_sentiment_fn": None}
    result = {"component_scores": scores(characters=0.8, events=0.25),
              "detailed_results": {"characters": {"counts": {"tp": 2.0, "fp": 1}},  # fn absent: 0
                                   "events": {"counts": {"aligned": 1, "gt_events": 4}}}}
    assert prf_counts_row(result) == {
        "n_characters_tp": 2, "n_characters_fp": 1, "n_characters_fn": 0, "n_events_aligned": 1,
        "n_events_gt_events": 4, "n_relationships_tp": None, "n_relationships_fp": None, "n_relationships_fn": None,
        "n_sentiment_tp": None, "n_sentiment_fp": None, "n_sentiment_fn": None}


def test_prf_from_counts_reads_absent_counts_as_zero():
    # events: 0 aligned of 2 -> recall 0; 1 aligned of none -> not measured
    assert prf_from_counts("events", {"gt_events": 2}) == {"precision": None, "recall": 0.0, "f1": None}
    assert prf_from_counts("events", {"aligned": 1}) == {"precision": None, "recall": None, "f1": None}
    # tp absent, fp 1: P 0/1, R 0 (no GT) -> 0, 0, 0; fp absent: tp 1, fn 1 -> P 1, R 1/2, F1 2/3
    assert prf_from_counts("characters", {"fp": 1}) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    assert prf_from_counts("sentiment", {"tp": 1, "fn": 1}) == pytest.approx(
        {"precision": 1.0, "recall": 0.5, "f1": 2 / 3})
    # fn absent: tp 1, fp 1 -> P 1/2, R 1, F1 2/3; nothing at all -> not measured
    assert prf_from_counts("relationships", {"tp": 1, "fp": 1}) == pytest.approx(
        {"precision": 0.5, "recall": 1.0, "f1": 2 / 3})
    assert prf_from_counts("relationships", {}) == {"precision": None, "recall": None, "f1": None}


def test_to_json_keeps_non_ascii_and_indents_by_two():
    assert to_json({"名": [1]}) == '{\n  "名": [\n    1\n  ]\n}'


def test_pooled_counts_add_so_a_zero_score_is_never_negative_zero():
    # c alone: events 0 aligned of 3 -> micro 0 / 3 = 0.0; pooling by subtraction gives 0 / -3 = -0.0, which equals 0.0
    # but prints as -0.0 in the JSON and -0.0000 in the report (aggregate.x_aggregate__mutmut_32, narrative_scores.md)
    agg = aggregate({"c": FILES["c"]})
    events = agg["component_scores"]["events"]
    assert repr(events["micro"]) == "0.0"
    assert "-0.0" not in to_json(agg) and "-0.0000" not in markdown_aggregate(agg)
