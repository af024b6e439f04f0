"""Composite: weighted, renormalised overall score; aggregate macro/micro; reports; oracle on the sample stories;
bad input never raises."""

import json
from pathlib import Path

import pytest
from tasks.narrative.narrative_builders import SIX, ch, doc, ev, rel

from emocaustics.core.errors import UsageError
from emocaustics.tasks.narrative.aggregate import aggregate, markdown_aggregate, markdown_story
from emocaustics.tasks.narrative.composite import COMPONENTS, parse_weights, score_pair, weighted_overall

SAMPLE = Path(__file__).resolve().parents[3] / "datasets" / "narrative"
# components whose GT is wholly missing in each sample story (by design; see datasets/narrative/README.md)
UNSCORED = {"lantern_zh": set(), "ferry_en": set(), "orchard_zh": set(), "clockmaker_en": {"characters"},
            "well_zh": {"relationships", "sentiment"}, "kite_en": {"actions", "spans"}, "market_zh": set()}


def test_weights():
    assert parse_weights("characters=2, spans=0.5")["characters"] == 2.0
    assert parse_weights(None) == {c: 1.0 for c in COMPONENTS}
    for bad in ("nope=1", "spans=x", "spans=-1"):
        with pytest.raises(UsageError):
            parse_weights(bad)


def test_overall_is_renormalised_over_scored_components():
    # weights a=2, b=1 (b None), c=1: (2 * 1 + 1 * 0.5) / (2 + 1) = 5/6
    assert weighted_overall({"a": 1.0, "b": None, "c": 0.5}, {"a": 2, "b": 1, "c": 1}) == pytest.approx(5 / 6)
    assert weighted_overall({"a": None}, {"a": 1}) is None
    assert weighted_overall({"a": 1.0, "b": 0.0}, {"a": 1, "b": 0}) == 1.0  # weight 0 leaves a component out


def test_composite_of_one_pair():
    gt = doc(SIX, [ch("A", None, "hero"), ch("B")], [ev("e1", 0, 6, agents=["A"], rels=[rel("A", "B", "family")])])
    pred = doc(SIX, [ch("A", None, "hero")], [ev("e1", 0, 6, agents=["A"], rels=[rel("A", "B", "family")])])
    r = score_pair(pred, gt, "characters=2")
    s = r["component_scores"]
    # characters: P 1, R 1/2, F1 2/3, archetype 1 -> (2/3 + 1)/2 = 5/6; events 1; relationships 1 (F1 1, level1 1)
    # sentiment and actions: no GT -> None; spans: one GT span [0,6) covering sentences 0-1, exact -> 1
    assert s["characters"] == pytest.approx(5 / 6) and s["events"] == 1.0 and s["relationships"] == 1.0
    assert s["sentiment"] is None and s["actions"] is None and s["spans"] == 1.0
    # weights characters 2, events 1, relationships 1, spans 1: (2 * 5/6 + 3) / 5 = 14/15
    assert r["overall_score"] == pytest.approx(14 / 15)
    assert r["summary"]["weights_used"]["characters"] == pytest.approx(0.4)
    assert set(r["summary"]["unscored_components"]) == {"sentiment", "actions"}
    assert r["summary"]["correct_events"] == 1 and r["summary"]["total_events"] == 1
    json.dumps(r)  # JSON-able


@pytest.mark.parametrize("pred, gt, role", [
    ("not an object", doc(), "pred"), ({"version": "2"}, doc(), "pred"), (doc(), None, "gt"), (doc(), [1], "gt"),
])
def test_bad_input_comes_back_as_an_error(pred, gt, role):
    r = score_pair(pred, gt)
    assert r["error_in"] == role and r["overall_score"] is None and r["error"]


@pytest.mark.parametrize("name", sorted(UNSCORED))
def test_oracle_scores_one_where_gt_exists_and_none_elsewhere(name):
    gt = json.loads((SAMPLE / "gt" / f"{name}.json").read_text(encoding="utf-8"))
    r = score_pair(gt, gt)
    for c in COMPONENTS:
        if c in UNSCORED[name]:
            assert r["component_scores"][c] is None and r["detailed_results"][c]["gt_incomplete"] is True
        else:
            assert r["component_scores"][c] == 1.0, c
    assert r["overall_score"] == 1.0
    assert r["summary"]["correct_events"] == r["summary"]["total_events"]


@pytest.mark.parametrize("name", sorted(UNSCORED))
def test_hand_made_predictions_score_below_one_and_never_crash(name):
    gt = json.loads((SAMPLE / "gt" / f"{name}.json").read_text(encoding="utf-8"))
    pred = json.loads((SAMPLE / "pred" / f"{name}_pred.json").read_text(encoding="utf-8"))
    r = score_pair(pred, gt)
    assert 0 < r["overall_score"] < 1
    assert {c for c, v in r["component_scores"].items() if v is None} == UNSCORED[name]


