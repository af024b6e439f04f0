"""Correlations, Mann-Whitney and significance matrices: the edge cases and messages with exact expected values
(issue 29, mutation testing)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from emocaustics.stats import correlation as C
from emocaustics.stats import mannwhitney as MW
from emocaustics.stats import matrix as X


def test_correlate_edges():
    # two points are enough for a correlation: a falling pair is -1 by every method
    assert C.correlate([1.0, 2.0], [2.0, 1.0]) == pytest.approx(-1.0)
    assert C.correlate([1.0, 2.0], [2.0, 1.0], "kendall") == pytest.approx(-1.0)
    assert math.isnan(C.correlate([], []))  # no points: NaN, not an IndexError
    assert math.isnan(C.correlate([1.0, 2.0, 3.0], [4.0, 4.0, 4.0]))  # constant y
    assert math.isnan(C.correlate([1, None, 3], [1.0, 2.0, 3.0]))  # a missing value reads as NaN
    with pytest.raises(ValueError) as err:
        C.correlate([1.0, 2.0], [1.0, 2.0, 3.0])
    assert str(err.value) == "correlation needs two vectors of one length, got (2,) and (3,)"
    with pytest.raises(ValueError) as err:
        C.correlate([1.0, 2.0], [1.0, 2.0], "tau")
    assert str(err.value) == "method must be one of ('pearson', 'spearman', 'kendall'), got 'tau'"


def test_mannwhitney_missing_values_read_as_nan():
    assert math.isnan(MW.mannwhitney_p([1.0, None], [1.0, 2.0], "less"))
    assert math.isnan(MW.mannwhitney_p([1.0, 2.0], [None, 2.0], "less"))
    with pytest.raises(ValueError) as err:
        MW.mannwhitney_p([1.0], [2.0], "up")
    assert str(err.value) == "alternative must be one of ('less', 'greater', 'two-sided'), got 'up'"


def test_significance_frame_types_and_corner():
    empty = X.significance_frame(np.zeros((0, 0)), [])
    assert empty.schema == {"": pl.Utf8} and empty.height == 0
    ints = X.significance_frame(np.array([[1, 0], [0, 1]]), ["a", "b"], corner="model")
    assert ints.schema == {"model": pl.Utf8, "a": pl.Float64, "b": pl.Float64}
    assert ints.rows() == [("a", 1.0, 0.0), ("b", 0.0, 1.0)]
    with pytest.raises(ValueError) as err:
        X.significance_frame(np.ones((1, 1)), ["a"], corner="a")
    assert str(err.value) == "corner name 'a' collides with a label"


def test_matrix_from_pairs_null_is_nan():
    pairs = pl.DataFrame({"config_a": ["a", "b"], "config_b": ["b", "c"], "p_holm": [None, 0.3]},
                         schema={"config_a": pl.Utf8, "config_b": pl.Utf8, "p_holm": pl.Float64})
    got = X.matrix_from_pairs(pairs, ["a", "b", "c"])
    assert np.isnan(got[0, 1]) and np.isnan(got[1, 0]) and got[1, 2] == got[2, 1] == 0.3
    assert got[0, 2] == 1.0 and got[0, 0] == 1.0


def test_mannwhitney_one_value_on_a_side():
    # one value above all three others: U = 3 of 3, exact P(U >= 3) = 1 / C(4, 1) = 0.25
    assert MW.mannwhitney_p([5.0], [1.0, 2.0, 3.0], "greater") == pytest.approx(0.25)
    assert MW.mannwhitney_p([1.0, 2.0, 3.0], [5.0], "less") == pytest.approx(0.25)


def test_correlate_missing_value_in_y():
    assert math.isnan(C.correlate([1.0, 2.0, 3.0], [1, None, 3]))
