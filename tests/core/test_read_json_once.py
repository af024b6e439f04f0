"""One JSON file reader (`core.textfile.read_json`): ECPE's predictions and gold and narrative's JSON v3 files are
read by it, so a file that is not JSON is said alike everywhere (file, line, column), and a BOM and CRLF are fine."""

from __future__ import annotations

from pathlib import Path

import pytest

from emocaustics.core.errors import DataError
from emocaustics.core.textfile import parse_json, read_json

BROKEN = b'{\r\n  "a": 1,\r\n  "b": [1, 2,, 3]\r\n}\r\n'


def test_read_json_takes_bom_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "ok.json"
    path.write_bytes(b"\xef\xbb\xbf" + b'{\r\n  "a": [1, "\xc3\xa9"]\r\n}\r\n')
    assert read_json(path) == {"a": [1, "é"]}


def test_a_file_that_is_not_json_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_bytes(BROKEN)
    with pytest.raises(DataError) as got:
        read_json(path)
    assert got.value.file == str(path) and got.value.record == "line 3"
    assert got.value.detail.startswith("not JSON (Expecting value at line 3 column ")
    with pytest.raises(DataError) as again:
        parse_json(BROKEN.decode().replace("\r\n", "\n"), "in memory")
    assert (again.value.detail, again.value.record) == (got.value.detail, "line 3")
    with pytest.raises(DataError, match="no such JSON v3 file"):
        read_json(tmp_path / "absent.json", what="JSON v3 file")


def test_tasks_say_it_as_the_reader_does(tmp_path: Path) -> None:
    from emocaustics.tasks.ecpe.cli import prediction_files
    from emocaustics.tasks.narrative.io import load_story
    from emocaustics.tasks.narrative.schema import NarrativeFormatError

    path = tmp_path / "Subtask_1_pred.json"
    path.write_bytes(BROKEN)
    with pytest.raises(DataError) as said:
        read_json(path)
    story = load_story(path)
    assert isinstance(story, NarrativeFormatError)
    assert (story.detail, story.file, story.record) == (said.value.detail, str(path), "line 3")
    (_, ecpe), = prediction_files(path).values()
    assert isinstance(ecpe, DataError) and str(ecpe) == str(said.value)
