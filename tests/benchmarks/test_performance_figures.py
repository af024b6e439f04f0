"""The documentation's performance table (docs/performance.md) against the one results file `make bench` writes (no
engine, no benchmark run).

Every figure in the table's "figure" column is written `VALUE[unit][^ID]`, and the footnote `[^ID]:
`latest.json:BENCH.FIGURE.PATH`` (on the same page) names its key: `results[BENCH]["figures"][FIGURE][PATH...]`.
This test resolves each key in `benchmarks/results/latest.json` and checks that the value shown equals the stored one
at the precision shown. A number in that column without a footnote fails (settings such as "64 replicas" or
"floor 0.85" excepted), so the table and the file cannot drift apart. Simulated figures must say "simulated" in their
row, and no projection of the scale benchmark may sit below its bound.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results"
PAGE = REPO / "docs" / "performance.md"  # the figures table lives here, not in the README
UNIT = r"(?:\s?(?:×|x|%|s|h|min|ms|GiB|MiB|req/s|tok/s|files/s|calls/s))?"
# Numbers that are settings, not measurements, may stand uncited in the figure column only in these forms:
# "64 replicas", "256 GPUs", "20 threads", "in 2 processes", "floor 0.85", "floor < 2 ms".
PARAMETER = re.compile(r"\b\d[\d,]*\s?(?:GPUs|replicas|threads|processes|dialogues)\b"
                       r"|\bfloor\s*[<>=≥]*\s*\d+(?:\.\d+)?(?:\s?(?:ms|min|s)\b)?")
CITED = re.compile(r"(?P<value>-?\d[\d,]*(?:\.\d+)?)" + UNIT + r"\[\^(?P<id>[\w-]+)\]")
FOOTNOTE = re.compile(r"^\[\^(?P<id>[\w-]+)\]:\s*`(?P<file>[\w.-]+\.json):(?P<key>[^`\s]+)`", re.M)


def performance_section(page: str) -> str:
    """The page's text from its "# Performance" title to its first "## " heading (or its end)."""
    section = ("\n" + page).split("\n# Performance", 1)
    assert len(section) == 2, f"{PAGE} has no '# Performance' title"
    return section[1].split("\n## ", 1)[0]


def performance_table(page: str) -> list[list[str]]:
    """The rows (cells) of the first table under the "## Performance" heading."""
    lines = performance_section(page).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    assert len(rows) > 2, "no table under '## Performance'"
    return rows


def footnotes(page: str) -> dict[str, tuple[str, str]]:
    notes: dict[str, tuple[str, str]] = {}
    for m in FOOTNOTE.finditer(performance_section(page)):
        assert m["id"] not in notes, f"footnote [^{m['id']}] defined twice"
        notes[m["id"]] = (m["file"], m["key"])
    return notes


def resolve(report: dict[str, Any], key: str) -> Any:
    bench, _, path = key.partition(".")
    results = report["results"]
    assert bench in results, f"latest.json has no benchmark {bench!r} (has {sorted(results)})"
    res = results[bench]
    assert not res.get("error"), f"{bench} failed in the cited run: {res['error'].splitlines()[-1]}"
    node: Any = res["figures"]
    for part in path.split("."):
        if isinstance(node, list):
            node = node[int(part)]
        else:
            assert part in node, f"{key}: no {part!r} (has {sorted(node)[:20]})"
            node = node[part]
    return node


def shown_equals(shown: str, stored: Any) -> bool:
    """`shown` is `stored` at the precision shown (1,234 = 1234; 0.30 = 0.3 or 0.2951)."""
    text = shown.replace(",", "")
    if isinstance(stored, bool) or not isinstance(stored, (int, float)):
        return False
    places = len(text.split(".")[1]) if "." in text else 0
    return Decimal(text) == round(Decimal(str(stored)), places)


def test_every_figure_in_the_performance_table_equals_the_value_it_cites():
    page = PAGE.read_text(encoding="utf-8")
    table = performance_table(page)
    header = [c.lower() for c in table[0]]
    assert "figure" in header, header
    col = header.index("figure")
    notes = footnotes(page)
    report = json.loads((RESULTS / "latest.json").read_text(encoding="utf-8"))
    checked, wrong = 0, []
    for row in table[2:]:
        cell = row[col]
        for m in CITED.finditer(cell):
            assert m["id"] in notes, f"{m[0]}: footnote [^{m['id']}] has no `file:key` definition in the section"
            file, key = notes[m["id"]]
            assert file == "latest.json", f"{m[0]}: every figure of the page comes from latest.json (one run per table)"
            stored = resolve(report, key)
            checked += 1
            if not shown_equals(m["value"], stored):
                wrong.append(f"{key}: page {m['value']}, latest.json {stored}")
        uncited = re.findall(r"\d", PARAMETER.sub("", CITED.sub("", cell)))
        assert not uncited, f"a number without a citation in the figure column: {CITED.sub('…', cell)!r}"
        if any(notes[m["id"]][1].startswith("scale_bench.") for m in CITED.finditer(cell)):
            assert "simulated" in " ".join(row).lower(), f"a simulated figure not labelled 'simulated': {row[0]!r}"
    assert not wrong, wrong
    assert checked >= 10, f"only {checked} cited figures found: is the table in the citation format?"


def test_every_footnoted_number_in_the_section_equals_its_value():
    """The prose under the table may quote figures too; each one with a footnote is checked the same way."""
    page = PAGE.read_text(encoding="utf-8")
    notes = footnotes(page)
    report = json.loads((RESULTS / "latest.json").read_text(encoding="utf-8"))
    wrong = []
    for m in CITED.finditer(performance_section(page)):
        assert m["id"] in notes, f"{m[0]}: footnote [^{m['id']}] has no definition"
        file, key = notes[m["id"]]
        assert file == "latest.json", m[0]
        if not shown_equals(m["value"], resolve(report, key)):
            wrong.append(f"{key}: page {m['value']}, latest.json {resolve(report, key)}")
    assert not wrong, wrong


def test_no_projection_is_below_its_bound():
    report = json.loads((RESULTS / "latest.json").read_text(encoding="utf-8"))
    scale = report["results"].get("scale_bench")
    if scale is None or scale.get("error"):
        pytest.skip("no scale_bench result in latest.json")
    grid = scale["figures"]["grid_hours"]
    assert grid, "no projections"
    for gpus, row in grid.items():
        assert row["seconds"] >= row["bound_s"] >= row["critical_path_s"] - 1e-6, (gpus, row)
        assert row["hours"] >= row["bound_hours"], (gpus, row)


def test_cited_benchmarks_ran_in_full_and_recorded_their_load():
    report = json.loads((RESULTS / "latest.json").read_text(encoding="utf-8"))
    page = PAGE.read_text(encoding="utf-8")
    cited = {key.split(".", 1)[0] for _, key in footnotes(page).values()}
    for bench in sorted(cited):
        run = report["results"][bench].get("run", {})
        assert run.get("when") and run.get("command"), (bench, run)
        assert not run.get("quick"), f"{bench}: the page cites a --quick run"
        assert "load_avg_1m" in run, bench
