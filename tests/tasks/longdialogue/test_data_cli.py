"""`emocaustics data stats|fetch emocaustics`: outputs and one-line error exits; fetch's unpacking on a local archive."""

from __future__ import annotations

import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest

from emocaustics.cli import main
from emocaustics.core.errors import UsageError
from emocaustics.tasks.longdialogue.data import fetch as fetch_mod
from emocaustics.tasks.longdialogue.data.load import SAMPLE_ROOT, load_corpus


def test_stats_json_on_sample(capsys):
    assert main(["data", "stats", "--subset", "sample", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["files"] == {"chat": 8, "emo": 8} and s["dialogues"] == 8 and s["duplicates"] == 0
    assert s["utterances"] == sum(len(json.loads(p.read_text("utf-8"))) for p in (SAMPLE_ROOT / "chat").iterdir())
    assert s["mispaired"] == [] and s["malformed"] == []
    assert set(s["utterances_per_dialogue"]) == {"min", "median", "p90", "max"}
    assert set(s["labels"]["sentiment"]) <= {"positive", "negative", "neutral", "ambiguous", "doubt"}


def test_stats_text_and_ids(capsys):
    assert main(["data", "stats", "--subset", "sample", "--ids", "2,3"]) == 0
    out = capsys.readouterr().out
    assert "dialogues: 2 selected of 8" in out and "utterances per dialogue" in out


def test_stats_reports_defects_of_a_broken_folder(tmp_path, capsys):
    root = tmp_path / "d"
    shutil.copytree(SAMPLE_ROOT, root)
    (root / "chat" / "chat_2.json").rename(root / "chat" / "chat_9.json")
    (root / "chat" / "chat_7.json").rename(root / "chat" / "chat_2.json")
    (root / "chat" / "chat_9.json").rename(root / "chat" / "chat_7.json")
    shutil.copy(root / "chat" / "chat_1.json", root / "chat" / "chat_11.json")
    (root / "emo" / "emo_5.json").write_text('{"1": {"events": [}', encoding="utf-8")
    assert main(["data", "stats", "--data", str(root), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["files"]["chat"] == 9 and s["dialogues"] == 8 and s["duplicates"] == 1
    assert {"emo": "emo_2.json", "annotates": "chat_7.json"} in s["mispaired"]
    assert {"emo": "emo_7.json", "annotates": "chat_2.json"} in s["mispaired"] and len(s["mispaired"]) == 2
    assert s["malformed"] == [{"file": "emo_5.json", "line": 1, "column": 19, "error": "Expecting value"}]
    assert s["without_chains"] == [5]
    assert main(["data", "stats", "--data", str(root), "--strict"]) == 2
    assert "emo_5.json line 1 column 19" in capsys.readouterr().err


@pytest.mark.parametrize("argv,msg", [
    (["--subset", "nope"], "unknown subset 'nope'"),
    (["--data", "/no/such/dir"], "/no/such/dir: no such EmoCaustics dataset folder"),
    (["--subset", "sample", "--ids", "1,abc"], "'abc' is not a dialogue id"),
    (["--subset", "sample", "--ids", "42"], "[42]"),
])
def test_stats_user_errors_are_one_line_exit_2(argv, msg, capsys):
    assert main(["data", "stats", *argv]) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1 and "Traceback" not in err


def _github_tarball(with_emo: bool = True) -> bytes:
    buf = io.BytesIO()
    top = f"EmoCaustics-{fetch_mod.COMMIT}"
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        def add(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        add("LICENSE", b"Apache License 2.0")
        add("README.md", b"not data")
        for p in sorted((SAMPLE_ROOT / "chat").iterdir()):
            add(f"datasets/chat/{p.name}", p.read_bytes())
        if with_emo:
            for p in sorted((SAMPLE_ROOT / "emo").iterdir()):
                add(f"datasets/emo/{p.name}", p.read_bytes())
    return buf.getvalue()


def test_unpack_builds_a_loadable_dataset(tmp_path):
    dest = fetch_mod.SOURCE.unpack(_github_tarball(), tmp_path / "cache" / "datasets" / "emocaustics")
    assert sorted(p.name for p in dest.iterdir()) == ["LICENSE", "SOURCE.md", "chat", "emo"]
    assert fetch_mod.COMMIT in (dest / "SOURCE.md").read_text()
    assert len(load_corpus(dest).dialogues) == 8


def test_unpack_rejects_archives_without_data(tmp_path):
    with pytest.raises(UsageError, match="datasets/emo"):
        fetch_mod.SOURCE.unpack(_github_tarball(with_emo=False), tmp_path / "x")
    with pytest.raises(UsageError, match="not a tarball"):
        fetch_mod.SOURCE.unpack(b"<html>rate limited</html>", tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_fetch_command_uses_the_archive_and_fails_in_one_line(tmp_path, capsys):
    archive = tmp_path / "emocaustics.tar.gz"
    archive.write_bytes(_github_tarball())
    for name in ("emocaustics", "sextuple"):  # the data source's name, or a task that reads it
        assert main(["data", "fetch", name, "--to", str(tmp_path / name), "--url", archive.as_uri()]) == 0
        assert len(load_corpus(tmp_path / name).dialogues) == 8
        assert f"EMOCAUSTICS_DATA={tmp_path / name}" in capsys.readouterr().out
    # an unreachable local address stands in for "no network": one line, exit 2, nothing written
    assert main(["data", "fetch", "emocaustics", "--to", str(tmp_path / "nope"),
                 "--url", "http://127.0.0.1:9/none.tar.gz"]) == 2
    err = capsys.readouterr().err
    assert "cannot download" in err and "EMOCAUSTICS_DATA" in err and err.count("\n") == 1
    assert not (tmp_path / "nope").exists()