def test_sample_gt_has_incomplete_values_of_every_kind():
    text = {p.stem: p.read_text(encoding="utf-8") for p in (SAMPLE / "gt").glob("*.json")}
    assert '"relationships": []' in text["orchard_zh"] and '"relationships": null' in text["orchard_zh"]
    assert '"sentiment": ""' in text["orchard_zh"] and '"action_layer": {}' in text["orchard_zh"]
    assert '"type": ""' in text["orchard_zh"] and '"characters": []' in text["clockmaker_en"]
    assert '"text_span": null' in text["clockmaker_en"]


def test_aggregate_macro_and_micro():
    files = {
        "a": score_pair(doc(SIX, [ch("A")], []), doc(SIX, [ch("A"), ch("B")], [])),  # chars P 1, R 1/2: F1 2/3
        "b": score_pair(doc(SIX, [ch("C")], []), doc(SIX, [ch("C")], [])),  # F1 1
        "c": score_pair(doc(SIX, [ch("D")], []), doc(SIX, [], [])),  # GT missing: None
        "d": score_pair("garbage", doc()),
    }
    agg = aggregate(files, None, {"unpaired_gt": ["e"]})
    c = agg["component_scores"]["characters"]
    # macro (2/3 + 1) / 2 = 5/6; micro: tp 2, fp 0, fn 1 -> P 1, R 2/3, F1 0.8
    assert c["macro"] == pytest.approx(5 / 6) and c["micro"] == pytest.approx(0.8)
    assert (c["scored"], c["unscored"]) == (2, 1)
    assert agg["files"] == 3 and list(agg["skipped"]["errors"]) == ["d"] and agg["skipped"]["unpaired_gt"] == ["e"]
    assert agg["overall_score"] == pytest.approx(5 / 6) and agg["skipped"]["overall_unscored"] == 1
    assert agg["per_file"]["c"]["overall_score"] is None and "error" in agg["per_file"]["d"]
    md = markdown_aggregate(agg)
    assert "| characters | 0.8333 | 0.8000 | 2 | 1 |" in md and "unpaired_gt: e" in md
    assert "# a" in markdown_story("a", files["a"]) and "Not scored" in markdown_story("d", files["d"])


def test_one_storys_pooled_precision_recall_f1_are_its_own():
    """`prf_from_counts` on one story's counts gives the P/R/F1 its component evaluators report."""
    from emocaustics.tasks.narrative.aggregate import prf_from_counts

    r = score_pair(json.loads((SAMPLE / "pred" / "lantern_zh_pred.json").read_text(encoding="utf-8")),
                   json.loads((SAMPLE / "gt" / "lantern_zh.json").read_text(encoding="utf-8")))
    agg = aggregate({"lantern_zh": r})
    for c, prefix in (("characters", ""), ("relationships", "pair_"), ("sentiment", "label_")):
        metrics = r["detailed_results"][c]["metrics"]
        want = [metrics[f"{prefix}{k}"] for k in ("precision", "recall", "f1")]
        assert list(prf_from_counts(c, r["detailed_results"][c]["counts"]).values()) == pytest.approx(want), c
        assert [agg["component_scores"][c][k] for k in ("precision", "recall", "f1")] == pytest.approx(want), c
    events = prf_from_counts("events", r["detailed_results"]["events"]["counts"])
    assert events["recall"] == pytest.approx(r["detailed_results"]["events"]["metrics"]["recall"])
    assert events["precision"] is None and events["f1"] is None  # extra events are not errors (GT-incomplete rule)


def test_failed_story_counts_zero_in_macro_and_its_gt_in_micro():
    from emocaustics.tasks.narrative.composite import failed_result
    from emocaustics.tasks.narrative.schema import parse_story

    gt = doc(SIX, [ch("A"), ch("B")], [])
    files = {"a": score_pair(doc(SIX, [ch("A"), ch("B")], []), gt),  # characters F1 1
             "b": failed_result(parse_story(gt, "gt"), "no prediction file")}
    agg = aggregate(files)
    c = agg["component_scores"]["characters"]
    assert agg["failed"] == {"b": "no prediction file"} and (agg["stories"], agg["files"]) == (2, 1)
    assert c["macro"] == pytest.approx(0.5) and agg["overall_score"] == pytest.approx(
        files["a"]["overall_score"] / 2)
    assert (c["precision"], c["recall"]) == (1.0, 0.5)  # b's two GT characters pooled as missed
    assert "**1 of 2 ground-truth stories failed** (counted 0)" in markdown_aggregate(agg)
