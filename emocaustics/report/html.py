"""The self-contained HTML report of a run directory: tables and charts (inline SVG), no network, no JavaScript.

Layout, made to read at a glance on a 1280 px screen without sideways scrolling: the main summary table (what ran,
the score with its 95 % interval, failures, cost), each task's components in their own narrow tables, a legend that
defines every column shown, bar charts whose every bar carries its value (a zero gets a visible marker) with the
intervals as error bars, the task's own sections, the significance matrices and the failures.
"""

from __future__ import annotations

import html
from pathlib import Path

import polars as pl

from emocaustics.core.task import get_task
from emocaustics.report.columns import cluster_note, components_by_task, legend, main_table, option_columns
from emocaustics.core.htmltable import table
from emocaustics.report.tables import Tables, failures, run_title
from emocaustics.report.viewlinks import EXPORT
from emocaustics.scoring.reducers import table_rows

# Component tables are cut into chunks of this many metric columns so that each fits the page.
COMPONENTS_PER_TABLE = 6

_CSS = """
body{font-family:system-ui,-apple-system,"Noto Sans CJK SC",sans-serif;margin:2rem;color:#222;max-width:1200px}
table{border-collapse:collapse;margin:1rem 0;font-size:.85rem;max-width:100%}
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:right}
th{background:#f3f3f3}td{white-space:nowrap}td.t{text-align:left;white-space:normal;overflow-wrap:break-word}
td.n{white-space:nowrap}
tr.calibration td{background:#f4f8ff}tr.engine-check td{background:#fff7e6}
.note{color:#8a5a00;font-size:.9rem}.chart{margin:1rem 0}
svg{max-width:100%;height:auto}
dl.legend{font-size:.85rem;display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;max-width:100%}
dl.legend dt{font-family:ui-monospace,monospace;overflow-wrap:anywhere}dl.legend dd{margin:0}
"""


def _bar_chart(summary: pl.DataFrame, task: str) -> str:
    """Inline SVG written directly (matplotlib's import and drawing were most of a small run's tail after its last
    answer): a bar per config with its value as text (a zero gets a marker, no score says n/a) and its interval."""
    rows = summary.filter(pl.col("task") == task).sort("score", descending=True, nulls_last=True)
    colours = {"calibration": "#4c78a8", "engine-check": "#f2a541", "model": "#54a24b"}
    scores = [None if v is None or v != v else v for v in rows["score"].to_list()]  # NaN: no score, like None
    values = [0.0 if v is None else v for v in scores]
    los, highs = list(values), list(values)
    if "ci_low" in rows.columns:  # 95 % bootstrap intervals as error bars (none where the interval is missing)
        los = [v if lw is None or lw != lw else lw for v, lw in zip(values, rows["ci_low"].to_list())]
        highs = [v if hg is None or hg != hg else hg for v, hg in zip(values, rows["ci_high"].to_list())]
    low_end, high_end = min([0.0, *values, *los]), max([1.0, *highs])
    left, plot, row_h, top, tid = 12 + 6.5 * max(len(r) for r in rows["run"].to_list()), 440, 24, 34, html.escape(task)

    def x(v: float) -> float:  # the last 15 % of the width: room for the values right of the bars
        return round(left + (v - low_end) / (1.15 * (high_end - low_end)) * plot, 1)

    width, axis = left + plot + 10, top + row_h * rows.height
    checks = " (orange = engine check, not a quality figure)" if "engine-check" in rows["kind"].to_list() else ""
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{axis + 44}" viewBox="0 0 '
           f'{width:.0f} {axis + 44}" font-family="sans-serif" font-size="11"><text x="{width / 2:.0f}" y="18" '
           f'text-anchor="middle" font-size="13">{tid}: configs by score{checks}</text>']
    for i, (run, kind, v, raw, lo, hg) in enumerate(zip(rows["run"], rows["kind"], values, scores, los, highs)):
        y, mid = top + i * row_h, top + i * row_h + row_h / 2
        out.append(f'<text x="{left - 6:.0f}" y="{mid + 4}" text-anchor="end">{html.escape(run)}</text>')
        out.append(f'<g id="bar-{tid}-{i}"><rect x="{min(x(0), x(v))}" y="{y + 4}" width="{abs(x(v) - x(0))}" '
                   f'height="{row_h - 8}" fill="{colours.get(kind, "#888")}" stroke="#333" stroke-width="0.5"/></g>')
        if hg > lo:
            out.append(f'<path d="M{x(lo)} {mid}H{x(hg)}M{x(lo)} {mid - 4}v8M{x(hg)} {mid - 4}v8" stroke="#333"/>')
        if raw is not None and v == 0:  # a zero-length bar draws nothing: mark the zero (n/a rows say n/a)
            out.append(f'<g id="zero-{tid}-{i}"><path d="M{x(0)} {mid - 5}l4 5l-4 5l-4 -5z" fill="#333"/></g>')
        # every bar carries its value, right of the bar or of its interval, whichever ends later
        out.append(f'<g id="value-{tid}-{i}"><text x="{x(max(v, hg)) + 6}" y="{mid + 4}">'
                   f'{"n/a" if raw is None else f"{v:.3f}"}</text></g>')
    out += [f'<path d="M{x(0)} {top}V{axis}M{left} {axis}H{left + plot}" stroke="#333"/>',
            *(f'<text x="{x(t)}" y="{axis + 14}" text-anchor="middle">{t:g}</text>'
              for t in sorted({round(low_end, 3), 0.0, 0.5, round(high_end, 3)})),
            f'<text x="{left + plot / 2:.0f}" y="{axis + 34}" text-anchor="middle">score (mean over samples) with its '
            "95 % bootstrap interval</text></svg>"]
    return "\n".join(out)


