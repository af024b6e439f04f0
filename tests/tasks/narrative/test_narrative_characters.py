"""Characters: exact, partial, alias, empty prediction, GT missing -- figures worked by hand."""

import pytest
from tasks.narrative.narrative_builders import ch, doc, story

from emocaustics.tasks.narrative.characters import Resolver, evaluate_characters


def score(pred_chars, gt_chars):
    return evaluate_characters(story(doc(characters=pred_chars)), story(doc(characters=gt_chars)))


def test_exact():
    r = score([ch("A", None, "hero"), ch("B", None, "mentor")], [ch("A", None, "hero"), ch("B", None, "mentor")])
    assert r["score"] == 1.0 and r["metrics"]["f1"] == 1.0 and r["metrics"]["archetype_accuracy"] == 1.0
    assert r["gt_incomplete"] is False and r["extra"] == [] and r["missing"] == []


def test_partial():
    r = score([ch("A", None, "hero"), ch("B", None, "villain"), ch("D")],
              [ch("A", None, "hero"), ch("B", None, "mentor"), ch("C", None, "ally")])
    # tp 2 (A, B), fp 1 (D), fn 1 (C): P = R = F1 = 2/3; archetypes: A right, B wrong -> 1/2
    m = r["metrics"]
    assert (m["precision"], m["recall"], m["f1"]) == pytest.approx((2 / 3, 2 / 3, 2 / 3))
    assert m["archetype_accuracy"] == 0.5
    assert r["score"] == pytest.approx((2 / 3 + 1 / 2) / 2)  # 7/12
    assert r["extra"] == ["D"] and r["missing"] == ["C"]


def test_alias_and_normalisation():
    gt = [ch("Tom Hale", ["the ferryman", "Tom"], "hero"), ch("阿梅", "梅梅", "hero")]
    # full-width letters and an ideographic space; an alias of GT; a predicted alias that is a GT name
    r = score([ch("ｔｏｍ　ｈａｌｅ", None, "hero"), ch("梅梅", None, "hero")], gt)
    assert r["metrics"]["f1"] == 1.0 and r["score"] == 1.0
    r = score([ch("The Ferryman")], gt)
    assert r["metrics"]["recall"] == 0.5 and r["metrics"]["precision"] == 1.0


def test_matching_is_one_to_one_and_prefers_name_to_name():
    # "Tom" (an alias) and "Tom Hale" (the name) both fit the one GT character: the name wins, "Tom" is a FP
    r = score([ch("Tom", None, "villain"), ch("Tom Hale", None, "hero")], [ch("Tom Hale", ["Tom"], "hero")])
    assert (r["counts"]["tp"], r["counts"]["fp"], r["counts"]["fn"]) == (1, 1, 0)
    assert r["metrics"]["archetype_accuracy"] == 1.0 and r["extra"] == ["Tom"]


def test_empty_prediction_against_present_gt_is_zero_not_none():
    r = score([], [ch("A", None, "hero")])
    # GT present, prediction empty -> missing: recall 0, precision 0 (zero_division), F1 0; no archetype compared
    assert r["score"] == 0.0 and r["metrics"]["archetype_accuracy"] is None and r["missing"] == ["A"]


@pytest.mark.parametrize("gt_chars", [[], None, [ch("", [], "hero")]])
def test_gt_wholly_missing_is_unscored(gt_chars):
    r = score([ch("A", None, "hero")], gt_chars)
    assert r["score"] is None and r["gt_incomplete"] is True and r["reason"]
    assert all(v is None for v in r["metrics"].values())
    assert r["extra"] == ["A"]  # listed, not a false positive


def test_gt_archetype_missing_makes_the_prediction_extra_not_wrong():
    r = score([ch("A", None, "hero"), ch("B", None, "mentor"), ch("C")],
              [ch("A", None, ""), ch("B", None, "mentor"), ch("C", None, None)])
    # A: GT "" + pred -> extra; B: compared, right; C: both empty -> outside. Accuracy 1/1.
    assert r["metrics"]["archetype_accuracy"] == 1.0 and r["metrics"]["archetype_extra"] == 1
    assert r["gt_incomplete"] is True and r["score"] == 1.0


def test_resolver_maps_aliases_to_one_key():
    gt = story(doc(characters=[ch("阿梅", ["梅梅"]), ch("老周", ["周师傅"])])).characters
    pred = story(doc(characters=[ch("小梅", ["阿梅"]), ch("奶奶")])).characters
    r = Resolver(gt, pred)
    assert r("梅梅") == r("阿梅") == r("小梅") == "gt#0"  # 小梅 is a predicted name matched to 阿梅
    assert r("周师傅") == "gt#1" and r("奶奶") == "pred#1" and r("路人") == "name:路人"


def test_characters_score_from_pooled_counts():
    """F1 and archetype accuracy averaged; no archetype compared (a total of 0 or none) leaves F1 alone, and no
    counts at all is not scored: the rule `ratio` says for every component."""
    from emocaustics.tasks.narrative.characters import score_from_counts

    assert score_from_counts({"tp": 1, "fp": 0, "fn": 1}) == 2 / 3
    assert score_from_counts({"tp": 1, "fp": 0, "fn": 1, "archetype_correct": 0, "archetype_total": 0}) == 2 / 3
    assert score_from_counts({"tp": 1, "fp": 0, "fn": 1, "archetype_correct": 1, "archetype_total": 2}) == \
        (2 / 3 + 0.5) / 2
    assert score_from_counts({}) is None
