"""The `dialogue-judge` sections of the HTML report, from the job's per-sample rows (`sample_info`'s columns): per
round, the QC table (the judge's verdict, p and agreement figures; a judge that failed QC marked unreliable), the
per-criterion table (system-level Pearson r per criterion and judge), the scatter of each judge's system z against
the QC-passed workers' with the identity line and r (inline SVG), and with two or more judges their paired tests and
alpha across them, as the tables phase wrote them (tables/judge_pairs.parquet: `across.pairs_table`)."""

from __future__ import annotations

import html

import numpy as np
import polars as pl

from emocaustics.core.htmltable import table
from emocaustics.tasks.dialoguejudge.across import families

UNRELIABLE = "unreliable (failed QC)"
SIZE, PAD = 260, 36  # the scatter's square plot area and its margin, px


def scatter(human: np.ndarray, judge: np.ndarray, systems: list[str], title: str) -> str:
    """Judge (y) against workers (x), one labelled point per system, on one scale with the identity line."""
    ok = np.isfinite(human) & np.isfinite(judge)
    v = np.concatenate([human[ok], judge[ok]]) if ok.any() else np.array([-1.0, 1.0])
    margin = max(0.05 * float(np.ptp(v)), 0.1 * (np.ptp(v) < 1e-9))  # a little room; one value still has a scale
    lo, hi = float(v.min()) - margin, float(v.max()) + margin
    at = lambda v: PAD + (v - lo) / (hi - lo) * SIZE  # noqa: E731
    up = lambda v: 2 * PAD + SIZE - at(v)  # noqa: E731
    points = "".join(f"<circle cx='{at(x):.1f}' cy='{up(y):.1f}' r='3.5' fill='#4c78a8'><title>{html.escape(s)}: "
                     f"workers {x:.3f}, judge {y:.3f}</title></circle><text x='{at(x) + 5:.1f}' y='{up(y) - 4:.1f}' "
                     f"font-size='9'>{html.escape(s)}</text>" for x, y, s, k in zip(human, judge, systems, ok) if k)
    return (f"<svg xmlns='http://www.w3.org/2000/svg' width='{SIZE + 2 * PAD}' height='{SIZE + 2 * PAD}' "
            f"role='img'><text x='{PAD}' y='14' font-size='11'>{html.escape(title)}</text>"
            f"<rect x='{PAD}' y='{PAD}' width='{SIZE}' height='{SIZE}' fill='none' stroke='#999'/>"
            f"<line x1='{PAD}' y1='{PAD + SIZE}' x2='{PAD + SIZE}' y2='{PAD}' stroke='#bbb' stroke-dasharray='4 3'/>"
            f"<text x='{PAD + SIZE / 2}' y='{2 * PAD + SIZE - 8}' font-size='10' text-anchor='middle'>workers' "
            f"system z ({lo:.2f} to {hi:.2f})</text><text x='10' y='{PAD + SIZE / 2}' font-size='10' "
            f"transform='rotate(-90 10 {PAD + SIZE / 2})' text-anchor='middle'>judge's system z</text>{points}</svg>")


def sections(summary: pl.DataFrame, scores: pl.DataFrame,
             tables: dict[str, pl.DataFrame] | None = None) -> list[tuple[str, str]]:
    out, compared = [], (tables or {}).get("judge_pairs")  # tables/judge_pairs.parquet (`across.pairs_table`)
    for k, rows in enumerate(families(scores)):
        runs = rows["run"].unique(maintain_order=True).to_list()
        config = summary.filter(pl.col("run").is_in(runs))
        verdict = pl.when("qc_pass").then(pl.lit("reliable")).otherwise(pl.lit(UNRELIABLE)).alias("judge")
        qc = config.select("run", verdict,
                           "qc_p", pl.col("score").alias("system_r"), "ci_low", "ci_high", "item_alpha", "self_r")
        firsts = rows.group_by("run", maintain_order=True).agg(pl.first("qc_pass"), pl.col("^r:.*$").first())
        per_judge, charts = {}, []  # each judge's r per criterion (r:z first), its scatter
        for run, ok, *rs in firsts.iter_rows():
            per_judge[run + ("" if ok else f" [{UNRELIABLE}]")] = rs
            z = (rows.filter(pl.col("run") == run).group_by("system", maintain_order=True)
                 .agg(pl.col("human_z").drop_nulls().mean(), pl.col("judge_z").drop_nulls().mean())
                 .filter(pl.col("human_z").is_not_null()))
            charts.append(scatter(z["human_z"].to_numpy(), z["judge_z"].fill_null(np.nan).to_numpy(),
                                  z["system"].to_list(), f"{run}: r = {rs[0]:.3f}" + ("" if ok else f", {UNRELIABLE}")))
        criteria = pl.DataFrame({"criterion": ["overall (z)", *[c[2:] for c in firsts.columns[3:]]], **per_judge})
        body = (f"<h3>Quality control and agreement</h3>{table(qc)}<h3>System-level Pearson r per criterion</h3>"
                f"{table(criteria)}<h3>System z: workers against judge</h3><div class='chart'>{''.join(charts)}</div>")
        pairs = compared.filter(pl.col("config_a").is_in(runs)) if compared is not None else pl.DataFrame()
        if pairs.height:
            body += (f"<h3>Judges compared</h3><p>Krippendorff's alpha (interval) across the {len(runs)} judges' "
                     f"ratings: {pairs['alpha'][0]:.4f}. Difference of system-level r, paired bootstrap over "
                     f"assignments, Holm-corrected across the {pairs.height} pairs.</p>"
                     f"{table(pairs.drop('family', 'alpha'))}")
        out.append((f"Dialogue judge: round {k + 1} ({len(runs)} judge{'s' if len(runs) > 1 else ''})", body))
    return out
