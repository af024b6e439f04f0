"""Significance matrices: as a polars frame (a label column, then one column per compared label) and as a heat map
(PNG or SVG by the file suffix; matplotlib's Agg backend, no display needed).

The heat map follows the human-assessment paper's figure: p-values from 0 to `threshold` (0.1) on a green-to-yellow
scale centred at 0.05, cells with p > threshold (and the diagonal, which holds no test) masked white; row i, column j
reads "row i is better than column j" for one-sided matrices.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

MASK_ABOVE = 0.1
CENTER = 0.05
LOW_COLOUR, HIGH_COLOUR = "#00A100", "#cccc00"


def significance_frame(p: np.ndarray, labels: Sequence[str], corner: str = "") -> pl.DataFrame:
    """A (k x k) p-value matrix as a frame: column `corner` holds the row labels, then one Float64 column per
    label (the original tool's CSV layout: an unnamed first column)."""
    mat = np.asarray(p, dtype=np.float64)
    names = [str(x) for x in labels]
    if mat.shape != (len(names), len(names)):
        raise ValueError(f"matrix shape {mat.shape} does not match {len(names)} labels")
    if corner in names:
        raise ValueError(f"corner name {corner!r} collides with a label")
    data: dict[str, list] = {corner: names, **{name: mat[:, j].tolist() for j, name in enumerate(names)}}
    return pl.DataFrame(data, schema={corner: pl.Utf8, **{n: pl.Float64 for n in names}})


def matrix_from_pairs(pairs: pl.DataFrame, labels: Sequence[str]) -> np.ndarray:
    """A symmetric (k x k) matrix from a pairs table (two-sided tests: one row per unordered pair); diagonal 1."""
    index = {str(x): i for i, x in enumerate(labels)}
    out = np.ones((len(index), len(index)))
    for row in pairs.select("config_a", "config_b", "p_holm").iter_rows():
        i, j = index[str(row[0])], index[str(row[1])]
        value = np.nan if row[2] is None else float(row[2])
        out[i, j] = out[j, i] = value
    return out


def plot_significance(p: np.ndarray, labels: Sequence[str], path: str | Path | None, *,
                      threshold: float = MASK_ABOVE, center: float = CENTER, title: str | None = None,
                      annotate: bool = False, above: str = "white") -> Path | str:
    """Write the heat map of a p-value matrix to `path` (.png or .svg) and return the path; with path=None return
    the SVG text instead (for inlining in an HTML report). `annotate` writes each test's p in its cell and `above`
    colours the cells with p > threshold: with the paper's white and no text, a matrix where no p reaches the
    threshold is a blank square that says nothing (not even that the tests ran)."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import LinearSegmentedColormap, TwoSlopeNorm

    mat = np.asarray(p, dtype=np.float64)
    k = mat.shape[0]
    masked = np.ma.masked_where(~(mat <= threshold) | np.eye(k, dtype=bool), mat)  # NaN and p > threshold masked
    cmap = LinearSegmentedColormap.from_list("significance", [LOW_COLOUR, HIGH_COLOUR]).with_extremes(bad=above)
    side = max(3.0, 0.45 * k + 1.5)
    fig, ax = figure(side + 1.0, side)
    image = ax.imshow(masked, cmap=cmap, norm=TwoSlopeNorm(vmin=0.0, vcenter=center, vmax=threshold))
    ax.set_xticks(range(k), [str(x) for x in labels], rotation=90)
    ax.set_yticks(range(k), [str(x) for x in labels])
    ax.set_xticks(np.arange(-0.5, k, 1), minor=True)
    ax.set_yticks(np.arange(-0.5, k, 1), minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    fig.colorbar(image, ax=ax, ticks=[0.0, center, threshold], shrink=0.9)
    if annotate:
        for i in range(k):
            for j in range(k):
                if i != j:
                    text = "n/a" if np.isnan(mat[i, j]) else f"{mat[i, j]:.2g}"
                    ax.text(j, i, text, ha="center", va="center", fontsize=8,
                            color="white" if mat[i, j] <= center else "#222")
    if title:
        ax.set_title(title)
    if path is None:
        return svg(fig)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, bbox_inches="tight")
    plt.close(fig)
    return out


def figure(width: float, height: float) -> tuple[Any, Any]:
    """A new (figure, axes) of `width` x `height` inches on matplotlib's Agg backend: files and inline SVG only,
    never a display (every chart of the package is made here)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, height))


def svg(fig) -> str:
    """The figure as inline SVG, its labels drawn as paths (the same on every machine, whatever fonts it has): the
    heat maps here and the task sections' charts of the HTML report."""
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    with plt.rc_context({"svg.fonttype": "path"}):
        fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]  # drop the XML prolog so the SVG can sit inline
