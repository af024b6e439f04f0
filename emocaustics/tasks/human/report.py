"""The human-assessment section of the HTML report, rebuilt from the job's per-assignment score table (column
`score` = qc_passed, `c_z:<system>` = that assignment's conversation z): per config, the systems' mean z from
passing workers with their conversation counts, and the significance heat map (one-sided Mann-Whitney, p > 0.1
masked) as inline SVG."""

from __future__ import annotations

import html

import polars as pl

from emocaustics.stats.mannwhitney import mannwhitney_matrix
from emocaustics.stats.matrix import plot_significance

PREFIX = "c_z:"


def sections(summary: pl.DataFrame, scores: pl.DataFrame) -> list[tuple[str, str]]:
    out = []
    if "run" not in scores.columns or "score" not in scores.columns:
        return out
    for (run,), part in scores.group_by("run", maintain_order=True):
        passed = part.filter(pl.col("score") == 1.0)
        groups = {c[len(PREFIX):]: passed.get_column(c).drop_nulls().drop_nans().to_numpy() for c in part.columns
                  if c.startswith(PREFIX)}
        if not groups:
            continue
        mean = {m: float(v.mean()) if v.size else float("nan") for m, v in groups.items()}
        order = sorted(groups, key=lambda m: -(mean[m] if mean[m] == mean[m] else -1e300))  # NaN last
        body = "".join(f"<tr><td class='t'>{html.escape(m)}</td><td>{groups[m].size}</td><td>{mean[m]:.4f}</td></tr>"
                       for m in order)
        table = ("<table><thead><tr><th>system</th><th>conversations (passing workers)</th><th>mean z</th></tr>"
                 f"</thead><tbody>{body}</tbody></table>")
        p = mannwhitney_matrix([groups[m] for m in order], alternative="greater")
        svg = plot_significance(p, order, None, title="row > column (Mann-Whitney p; p > 0.1 blank)")
        out.append((f"Human assessment: {run}", f"<p>{passed.height} of {part.height} assignments from workers who "
                    f"passed quality control.</p>{table}<div class='chart'>{svg}</div>"))
    return out