def summary_section(summary: pl.DataFrame) -> list[str]:
    """The main table, each task's component tables and the legend of every column shown: what they show first
    (report/columns.py), then drawn."""
    main = main_table(summary, drop_same_micro=True)
    note = cluster_note(summary)  # what the intervals resampled: each task's cluster unit
    comps = components_by_task(summary)
    items = legend([c for c in main.columns if c != "kind"] + ["kind"], comps, option_columns(summary))
    parts = [f"<div id='summary'>{table(main, row_class='kind' if 'kind' in main.columns else None)}</div>"]
    if note:
        parts.append(f"<p class='note' id='clusters'>{html.escape(note)}</p>")
    if comps:
        parts.append("<h2>Components</h2><div id='components'>")
        for task, cols in comps.items():
            rows = summary.filter(pl.col("task") == task)
            parts.append(f"<h3>{html.escape(task)}</h3>")
            for start in range(0, len(cols), COMPONENTS_PER_TABLE):
                chunk = cols[start:start + COMPONENTS_PER_TABLE]
                parts.append(table(rows.select("kind", "run", *chunk), row_class="kind"))
        parts.append("</div>")
    body = "".join(f"<dt>{html.escape(c)}</dt><dd>{html.escape(text)}</dd>" for c, text in items)
    parts.append(f"<h2>Columns</h2><dl class='legend' id='legend'>{body}</dl>")
    return parts


def startup_note(run_dir: Path) -> str:
    """Engine and embedder start-up, once per model (the runner's startup.json): never inside a config's wall_s."""
    import json

    path = run_dir / "startup.json"
    if not path.exists():
        return ""
    try:
        startup = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "<p class='note'>startup.json could not be read.</p>"
    parts = [f"model {html.escape(str(m))}: {float(s):.1f} s" for m, s in (startup.get("models") or {}).items()]
    if startup.get("embedder") is not None:
        parts.append(f"embedder: {float(startup['embedder']):.1f} s")
    if not parts:
        return ""
    return ("<p id='startup'>Start-up, once per job (not part of any config's wall_s): " + "; ".join(parts)
            + ".</p>")


def render(run_dir: Path, scores: pl.DataFrame, tables: Tables, title: str = "") -> str:
    """The page of the run's `tables` (`tables.write_tables`'s: the summary's intervals, the pairs and the tasks'
    tables across configs are read, never computed again) and its per-sample `scores`."""
    summary = tables.summary
    scores = table_rows(scores)  # the per-epoch rows are in the summary's spread; the rest reads the reduced rows
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        "<p class='note'>Rows shaded orange are engine checks run with the <b>smoke</b> model (tiny, random weights):"
        " they show that the pipeline and the real engine ran, their scores are noise and are not a quality figure."
        " Blue rows are calibration: no model is called (an <b>oracle</b> is the ground truth itself and must score"
        " 1.0; a <b>baseline</b> is a trivial predictor, the floor).</p>",
        "<h2>Summary</h2>",
        startup_note(run_dir),
        *summary_section(summary),
        "<h2>Configs compared</h2>",
    ]
    for task in summary["task"].unique(maintain_order=True).to_list():
        parts.append(f"<div class='chart bars' id='bars-{html.escape(task)}'>{_bar_chart(summary, task)}</div>")
    for task_name in summary["task"].unique(maintain_order=True).to_list():
        task, across = get_task(task_name), tables.across.get(task_name)  # its `job_tables`, as written
        for title_text, section in task.report.report_sections(summary.filter(pl.col("task") == task_name),
                                                               scores.filter(pl.col("task") == task_name),
                                                               *([across] if across else [])):
            parts.append(f"<h2>{html.escape(title_text)}</h2>")
            parts.append(section)
    if tables.pairs.height:  # significance.csv's
        parts += significance_sections(tables.pairs)
    parts += viewer_section(run_dir, failures(scores))  # each config and failure linked into the sample viewer
    parts.append("</body></html>")
    return "\n".join(parts)


