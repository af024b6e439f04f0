"""One way to make a chart (`stats.matrix.figure`): matplotlib's Agg backend set and the figure sized in one place,
for the significance heat map, the human-assessment agreement plot and the task sections' charts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from emocaustics.stats import matrix


def spied(monkeypatch, module) -> list[tuple[float, float]]:
    sizes: list[tuple[float, float]] = []
    real = matrix.figure
    monkeypatch.setattr(module, "figure", lambda w, h: sizes.append((w, h)) or real(w, h))
    return sizes


def test_figure_is_agg_and_sized() -> None:
    import matplotlib
    import matplotlib.pyplot as plt

    fig, ax = matrix.figure(3.0, 2.0)
    assert matplotlib.get_backend().lower() == "agg" and tuple(fig.get_size_inches()) == (3.0, 2.0)
    assert ax.figure is fig
    plt.close(fig)


def test_every_chart_is_made_by_figure(monkeypatch, tmp_path: Path) -> None:
    from emocaustics.tasks.human import outputs
    from emocaustics.tasks.human.significance import Agreement
    from emocaustics.tasks.longdialogue import report

    sizes = spied(monkeypatch, matrix)
    assert matrix.plot_significance(np.array([[1.0, 0.01], [0.5, 1.0]]), ["a", "b"], None).startswith("<svg")
    assert sizes == [(4.0, 3.0)]  # side = max(3, 0.45 k + 1.5) = 3 with k = 2, one inch more for the colour bar
    sizes = spied(monkeypatch, outputs)
    pairs = pl.DataFrame({"correlation": [0.5, -0.2]})
    assert outputs.plot_agreement(Agreement(pairs, 0), Agreement(pairs, 1), tmp_path / "a.png").is_file()
    assert sizes == [(6, 4)]
    sizes = spied(monkeypatch, report)
    summary = pl.DataFrame({"task": ["emotion"] * 2, "method": ["window"] * 2, "model": ["m"] * 2, "K": [2, 4],
                            "S": [1, 1], "score": [0.5, 0.75]})
    assert report._heatmap(summary, "emotion", "window", "m").startswith("<svg")
    assert sizes == [(1.2 * 2 + 2, 0.9 * 1 + 1.5)]
