"""The page of a cross-run `compare` (`compare_page`), linked into the viewer across runs (report.html's own links into
the viewer are `report.html.viewer_section`'s).

The links are relative, into `view/` beside the page (`EXPORT`: where report.html's links point too), so the page and
the viewer open from disk and travel together.
"""

from __future__ import annotations

import html
from pathlib import Path

from emocaustics.report.compare import Comparison, Pairs

EXPORT = "view"  # the export's folder, beside report.html


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