# Cells with p above the heat map's threshold: light grey, so that the matrix is visible when no pair is significant.
NOT_SIGNIFICANT = "#e6e6e6"


def significance_sections(pairs: pl.DataFrame) -> list[str]:
    """Per task: a heat map of the Holm family's pairs (every cell carries its p), and the pairs with a calibration
    row, unadjusted, in a table of their own (significance.csv, family `calibration`)."""
    from emocaustics.stats import matrix_from_pairs, plot_significance

    parts = []
    for task in pairs["task"].unique(maintain_order=True).to_list():
        of_task = pairs.filter(pl.col("task") == task)
        family = of_task.filter(pl.col("family") == "configs")
        calibration = of_task.filter(pl.col("family") != "configs")
        parts.append(f"<h2>Significance: {html.escape(task)}</h2>")
        if family.height:
            labels = list(dict.fromkeys(family["config_a"].to_list() + family["config_b"].to_list()))
            chart = plot_significance(matrix_from_pairs(family, labels), labels, None, annotate=True,
                                      above=NOT_SIGNIFICANT,
                                      title=f"{task}: paired randomisation p (Holm); grey: p > 0.1")
            n_sig = int(family["significant"].sum())
            parts.append(f"<p>{n_sig} of {family.height} pairs of configs differ significantly (Holm-corrected "
                         f"p &lt; 0.05 over the job's {int((pairs['family'] == 'configs').sum())} pairs of configs, "
                         "approximate randomisation over the samples both configs scored; significance.csv has "
                         "every test).</p>"
                         f"<div class='chart significance' id='significance-{html.escape(task)}'>{chart}</div>")
        if calibration.height:
            shown = calibration.select("config_a", "config_b", "n_common", "diff", "p_randomisation")
            parts.append(f"<p>Against calibration rows (oracle, baselines): not in Holm's family, p unadjusted "
                         f"({calibration.height} pairs).</p>"
                         + table(shown, table_id=f"calibration-pairs-{task}"))
    return parts


def viewer_section(run_dir: Path, fails: pl.DataFrame) -> list[str]:
    """The viewer's line and a link per config, and the failures table with a link per failed sample. The links are
    relative, into `view/` beside report.html (`emocaustics view RUN_DIR --export RUN_DIR/view` writes it there), so
    the report and the viewer open from disk and travel together; the served viewer (`emocaustics view RUN_DIR`) takes
    the same `#/c/<config>` and `#/s/<config>/<sample>` addresses, the viewer's own numbers (`view.data.addresses`).
    Writing the export with every report would cost every run time and disk for a viewer not everyone opens, so the
    page says how to make it."""
    from emocaustics.view.data import addresses

    configs, samples = addresses(run_dir)  # none without a log: the failures, unlinked
    failed = [f"<h2>Failures ({fails.height})</h2>", _failures(fails, samples) if fails.height else "<p>None.</p>"]
    if not configs:
        return failed
    where = html.escape(str(run_dir))
    links = " · ".join(f"<a class='viewer' href='{EXPORT}/index.html#/c/{i}'>{html.escape(label)}</a>"
                       for label, i in configs.items())
    return [
        "<h2>Samples</h2>",
        f"<p id='viewer-note'>Every sample's prompts, answers, gold, prediction and item decisions: "
        f"<code>emocaustics view {where}</code> serves them on 127.0.0.1; the links on this page open the static "
        f"copy that <code>emocaustics view {where} --export {where}/{EXPORT}</code> writes beside this file "
        f"(offline, shareable with the run folder).</p>",
        f"<p id='viewer-configs'>{links}</p>",
        *failed,
    ]


def _failures(fails: pl.DataFrame, samples: dict[tuple[str, str], tuple[int, int]]) -> str:
    rows = []
    for r in fails.iter_rows(named=True):
        at = samples.get((str(r["run"]), str(r["sample_id"])))
        sid = html.escape(str(r["sample_id"]))
        cell = f"<a class='viewer' href='{EXPORT}/index.html#/s/{at[0]}/{at[1]}'>{sid}</a>" if at else sid
        rows.append(f"<tr><td class='t'>{html.escape(str(r['run']))}</td><td class='t'>{cell}</td>"
                    f"<td class='t'>{html.escape(str(r['reason'] or ''))}</td></tr>")
    return ("<table id='failures'><thead><tr><th>run</th><th>sample_id</th><th>reason</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def write_report(run_dir: Path, scores: pl.DataFrame, tables: Tables) -> Path:
    """report.html of the run's per-sample `scores` and the `tables` that `tables.write_tables` wrote of them."""
    path = run_dir / "report.html"
    path.write_text(render(run_dir, scores, tables, f"emocaustics report: {run_title(run_dir)}"), encoding="utf-8")
    return path
