"""`core.writes.atomic_parquet(..., merge_on=KEY)`: the one write of a table that is compacted again (the eval log's
calls and attempts after a resume): the rows already in the file stay first, a new row whose key the file holds is
dropped, rows of one key among the new ones are kept once (the first), and a failed write leaves the file whole."""

from __future__ import annotations

import errno
from pathlib import Path

import polars as pl
import pytest

from emocaustics.core.errors import WriteFailed
from emocaustics.core.writes import atomic_parquet


def test_merge_keeps_the_rows_there_and_adds_the_new_keys_after_them(tmp_path: Path) -> None:
    path = tmp_path / "calls.parquet"
    atomic_parquet(pl.DataFrame({"id": ["a", "b"], "v": [1, 2]}), path, merge_on=["id"])
    atomic_parquet(pl.DataFrame({"id": ["b", "c", "c"], "v": [20, 3, 30]}), path, merge_on=["id"])
    assert pl.read_parquet(path).rows() == [("a", 1), ("b", 2), ("c", 3)]


def test_merge_of_a_new_file_keeps_each_key_once(tmp_path: Path) -> None:
    path = tmp_path / "attempts.parquet"
    atomic_parquet(pl.DataFrame({"id": ["x", "x", "y"], "n": [1, 2, 3]}), path, merge_on=["id"])
    assert pl.read_parquet(path).rows() == [("x", 1), ("y", 3)]


def test_merge_without_a_key_replaces_the_file(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    atomic_parquet(pl.DataFrame({"id": ["a"]}), path)
    atomic_parquet(pl.DataFrame({"id": ["b", "b"]}), path)
    assert pl.read_parquet(path)["id"].to_list() == ["b", "b"]


def test_a_failed_merge_leaves_the_file_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "calls.parquet"
    atomic_parquet(pl.DataFrame({"id": ["a"], "v": [1]}), path, merge_on=["id"])

    def full(self: pl.DataFrame, *a: object, **k: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", full)
    with pytest.raises(WriteFailed, match=f"cannot write {path}: No space left on device"):
        atomic_parquet(pl.DataFrame({"id": ["b"], "v": [2]}), path, merge_on=["id"])
    monkeypatch.undo()
    assert pl.read_parquet(path).rows() == [("a", 1)]
