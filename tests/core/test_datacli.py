"""`emocaustics data fetch TASK` for every in-tree task, the one way in (the older `ecpe fetch`, `human fetch` and `data
fetch` without a task are gone): each task's declared source served from a local archive (file://), no network."""

from __future__ import annotations

import dataclasses
import io
import tarfile

import pytest

from emocaustics.cli import main
from emocaustics.core.task import get_task


def tarball(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, content in files.items():
            info = tarfile.TarInfo(f"repo-commit/{name}")
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return buf.getvalue()


ARCHIVES = {  # task -> (repository files, a file the fetched folder must hold)
    "aer": ({"sample_data/questions.jsonl": b"{}\n", "README.md": b"#"}, "sample_data/questions.jsonl"),
    "ecpe": ({"data/Subtask_1_test.json": b"[]", "data/Subtask_2_test.json": b"[]"}, "Subtask_2_test.json"),
    "human": ({"data/hits.json": b"{}", "LICENSE": b"MIT"}, "hits.json"),
    "sextuple": ({"datasets/chat/chat_1.json": b"[]", "datasets/emo/emo_1.json": b"{}"}, "emo/emo_1.json"),
}


@pytest.fixture
def served(tmp_path, monkeypatch):
    """Each in-tree task's declared source, its URL replaced by a local archive of the same layout."""
    for task, (files, _) in ARCHIVES.items():
        archive = tmp_path / f"{task}.tar.gz"
        archive.write_bytes(tarball(files))
        cls = type(get_task(task))
        (source,) = cls.data_sources
        monkeypatch.setattr(cls, "data_sources", (dataclasses.replace(source, urls=(archive.as_uri(),)),))
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))
    return tmp_path


@pytest.mark.parametrize("task", sorted(ARCHIVES))
def test_data_fetch_task_into_the_cache_where_the_loader_finds_it(served, task, capsys, monkeypatch):
    (source,) = get_task(task).data_sources
    monkeypatch.delenv(source.env_var, raising=False)
    assert main(["data", "fetch", task]) == 0
    cached = served / "cache" / "datasets" / source.name
    assert (cached / ARCHIVES[task][1]).is_file() and "Source: file://" in (cached / "SOURCE.md").read_text()
    assert str(cached) in capsys.readouterr().out
    assert source.locate(None) == cached  # what the task's loader calls


@pytest.mark.parametrize("argv", [["ecpe", "fetch"], ["human", "fetch"], ["data", "fetch"],
                                  ["data", "fetch", "aer", "--dest", "x"]])
def test_the_older_fetch_verbs_are_gone(argv, capsys):
    """`data fetch TASK [--to DIR]` is the one way in: the older verbs (deprecated for rounds) are argparse errors."""
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2 and "error:" in capsys.readouterr().err


def test_a_task_with_nothing_to_fetch_and_an_unknown_name_are_one_line_errors(capsys):
    assert main(["data", "fetch", "narrative"]) == 2
    assert "task 'narrative' declares no data to fetch" in capsys.readouterr().err
    assert main(["data", "fetch", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "tasks with data to fetch: aer, dialogue-judge, ecpe, emotion, human, sextuple" in err
