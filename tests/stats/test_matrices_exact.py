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


@pytest.fixture
def saved_figures(monkeypatch):
    """The figures `plot_significance` saves, caught at `Figure.savefig` (the function closes them after)."""
    from matplotlib.figure import Figure

    figs = []
    original = Figure.savefig

    def record(self, *args, **kwargs):
        figs.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", record)
    return figs


def test_heat_map_content(saved_figures, tmp_path):
    p = np.array([[1.0, 0.01, 0.5], [0.99, 1.0, np.nan], [0.05, 0.07, 1.0]])
    X.plot_significance(p, ["a", "b", "c"], None, annotate=True, title="T")
    fig = saved_figures[0]
    ax, bar = fig.axes
    image = ax.images[0]
    assert fig.get_size_inches().tolist() == [4.0, 3.0]  # 3 labels: the 3-inch floor, plus 1 for the colour bar
    # masked: p > 0.1, NaN and the diagonal; p = 0.05 and 0.07 and 0.01 stay
    assert image.get_array().mask.tolist() == [[True, False, True], [True, True, True], [False, False, True]]
    assert (image.norm.vmin, image.norm.vcenter, image.norm.vmax) == (0.0, 0.05, 0.1)
    assert image.cmap.name == "significance" and image.cmap.get_bad().tolist() == [1.0, 1.0, 1.0, 1.0]
    np.testing.assert_allclose(image.cmap(0.0), [0.0, 0xA1 / 255, 0.0, 1.0])  # LOW_COLOUR #00A100
    np.testing.assert_allclose(image.cmap(1.0), [0.8, 0.8, 0.0, 1.0])  # HIGH_COLOUR #cccc00
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    assert [t.get_rotation() for t in ax.get_xticklabels()] == [90.0] * 3
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "c"]
    assert ax.get_xticks(minor=True).tolist() == ax.get_yticks(minor=True).tolist() == [-0.5, 0.5, 1.5, 2.5]
    assert [(t.get_text(), t.get_color()) for t in ax.texts] == [
        ("0.01", "white"), ("0.5", "#222"), ("0.99", "#222"), ("n/a", "#222"), ("0.05", "white"), ("0.07", "#222")]
    assert ax.get_title() == "T"
    assert bar.get_yticks().tolist() == [0.0, 0.05, 0.1]


def test_heat_map_size_grows_with_labels_and_options(saved_figures, tmp_path):
    p = np.full((6, 6), 0.2)
    p[0, 1] = 0.02
    out = X.plot_significance(p, list("abcdef"), tmp_path / "sub" / "m.png", threshold=0.3, center=0.1, above="red")
    assert out == tmp_path / "sub" / "m.png" and out.exists()
    fig = saved_figures[0]
    ax = fig.axes[0]
    image = ax.images[0]
    np.testing.assert_allclose(fig.get_size_inches(), [0.45 * 6 + 1.5 + 1.0, 0.45 * 6 + 1.5])
    assert (image.norm.vmin, image.norm.vcenter, image.norm.vmax) == (0.0, 0.1, 0.3)
    assert image.cmap.get_bad().tolist() == [1.0, 0.0, 0.0, 1.0]
    assert not image.get_array().mask[0, 1] and not image.get_array().mask[2, 3] and image.get_array().mask[4, 4]
    assert len(ax.texts) == 0 and ax.get_title() == ""  # no annotation, no title by default
