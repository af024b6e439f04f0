"""One figure-to-SVG for every inline chart: the significance heat map of the report is written as the task sections'
charts are (`stats.matrix.svg`), its labels drawn as paths whatever the machine's matplotlibrc says (a text label
depends on the reader's fonts), and without the XML prolog (it sits inside an HTML page)."""

from __future__ import annotations

import numpy as np

from emocaustics.stats.matrix import plot_significance, svg


def test_heat_map_labels_are_paths_under_any_rc() -> None:
    import matplotlib.pyplot as plt

    p = np.array([[1.0, 0.01], [0.5, 1.0]])
    with plt.rc_context({"svg.fonttype": "none"}):  # a matplotlibrc that writes text as <text>
        text = plot_significance(p, ["config-a", "config-b"], None, title="row > column", annotate=True)
    assert text.startswith("<svg") and text.rstrip().endswith("</svg>")
    assert "<text" not in text and "<!-- config-a -->" in text  # every label a path (named in a comment), no text


def test_svg_of_a_figure_is_inline_and_closed() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.set_title("a title")
    n = len(plt.get_fignums())
    text = svg(fig)
    assert text.startswith("<svg") and "<?xml" not in text and "<text" not in text
    assert len(plt.get_fignums()) == n - 1  # the figure is closed once written
