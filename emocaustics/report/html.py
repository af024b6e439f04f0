"""The self-contained HTML report of a run directory: tables and charts (inline SVG), no network, no JavaScript."""

from __future__ import annotations

import html
import io
from pathlib import Path

import polars as pl

from emocaustics.report.tables import component_columns, failures, option_columns, summarise

_CSS = """
body{font-family:system-ui,-apple-system,"Noto Sans CJK SC",sans-serif;margin:2rem;color:#222;max-width:1200px}
table{border-collapse:collapse;margin:1rem 0;font-size:.85rem}
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:right}
th{background:#f3f3f3}td.t{text-align:left}
tr.calibration td{background:#f4f8ff}tr.engine-check td{background:#fff7e6}
.note{color:#8a5a00;font-size:.9rem}.chart{margin:1rem 0}
"""


def svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]  # drop the XML prolog so the SVG can sit inline


def table(df: pl.DataFrame, row_class: str | None = None) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in df.columns if c != row_class)
    rows = []
    for row in df.iter_rows(named=True):
        cls = f' class="{html.escape(str(row[row_class]))}"' if row_class else ""
        cells = []
        for col, value in row.items():
            if col == row_class:
                continue
            if isinstance(value, float):
                cells.append(f"<td>{value:.4f}</td>")
            else:
                cells.append(f'<td class="t">{html.escape("" if value is None else str(value))}</td>')
        rows.append(f"<tr{cls}>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _bar_chart(summary: pl.DataFrame, task: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summary.filter(pl.col("task") == task).sort("score", descending=True, nulls_last=True)
    colours = {"calibration": "#4c78a8", "engine-check": "#f2a541", "model": "#54a24b"}
    fig, ax = plt.subplots(figsize=(8, 0.45 * rows.height + 1.2))
    labels = rows["run"].to_list()
    values = rows["score"].fill_null(0).to_list()
    err = None
    if "ci_low" in rows.columns:  # 95 % bootstrap intervals as error bars
        lo = [max(v - (lw if lw is not None else v), 0) for v, lw in zip(values, rows["ci_low"].to_list())]
        hi = [max((hg if hg is not None else v) - v, 0) for v, hg in zip(values, rows["ci_high"].to_list())]
        err = [lo, hi]
    bars = ax.barh(labels, values, xerr=err, capsize=3, color=[colours.get(k, "#888") for k in rows["kind"]],
                   edgecolor="#333", linewidth=0.5)  # the edge keeps a zero-length bar visible
    for bar, v in zip(bars, values):  # every bar carries its value
        ax.text(min(v, 1.0) + 0.01, bar.get_y() + bar.get_height() / 2, f"{v:.3f}", va="center", fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.15)
    ax.set_xlabel("score (mean over samples)")
    ax.set_title(f"{task}: methods vs oracle / baseline (orange = engine check, not a quality figure)")
    return svg(fig)


def render(run_dir: Path, scores: pl.DataFrame, wall: dict[str, float] | None = None, title: str = "") -> str:
    summary = summarise(scores, wall)
    shown = summary.select(
        "kind", "run", "task", "method", "model", *option_columns(summary), "samples", "score", "micro_score",
        *component_columns(summary), "failures", *[c for c in ("judge_failures",) if c in summary.columns],
        "llm_calls", "tokens", "wall_s",
    )
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        "<p class='note'>Rows shaded orange are engine checks run with the <b>smoke</b> model (tiny, random weights):"
        " they show that the pipeline and the real engine ran, their scores are noise and are not a quality figure."
        " Blue rows are calibration: <b>oracle</b> (the ground truth itself, must score 1.0) and <b>baseline</b>"
        " (a trivial non-LLM predictor, the floor).</p>",
        "<h2>Summary</h2>",
        f"<div id='summary'>{table(shown, row_class='kind')}</div>",
        "<h2>Methods compared</h2>",
    ]
    for task in summary["task"].unique(maintain_order=True).to_list():
        parts.append(f"<div class='chart' id='bars-{html.escape(task)}'>{_bar_chart(summary, task)}</div>")
    from emocaustics.core.task import get_task

    for task_name in summary["task"].unique(maintain_order=True).to_list():
        task = get_task(task_name)
        for title_text, section in task.report_sections(summary.filter(pl.col("task") == task_name),
                                                        scores.filter(pl.col("task") == task_name)):
            parts.append(f"<h2>{html.escape(title_text)}</h2>")
            parts.append(section)
    sig_path = run_dir / "significance.csv"
    if sig_path.exists():
        from emocaustics.stats import matrix_from_pairs, plot_significance

        pairs = pl.read_csv(sig_path)
        for task in pairs["task"].unique(maintain_order=True).to_list():
            of_task = pairs.filter(pl.col("task") == task)
            labels = list(dict.fromkeys(of_task["config_a"].to_list() + of_task["config_b"].to_list()))
            chart = plot_significance(matrix_from_pairs(of_task, labels), labels, None,
                                      title=f"{task}: paired randomisation p (Holm), p > 0.1 masked")
            parts.append(f"<h2>Significance: {html.escape(task)}</h2><div class='chart'>{chart}</div>")
    fails = failures(scores)
    parts.append(f"<h2>Failures ({fails.height})</h2>")
    parts.append(table(fails) if fails.height else "<p>None.</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(run_dir: Path, scores: pl.DataFrame, wall: dict[str, float] | None = None) -> Path:
    path = run_dir / "report.html"
    title = f"emocaustics report: {run_dir.parent.name} / {run_dir.name}"
    path.write_text(render(run_dir, scores, wall, title), encoding="utf-8")
    return path
