"""`benchmarks/compare_runs.py`: the before/after check of a refactoring names the first difference of each table,
leaves cost and timing columns aside, and with `--rtol` lets floats differ by the embedder's arithmetic only."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from benchmarks.compare_runs import differences, main


def _run(root: Path, sim: float, label: str = "a", seconds: float = 1.0) -> Path:
    (root / "tables").mkdir(parents=True)
    pl.DataFrame({"run": [label, "b"], "score": [0.5, 1.0], "c_target_sim": [sim, 0.25],
                  "seconds": [seconds, 2.0], "llm_calls": [3, 4]}).write_parquet(root / "scores.parquet")
    pl.DataFrame({"run": ["b", label], "score": [1.0, 0.5]}).write_csv(root / "summary.csv")
    pl.DataFrame({"metric": ["x"], "value": [sim]}).write_parquet(root / "tables" / "extra.parquet")
    return root


def test_cost_and_timing_aside_equal_runs_are_identical(tmp_path, capsys):
    a, b = _run(tmp_path / "a", 0.3), _run(tmp_path / "b", 0.3, seconds=9.0)  # only a wall figure differs
    assert differences(a, b) == []
    assert main([str(a), str(b)]) == 0 and "identical (3 tables)" in capsys.readouterr().out


def test_the_first_difference_of_each_table_is_named(tmp_path):
    a, b = _run(tmp_path / "a", 0.3), _run(tmp_path / "b", 0.3 + 3e-9)
    assert differences(a, b) == [
        "scores.parquet: column c_target_sim differs first at row 0: 0.3 vs 0.300000003",
        "tables/extra.parquet: column value differs first at row 0: 0.3 vs 0.300000003"]
    assert differences(a, b, rtol=1e-6) == []  # within the embedder's arithmetic
    c = _run(tmp_path / "c", 0.3, label="z")  # a renamed config is a difference whatever the tolerance
    assert main(["--rtol", "1e-6", str(a), str(c)]) == 1
    assert [d.split(":")[0] for d in differences(a, c, rtol=1e-6)] == ["scores.parquet", "summary.csv"]


def test_named_added_columns_are_set_aside_only_where_the_earlier_run_lacks_them(tmp_path, capsys):
    a, b = _run(tmp_path / "a", 0.3), _run(tmp_path / "b", 0.3)
    scores = pl.read_parquet(b / "scores.parquet")
    scores.with_columns(pl.lit("topic").alias("cluster_by")).write_parquet(b / "scores.parquet")
    assert differences(a, b) != []  # a column more is a difference unless named
    assert differences(a, b, added={"cluster_by"}) == []
    assert main(["--added", "cluster_by", str(a), str(b)]) == 0
    assert "added in B, set aside: scores.parquet: cluster_by" in capsys.readouterr().out
    scores.with_columns(pl.lit("x").alias("cluster_by")).write_parquet(a / "scores.parquet")  # A has it too: compared
    assert differences(a, b, added={"cluster_by"}) == ["scores.parquet: column cluster_by differs first at row 0: 'x' vs 'topic'"]


def test_rows_are_ordered_again_once_an_added_column_is_set_aside(tmp_path):
    a, b = _run(tmp_path / "a", 0.3), _run(tmp_path / "b", 0.3)
    for root in (a, b):  # two rows tied on score: the order rests on the columns after it
        pl.DataFrame({"score": [1.0, 1.0], "run": ["x", "y"]}).write_parquet(root / "scores.parquet")
    pl.DataFrame({"score": [1.0, 1.0], "kept": [2, 1], "run": ["x", "y"]}).write_parquet(b / "scores.parquet")
    assert differences(a, b, added={"kept"}) == []  # `kept` ordered B's rows y, x before it was set aside
