"""The shared ground-truth-missing rule and the arithmetic helpers."""

import pytest

from emocaustics.tasks.narrative.gtmissing import Outcome, Tally, classify, is_empty, mean_of, norm, prf, unscored


@pytest.mark.parametrize("value", [None, "", "   ", [], {}, ()])
def test_empty_values(value):
    assert is_empty(value)


@pytest.mark.parametrize("value", ["a", ["a"], {"a": 1}, 0, False])
def test_present_values(value):
    assert not is_empty(value)


def test_the_four_outcomes():
    assert classify(None, "x") is Outcome.EXTRA
    assert classify("", []) is Outcome.BOTH_EMPTY
    assert classify(["a"], "") is Outcome.MISSING
    assert classify("a", "b") is Outcome.COMPARED


def test_tally_keeps_extra_and_both_empty_out_of_the_denominator():
    t = Tally()
    t.add(Outcome.COMPARED, True)
    t.add(Outcome.COMPARED, False)
    t.add(Outcome.MISSING)
    t.add(Outcome.EXTRA)
    t.add(Outcome.BOTH_EMPTY)
    # 1 right of (2 compared + 1 missing) = 1/3; the extra and the both-empty value are outside
    assert t.accuracy() == pytest.approx(1 / 3)
    assert (t.total, t.gt_empty) == (3, 2)
    assert Tally().accuracy() is None


def test_norm_folds_case_width_and_whitespace():
    assert norm("ＴＯＭ　Hale ") == norm("tom hale") == "tomhale"


def test_prf():
    assert prf(0, 0, 0) == (None, None, None)
    assert prf(0, 0, 3) == (0.0, 0.0, 0.0)  # nothing predicted against present GT: 0, not None
    p, r, f = prf(2, 1, 1)
    assert (p, r, f) == pytest.approx((2 / 3, 2 / 3, 2 / 3))
    assert mean_of([None, 0.5, 1.0]) == 0.75 and mean_of([None]) is None


def test_unscored_is_none_never_zero_or_one():
    r = unscored("x", "no GT", 4, metrics=("a",))
    assert r["score"] is None and r["metrics"] == {"a": None}
    assert r["gt_incomplete"] is True and r["reason"] == "no GT" and r["skipped_events"] == 4
