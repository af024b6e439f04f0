"""report.html's links into the sample viewer (`emocaustics view`): each config and each failed sample.

The links are relative, into `view/` beside report.html (`emocaustics view RUN_DIR --export RUN_DIR/view` writes it
there), so the report and the viewer open from disk and travel together; the served viewer (`emocaustics view
RUN_DIR`) takes the same `#/c/<config>` and `#/s/<config>/<sample>` addresses. Writing the export with every report
would cost every run time and disk for a viewer not everyone opens, so the page says how to make it. The numbers are
the viewer's own (`view.data.ViewData`: configs in log order, samples in natural id order).
"""

from __future__ import annotations

import html
from pathlib import Path

import polars as pl

EXPORT = "view"  # the export's folder, beside report.html


def viewer_links(run_dir: Path) -> tuple[dict[str, int], dict[tuple[str, str], tuple[int, int]]]:
    """config label -> viewer index, (label, sample id) -> (config index, sample index); empty without a log."""
    if not (run_dir / "evallog").is_dir():
        return {}, {}
    from emocaustics.evallog.read import RunLog
    from emocaustics.view.data import ViewData

    view = ViewData(RunLog(run_dir))
    configs = {label: i for i, label in enumerate(view.labels)}
    samples = {(label, str(r["sample_id"])): (i, j) for label, i in configs.items()
               for j, r in enumerate(view.table(i)["rows"])}
    return configs, samples


def viewer_section(run_dir: Path, fails: pl.DataFrame) -> list[str]:
    """The viewer's line and a link per config, and the failures table with a link per failed sample."""
    configs, samples = viewer_links(run_dir)
    if not configs:
        return [f"<h2>Failures ({fails.height})</h2>", _failures(fails, {}) if fails.height else "<p>None.</p>"]
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
        f"<h2>Failures ({fails.height})</h2>",
        _failures(fails, samples) if fails.height else "<p>None.</p>",
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
