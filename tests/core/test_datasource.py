"""The core's data-source mechanism on archives built here (no network): locate order, zip and tar unpacking with
what is kept and what must be there, sha256 verification, mirrors tried in order, damaged downloads named, and a
failed fetch leaving nothing behind."""

from __future__ import annotations

import hashlib
import io
import tarfile
import zipfile

import pytest

from emocaustics.core.datasource import BadArchive, ChecksumMismatch, DataNotFound, DataSource, DownloadFailed


def tarball(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return buf.getvalue()


def zipped(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, content in files.items():
            zf.writestr(name, content)
    return buf.getvalue()


def source(url: str, **kw) -> DataSource:
    base = dict(name="toy", title="Toy data", env_var="TOY_DATA", urls=(url,), keep={"data/": "", "LICENSE": "LICENSE"},
                required=("data/*.json",), marks=("*.json",), what="toy data folder", needs="a .json file")
    return DataSource(**(base | kw))


def test_locate_explicit_then_env_then_cache(tmp_path, monkeypatch):
    src = source("file:///nowhere")
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TOY_DATA", raising=False)
    with pytest.raises(DataNotFound, match=r"give its path \(--data, -D data=PATH under eval, or dataset.data in "
                       r"a job\), set TOY_DATA, or .*`emocaustics data fetch toy`.*looked in"):
        src.locate()
    assert src.located() is None
    for d in ("a", "b", "cache/datasets/toy"):
        (tmp_path / d).mkdir(parents=True)
        (tmp_path / d / "x.json").write_text("{}")
    assert src.locate() == tmp_path / "cache" / "datasets" / "toy" == src.located()
    monkeypatch.setenv("TOY_DATA", str(tmp_path / "b"))
    assert src.locate() == tmp_path / "b"
    assert src.locate(tmp_path / "a") == tmp_path / "a"
    with pytest.raises(DataNotFound, match="not the toy data folder: no a .json file in it"):
        src.locate(tmp_path)
    monkeypatch.setenv("TOY_DATA", str(tmp_path / "gone"))
    with pytest.raises(DataNotFound, match="TOY_DATA=.*gone: no such toy data folder"):
        src.located()


def test_tar_keeps_what_is_declared_and_nothing_unsafe(tmp_path):
    archive = tmp_path / "toy.tar.gz"
    archive.write_bytes(tarball({"top/data/a.json": b"{}", "top/data/sub/b.json": b"[]", "top/LICENSE": b"MIT",
                                 "top/setup.py": b"code", "top/data/../../evil.json": b"x", "/abs.json": b"x"}))
    dest = source(archive.as_uri()).fetch(tmp_path / "out")
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == [
        "LICENSE", "SOURCE.md", "a.json", "sub/b.json"]
    assert not (tmp_path / "evil.json").exists()
    assert archive.as_uri() in (dest / "SOURCE.md").read_text()


def test_zip_with_a_checksum_and_mirrors_tried_in_order(tmp_path):
    data = zipped({"data/a.json": b"{}", "README": b"x"})
    good = tmp_path / "good.zip"
    good.write_bytes(data)
    bad = tmp_path / "bad.zip"
    bad.write_bytes(zipped({"data/a.json": b"{ }"}))
    src = source(bad.as_uri(), format="zip", strip_top=False, sha256=hashlib.sha256(data).hexdigest())
    with pytest.raises(ChecksumMismatch) as info:
        src.fetch(tmp_path / "out")
    assert (info.value.url, info.value.expected, info.value.actual) == (
        bad.as_uri(), hashlib.sha256(data).hexdigest(), hashlib.sha256(bad.read_bytes()).hexdigest())
    assert not (tmp_path / "out").exists()
    dest = src.fetch(tmp_path / "out", urls=("http://127.0.0.1:9/down.zip", bad.as_uri(), good.as_uri()))
    assert (dest / "a.json").read_bytes() == b"{}" and not (dest / "README").exists()
    with pytest.raises(DownloadFailed, match="no URL of Toy data gave the data: cannot download .*; .*sha256 mismatch"):
        src.fetch(tmp_path / "again", urls=("http://127.0.0.1:9/down.zip", bad.as_uri()))


def test_damaged_or_incomplete_archives_are_named_and_leave_the_old_copy(tmp_path):
    dest = tmp_path / "out"
    ok = tmp_path / "ok.tar.gz"
    ok.write_bytes(tarball({"top/data/a.json": b"{}"}))
    source(ok.as_uri()).fetch(dest)
    whole = tarball({f"top/data/{i}.json": bytes(1000) * (i + 1) for i in range(20)})
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(BadArchive, match="is damaged"):
        source(cut.as_uri()).fetch(dest)
    empty = tmp_path / "empty.tar.gz"
    empty.write_bytes(tarball({"top/README": b"x"}))
    with pytest.raises(BadArchive, match=r"has no data/\*\.json \(the toy data folder needs it\)"):
        source(empty.as_uri()).fetch(dest)
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"<html>rate limited</html>")
    with pytest.raises(BadArchive, match="not a tarball"):
        source(junk.as_uri()).fetch(dest)
    assert sorted(p.name for p in dest.iterdir()) == ["SOURCE.md", "a.json"]  # the earlier fetch, untouched
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".toy")] == []  # no staging left behind


def test_a_single_file_source(tmp_path):
    served = tmp_path / "numbers.json"
    served.write_bytes(b"[1, 2]")
    src = DataSource(name="nums", title="Numbers", env_var="NUMS", urls=(served.as_uri(),), format="file",
                     filename="numbers.json", marks=("numbers.json",), sha256=hashlib.sha256(b"[1, 2]").hexdigest())
    dest = src.fetch(tmp_path / "nums")
    assert (dest / "numbers.json").read_bytes() == b"[1, 2]" and src.holds(dest)
    assert f"sha256 of the download: {src.sha256}" in (dest / "SOURCE.md").read_text()
