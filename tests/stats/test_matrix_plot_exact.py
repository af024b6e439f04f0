"""The significance heat map's styling and files, read back from the saved figure and the written bytes (issue 29:
the mutants of `plot_significance` that the content test in test_matrices_exact.py leaves alive)."""

from __future__ import annotations

import re
import struct

import numpy as np
import pytest
from matplotlib.colors import to_rgba

from emocaustics.stats import matrix as X


@pytest.fixture
def saved(monkeypatch):
    """(figure, tight bounding box in inches) of each figure `plot_significance` saves, caught at `Figure.savefig`.
    The tight box is measured before the save, on an Agg canvas, as savefig's `bbox_inches="tight"` measures it
    (plus its 0.1 inch pad)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    caught = []
    original = Figure.savefig

    def record(self, *args, **kwargs):
        box = self.get_tightbbox(FigureCanvasAgg(self).get_renderer()).padded(0.1)
        caught.append((self, box))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", record)
    return caught


P = np.array([[1.0, 0.01, 0.1], [0.99, 1.0, np.nan], [0.05, 0.07, 1.0]])


def test_grid_ticks_colour_bar_and_cell_text(saved):
    X.plot_significance(P, ["a", "b", "c"], None, annotate=True)
    fig, _ = saved[0]
    ax, bar = fig.axes
    image = ax.images[0]
    # p exactly at the threshold (0.1, cell [0, 2]) is drawn, not masked: the mask is p > threshold
    assert image.get_array().mask.tolist() == [[True, False, False], [True, True, True], [False, False, True]]
    # white 1.5-pt lines between the cells: the grid is on the minor ticks (at -0.5, 0.5, ...), not the major ones
    for axis in (ax.xaxis, ax.yaxis):
        minor, major = axis.get_minor_ticks(), axis.get_major_ticks()
        assert len(minor) == 4 and all(t.gridline.get_visible() for t in minor)
        assert [to_rgba(t.gridline.get_color()) for t in minor] == [(1.0, 1.0, 1.0, 1.0)] * 4
        assert [t.gridline.get_linewidth() for t in minor] == [1.5] * 4
        assert not any(t.gridline.get_visible() for t in major)
        # minor tick marks hidden (length 0); the labelled major ticks keep matplotlib's 3.5-pt marks
        assert [t.tick1line.get_markersize() for t in minor] == [0.0] * 4
        assert [t.tick1line.get_markersize() for t in major] == [3.5] * 3
    # the colour bar belongs to the heat map (its colour map and norm) and is 0.9 of the heat map's height:
    # original axes boxes 0.88 - 0.11 = 0.77 high -> 0.693
    assert image.colorbar is not None and image.colorbar.ax is bar
    assert image.colorbar.cmap.name == "significance" and image.colorbar.norm is image.norm
    ax_box, bar_box = ax.get_position(original=True), bar.get_position(original=True)
    assert bar_box.height == pytest.approx(0.9 * ax_box.height, abs=1e-12)
    assert bar_box.height == pytest.approx(0.9 * (0.88 - 0.11), abs=1e-12)
    # cell text: 8 pt, centred on the cell both ways; white on p <= 0.05, dark above
    assert [(t.get_text(), t.get_position()) for t in ax.texts] == [
        ("0.01", (1, 0)), ("0.1", (2, 0)), ("0.99", (0, 1)), ("n/a", (2, 1)), ("0.05", (0, 2)), ("0.07", (1, 2))]
    assert {(t.get_fontsize(), t.get_ha(), t.get_va()) for t in ax.texts} == {(8.0, "center", "center")}


def test_a_missing_p_given_as_none_is_drawn_as_missing(saved):
    # a nested list with None (a pair without a test) is read as NaN: masked and annotated "n/a"
    X.plot_significance([[1.0, None], [0.02, 1.0]], ["a", "b"], None, annotate=True)
    ax = saved[0][0].axes[0]
    assert ax.images[0].get_array().mask.tolist() == [[True, True], [False, True]]
    assert [t.get_text() for t in ax.texts] == ["n/a", "0.02"]


def test_svg_text_is_cropped_to_the_drawing(saved):
    svg = X.plot_significance(P, ["a", "b", "c"], None, annotate=True)
    _, box = saved[0]
    width, height = (float(v) for v in re.match(r'<svg [^>]*width="([\d.]+)pt" height="([\d.]+)pt"', svg).groups())
    # bbox_inches="tight": the page is the drawing's box plus 0.1 inch, in points (72 per inch), not the 4 x 3 inch
    # figure (288 x 216 pt); the SVG and Agg renderers measure text a fraction of a point apart
    assert (width, height) == (pytest.approx(box.width * 72, abs=1.0), pytest.approx(box.height * 72, abs=1.0))
    assert abs(width - 288) > 20 and abs(height - 216) > 10


def test_png_is_cropped_and_parent_folders_made(saved, tmp_path):
    out = X.plot_significance(P, ["a", "b", "c"], tmp_path / "two" / "levels" / "m.png")
    assert out == tmp_path / "two" / "levels" / "m.png"
    data = out.read_bytes()
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk: width, height in pixels
    _, box = saved[0]
    # tight box at the figure's 100 dpi (not the uncropped 400 x 300 pixels)
    assert (width, height) == (pytest.approx(box.width * 100, abs=1.0), pytest.approx(box.height * 100, abs=1.0))
    assert abs(width - 400) > 20 and abs(height - 300) > 10
