"""README's performance table against the one results file `make bench` writes (no engine, no benchmark run).

Every figure in the table's "figure" column is written `VALUE[unit] `latest.json:BENCH.FIGURE.PATH``; this test reads
`benchmarks/results/latest.json`, resolves each key (`results[BENCH]["figures"][FIGURE][PATH...]`) and checks that the
value shown equals the stored one at the precision shown. A number in that column without a citation fails, so the
table and the file cannot drift apart. Simulated figures must say "simulated" in their row, and no projection of the
scale benchmark may sit below its bound.
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
UNIT = r"(?:\s?(?:×|x|%|s|h|min|ms|GiB|MiB|req/s|tok/s))?"
CITED = re.compile(r"(?P<value>-?\d[\d,]*(?:\.\d+)?)" + UNIT + r"\s*`(?P<file>[\w.-]+\.json):(?P<key>[^`\s]+)`")


def performance_table(readme: str) -> list[list[str]]:
    """The rows (cells) of the first table under the "## Performance" heading."""
    section = readme.split("\n## Performance", 1)
    assert len(section) == 2, "README has no '## Performance' section"
    body = section[1].split("\n## ", 1)[0]
    rows = [line for line in body.splitlines() if line.startswith("|")]
    assert len(rows) > 2, "no table under '## Performance'"
    return [[c.strip() for c in line.strip().strip("|").split("|")] for line in rows]


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
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = performance_table(readme)
    header = [c.lower() for c in table[0]]
    assert "figure" in header, header
    col = header.index("figure")
    report = json.loads((RESULTS / "latest.json").read_text(encoding="utf-8"))
    checked, wrong = 0, []
    for row in table[2:]:
        cell = row[col]
        for m in CITED.finditer(cell):
            assert m["file"] == "latest.json", f"{m[0]}: every README figure comes from latest.json (one run per table)"
            stored = resolve(report, m["key"])
            checked += 1
            if not shown_equals(m["value"], stored):
                wrong.append(f"{m['key']}: README {m['value']}, latest.json {stored}")
        uncited = re.findall(r"\d", CITED.sub("", cell))
        assert not uncited, f"a number without a citation in the figure column: {CITED.sub('…', cell)!r}"
        if any(m["key"].startswith("scale_bench.") for m in CITED.finditer(cell)):
            assert "simulated" in " ".join(row).lower(), f"a simulated figure not labelled 'simulated': {row[0]!r}"
    assert not wrong, wrong
    assert checked >= 10, f"only {checked} cited figures found: is the table in the citation format?"


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
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    cited = {m["key"].split(".", 1)[0] for row in performance_table(readme)[2:] for m in CITED.finditer(" ".join(row))}
    for bench in sorted(cited):
        run = report["results"][bench].get("run", {})
        assert run.get("when") and run.get("command"), (bench, run)
        assert not run.get("quick"), f"{bench}: the README cites a --quick run"
        assert "load_avg_1m" in run, bench
