"""`emocaustics data fetch TASK` for every in-tree task, and the older ways in (`ecpe fetch`, `human fetch`, `python -m
emocaustics.tasks.aer.fetch`) still working with a one-line note: each task's declared source served from a local
archive (file://), no network."""

from __future__ import annotations

import dataclasses
import io
import runpy
import sys
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


@pytest.mark.parametrize("argv,task,to", [
    (["ecpe", "fetch", "--dest", "{out}"], "ecpe", "Subtask_1_test.json"),
    (["human", "fetch", "--dest", "{out}"], "human", "hits.json"),
    (["data", "fetch", "--dest", "{out}"], "sextuple", "chat/chat_1.json"),
])
def test_older_fetch_verbs_still_work_with_a_one_line_note(served, argv, task, to, capsys):
    out = served / "out"
    assert main([a.format(out=out) for a in argv]) == 0
    assert (out / to).is_file()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is deprecated; use `emocaustics data fetch" in err


@pytest.mark.filterwarnings("ignore:'emocaustics.tasks.aer.fetch' found in sys.modules:RuntimeWarning")
def test_python_m_aer_fetch_still_works(served, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["fetch", str(served / "aer-copy")])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_module("emocaustics.tasks.aer.fetch", run_name="__main__")
    assert exit_.value.code == 0 and (served / "aer-copy" / "sample_data" / "questions.jsonl").is_file()
    assert "`emocaustics data fetch aer [--to DIR]`" in capsys.readouterr().err


def test_a_task_with_nothing_to_fetch_and_an_unknown_name_are_one_line_errors(capsys):
    assert main(["data", "fetch", "narrative"]) == 2
    assert "task 'narrative' declares no data to fetch" in capsys.readouterr().err
    assert main(["data", "fetch", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "tasks with data to fetch: aer, ecpe, emotion, human, sextuple" in err
