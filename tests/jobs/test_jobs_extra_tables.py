"""A scorer's extra tables (`Scored.tables` beyond `sample_info`) reach the run folder as `tables/<name>.parquet`,
every config's rows with its `run`, whatever their columns."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from emocaustics.jobs.results import with_run as _with_run, write_extra_tables


def test_every_configs_extra_tables_are_written_with_their_run(tmp_path: Path) -> None:
    per_emotion_a = pl.DataFrame({"emotion": ["joy", "anger"], "f1": [0.5, 0.25]})
    per_emotion_b = pl.DataFrame({"emotion": ["joy"], "f1": [1.0], "support": [3]})  # a column the other lacks
    problems = pl.DataFrame({"file": ["a.json"], "message": ["pair (3, 9): utterance 9 does not exist"],
                             "run": ["x"]})  # a column already named `run` is kept
    tables = {"per_emotion": [_with_run(per_emotion_a, "ecpe_a"), _with_run(per_emotion_b, "ecpe_b")],
              "problems": [_with_run(problems, "ecpe_a")]}
    write_extra_tables(tmp_path / "tables", tables)
    assert sorted(p.name for p in (tmp_path / "tables").iterdir()) == ["per_emotion.parquet", "problems.parquet"]
    got = pl.read_parquet(tmp_path / "tables" / "per_emotion.parquet")
    assert got.columns[0] == "run"
    assert got.rows() == [("ecpe_a", "joy", 0.5, None), ("ecpe_a", "anger", 0.25, None), ("ecpe_b", "joy", 1.0, 3)]
    kept = pl.read_parquet(tmp_path / "tables" / "problems.parquet")
    assert kept.columns == ["run", "file", "message", "table_run"] and kept["table_run"].to_list() == ["x"]


def test_no_extra_tables_no_folder(tmp_path: Path) -> None:
    write_extra_tables(tmp_path / "tables", {})
    assert not (tmp_path / "tables").exists()
