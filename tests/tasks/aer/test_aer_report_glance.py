"""The report's topic table (`report.glance`): every topic of the job (also one a config of this table lacks), the
questions of its first config, one score column per config of the table in the job's order, null where it has none."""

from __future__ import annotations

import polars as pl

from emocaustics.tasks.aer.report import TOPIC, glance


def test_glance_rows_columns_and_gaps() -> None:
    long = pl.DataFrame({"run": ["b", "b", "a", "c", "c"], TOPIC: [2, 5, 2, 5, 9], "questions": [4, 3, 4, 3, 7],
                         "score": [0.5, 0.25, 1.0, 0.75, 0.0]})
    got = glance(long, ["b", "a"])
    assert got.columns == ["topic", "questions", "b", "a"]
    assert got.rows() == [(2, 4, 0.5, 1.0), (5, 3, 0.25, None), (9, 7, None, None)]
    assert glance(long, ["c"]).rows() == [(2, 4, None), (5, 3, 0.75), (9, 7, 0.0)]
