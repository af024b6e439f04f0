"""report.html's links into the sample viewer (`emocaustics view`): each config and each failed sample; and the page of
a cross-run `compare` (`compare_page`), linked into the viewer across runs.

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

from emocaustics.report.compare import Comparison, Pairs

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
    configs, samples = viewer_links(run_dir)  # none without a log: the failures, unlinked
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


def compare_page(run_dirs: list[Path], result: Comparison, out: Path, pairs: Pairs | None = None) -> Path:
    """`emocaustics compare RUN_A RUN_B ... --html DIR`: DIR/compare.html, the pairs tested (as the terminal shows
    them), each linked to its configs' samples side by side, and under each pair the samples whose scores differ,
    each linked to its side-by-side page; the cross-run viewer the links open is written beside it (DIR/view/, what
    `emocaustics view RUN_A RUN_B ... --export DIR/view` writes), so the folder opens from disk and travels whole."""
    from emocaustics.report.across import Across
    from emocaustics.view.server import export

    across = Across(run_dirs, pairs)
    export(across, out / EXPORT)

    def num(v: object) -> str:
        return "" if v is None else f"{v:.4f}" if isinstance(v, float) else html.escape(str(v))

    rows, lists = [], []
    for n, r in enumerate(result.pairs.iter_rows(named=True)):
        g = across.group_of(r["run_a"], r["config_a"])
        table = across.table(g)
        keys = across.groups[g]
        a, b = keys.index(f"{r['run_a']}\t{r['config_a']}"), keys.index(f"{r['run_b']}\t{r['config_b']}")
        link = f"{EXPORT}/index.html#/x/{g}"
        verdict = ("significant" if r["significant"] else "NOT significant") if r["family"] == "configs" \
            else "calibration (unadjusted)"
        rows.append("<tr class='pair'>" + "".join(f"<td>{num(r[c])}</td>" for c in (
            "task", "run_a", "config_a", "run_b", "config_b", "n_common", "score_a", "score_b", "diff", "p_holm"))
            + f"<td>{verdict}</td><td><a class='pair-link' href='{link}'>side by side</a></td></tr>")
        differ = [(k, x["cells"]) for k, x in enumerate(table["rows"]) if x["cells"][a] and x["cells"][b]
                  and x["cells"][a]["score"] != x["cells"][b]["score"]]
        items = "".join(
            f"<tr class='sample'><td><a class='sample-link' href='{link}/{k}'>{num(table['rows'][k]['sample_id'])}"
            f"</a></td><td>{num(c[a]['score'])}</td><td>{num(c[b]['score'])}</td></tr>" for k, c in differ)
        lists.append(f"<h3>{html.escape(r['config_a'])} vs {html.escape(r['config_b'])}: {len(differ)} samples "
                     f"scored differently</h3><table class='differ' id='differ-{n}'><tr><th>sample_id</th>"
                     f"<th>{html.escape(r['run_a'])}</th><th>{html.escape(r['run_b'])}</th></tr>{items}</table>")
    head = "".join(f"<th>{h}</th>" for h in ("task", "run_a", "config_a", "run_b", "config_b", "samples", "score_a",
                                              "score_b", "diff", "p_holm", "verdict", ""))
    page = out / "compare.html"
    page.write_text(
        "<!doctype html><html><head><meta charset='utf-8'><title>compare</title><style>body{font:14px system-ui;"
        "margin:16px}table{border-collapse:collapse}td,th{border:1px solid #ccd;padding:3px 8px}</style></head>"
        f"<body><h1>Runs compared</h1><p>{html.escape(', '.join(str(d) for d in run_dirs))}</p>"
        f"<table id='pairs'><tr>{head}</tr>{''.join(rows)}</table><h2>Samples scored differently</h2>"
        f"{''.join(lists)}</body></html>", encoding="utf-8")
    return page
