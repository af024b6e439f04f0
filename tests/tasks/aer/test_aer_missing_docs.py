"""Issue 53 item 16: a split without docs.json (dev in the public snapshot, the README's old example) was reported as
if `dev_data/docs.json` held no documents for its topics, naming that file as the one at fault; the error now says the
file is not there and names the questions file it read, while a docs.json missing some topics is still named."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.aer.aer_fixtures import question, topic, write_dataset
from emocaustics.core.errors import DataError
from emocaustics.core.task import get_task, parse_options


def _load(root: Path, split: str):
    task = get_task("aer")
    return task.load(task.Dataset(split=split, data=str(root)), parse_options(task, {"method": "llm",
                                                                                      "context": "full"}))


def test_a_split_without_docs_json_says_the_file_is_not_there(tmp_path: Path) -> None:
    write_dataset(tmp_path, {"dev": ([question(1, 7)], None)})
    with pytest.raises(DataError) as err:
        _load(tmp_path, "dev")
    assert err.value.file == str(tmp_path / "dev_data" / "questions.jsonl")
    assert f"have no documents (there is no {tmp_path / 'dev_data' / 'docs.json'}) -- topic(s) 7 (q-1)" in str(err.value)


def test_a_docs_json_without_a_topic_is_named_as_the_file_at_fault(tmp_path: Path) -> None:
    write_dataset(tmp_path, {"sample": ([question(1, 1), question(2, 2)], [topic(1)])})
    with pytest.raises(DataError) as err:
        _load(tmp_path, "sample")
    assert err.value.file == str(tmp_path / "sample_data" / "docs.json") and "there is no" not in str(err.value)
