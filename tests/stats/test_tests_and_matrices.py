"""Mann-Whitney, correlations and significance matrices."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from emocaustics.stats import correlation as C
from emocaustics.stats import matrix as X
from emocaustics.stats import mannwhitney as MW


def test_mannwhitney_one_sided():
    # [0, 1, 2] all below [3, 4, 5], no ties, small -> exact: P = 1 / C(6, 3) = 0.05
    assert MW.mannwhitney_p([0, 1, 2], [3, 4, 5], "less") == pytest.approx(0.05)
    assert MW.mannwhitney_p([0, 1, 2], [3, 4, 5], "greater") == pytest.approx(1.0)
    assert math.isnan(MW.mannwhitney_p([], [1, 2], "less"))
    assert math.isnan(MW.mannwhitney_p([1.0, float("nan")], [1, 2], "less"))
    with pytest.raises(ValueError, match="alternative"):
        MW.mannwhitney_p([1], [2], "bigger")
    m = MW.mannwhitney_matrix([[3, 4, 5], [0, 1, 2]])
    assert m[0, 1] == pytest.approx(0.05) and m[0, 0] == 1.0


def test_correlations():
    x, y = [1.0, 2.0, 3.0, 4.0], [1.0, 3.0, 2.0, 4.0]
    got = {m: C.correlate(x, y, m) for m in C.METHODS}
    # Pearson: deviations (-1.5,-.5,.5,1.5) both; cross 2.25+(-.5*.5=-.25)... = 4 / 5 = 0.8
    assert got["pearson"] == pytest.approx(0.8)
    assert got["spearman"] == pytest.approx(0.8)  # ranks equal the values here
    assert got["kendall"] == pytest.approx(4 / 6)  # 5 concordant, 1 discordant of 6 pairs: (5 - 1) / 6
    assert math.isnan(C.correlate([1, 1, 1], [1, 2, 3]))
    assert math.isnan(C.correlate([1], [2]))
    with pytest.raises(ValueError):
        C.correlate([1, 2], [1, 2, 3])


def test_split_matrix():
    m = C.split_correlation_matrix({"a": [1, 2, 3], "b": [1, 2, 4]})
    assert m[0, 1] == pytest.approx(3 / math.sqrt(2 * 42 / 9)) and m[1, 0] == pytest.approx(1.0)
    assert np.isnan(m[0, 0])


def test_significance_frame_and_pairs_matrix():
    p = np.array([[1.0, 0.01], [0.9, 1.0]])
    f = X.significance_frame(p, ["a", "b"])
    assert f.columns == ["", "a", "b"] and f.row(0) == ("a", 1.0, 0.01)
    with pytest.raises(ValueError, match="shape"):
        X.significance_frame(p, ["a"])
    pairs = pl.DataFrame({"config_a": ["a"], "config_b": ["b"], "p_holm": [0.02]})
    np.testing.assert_allclose(X.matrix_from_pairs(pairs, ["a", "b"]), [[1, 0.02], [0.02, 1]])


def test_heat_map_files(tmp_path):
    p = np.array([[1.0, 0.01, 0.5], [0.99, 1.0, np.nan], [0.5, 0.07, 1.0]])
    png = X.plot_significance(p, ["a", "b", "c"], tmp_path / "m.png")
    svg = X.plot_significance(p, ["a", "b", "c"], tmp_path / "m.svg")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in svg.read_text()
    text = X.plot_significance(p, ["a", "b", "c"], None)
    assert isinstance(text, str) and text.startswith("<svg")
