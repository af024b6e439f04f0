"""The report is written from what the tables phase handed it (`tables.Tables`: the summary, the paired tests, the
tasks' tables across configs), never from the files just written: with significance.csv and tables/ gone from the
run folder the page is the same. Hand-made per-sample scores: no engine, no Ray."""

from __future__ import annotations

import re
import shutil

import polars as pl

from emocaustics.report.html import write_report
from emocaustics.report.tables import SCORE_COLUMNS, write_tables

from report.test_report import rows


def test_the_report_reads_no_table_back(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    scores = pl.DataFrame(rows("oracle", "sextuple", "oracle", "calibration", [1.0, 1.0, 1.0])
                          + rows("w10", "sextuple", "window", "engine-check", [0.1, 0.3, 0.0], model="smoke", window=10)
                          + rows("w20", "sextuple", "window", "engine-check", [0.5, 0.4, 0.6], model="smoke", window=20),
                          schema_overrides=SCORE_COLUMNS)
    tables = write_tables(run_dir, scores)

    def page() -> str:  # the heat map (matplotlib's SVG) differs from one drawing to the next: its date, its ids
        text = write_report(run_dir, scores, tables).read_text(encoding="utf-8")
        return re.sub(r"<div class='chart significance'.*?</div>", "", text, flags=re.S)

    before = page()
    assert tables.pairs.height and "<h2>Significance: sextuple</h2>" in before
    (run_dir / "significance.csv").unlink()
    shutil.rmtree(run_dir / "tables", ignore_errors=True)
    assert page() == before
