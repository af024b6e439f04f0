"""The loader's index cache (data/loadcache.py): a hit gives exactly what a full load gives, reads only the selected
dialogues' files, and any change to the folder, a broken entry or an unwritable cache falls back to the full load."""

from __future__ import annotations

import json
import logging
import os
import pickle
import shutil
from pathlib import Path

import pytest

from emocaustics.core.errors import UsageError
from emocaustics.tasks.longdialogue.data import loadcache
from emocaustics.tasks.longdialogue.data.load import SAMPLE_ROOT, DataDefectError, load_corpus
from emocaustics.tasks.longdialogue.data.loadcache import LazyDialogues
from emocaustics.tasks.longdialogue.data.subsets import resolve

LONG3 = [207, 218, 223]
OLD_NS = 1_600_000_000 * 10**9  # 2020: an mtime well outside the racy window


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """This module's cache folder only (the pairing cache stays where it is: recomputing it costs seconds)."""
    folder = tmp_path / "cache"
    monkeypatch.setattr(loadcache, "cache_root", lambda: folder)
    return folder / "dataset-index"


def _same(cold, warm) -> None:
    assert type(cold.dialogues) is dict and type(warm.dialogues) is LazyDialogues  # a full load, then a hit
    assert list(warm.dialogues) == list(cold.dialogues) and len(warm.dialogues) == len(cold.dialogues)
    assert warm.dialogues == cold.dialogues and dict(warm.dialogues) == cold.dialogues
    assert warm.defects == cold.defects and (warm.root, warm.pairing) == (cold.root, cold.pairing)


def _sample_copy(dst: Path) -> Path:
    shutil.copytree(SAMPLE_ROOT, dst)
    for f in dst.rglob("*.json"):  # as published data: files older than the racy window
        os.utime(f, ns=(OLD_NS, OLD_NS))
    return dst


# ---------------------------------------------------------------------------------------------- the published data

@pytest.mark.published
@pytest.mark.parametrize("subset,ids", [("sample", None), ("all", LONG3), ("all", None)])
def test_hit_equals_full_load(published_root, cache, subset, ids):
    cold_d, cold = resolve(subset, ids, root=published_root)
    warm_d, warm = resolve(subset, ids, root=published_root)
    assert warm_d == cold_d and [d.id for d in warm_d] == [d.id for d in cold_d]
    _same(cold, warm)
    if ids:
        assert [len(d) for d in warm_d] == [250, 193, 212]
    if subset == "all":
        assert len(warm_d) == (3 if ids else 400) and len(warm.defects) == 1364


@pytest.mark.published
def test_hit_reads_only_the_selected_files(published_root, cache, monkeypatch):
    resolve("all", LONG3, root=published_root)  # writes the entry
    read: list[str] = []
    original = Path.read_bytes

    def counting(self: Path) -> bytes:
        if str(self).startswith(str(published_root)):
            read.append(f"{self.parent.name}/{self.name}")
        return original(self)

    monkeypatch.setattr(Path, "read_bytes", counting)
    dialogues, corpus = resolve("all", LONG3, root=published_root)
    assert sorted(read) == sorted(f"{k}/{f[0]}" for d in dialogues for k, f in (("chat", d.chat_files),
                                                                               ("emo", d.emo_files)))
    assert len(read) == 6 and len(corpus.dialogues) == 400 and len(read) == 6  # len and `in` read nothing


@pytest.mark.published
def test_bad_ids_fail_the_same_warm(published_root, cache):
    errors = []
    for _ in range(2):
        for subset, ids in (("all", [207, 9999]), ("long-20", [1])):
            with pytest.raises(UsageError) as exc:
                resolve(subset, ids, root=published_root)
            errors.append(str(exc.value))
    assert errors[:2] == errors[2:] and "[9999]" in errors[0] and "[1]" in errors[1]
    assert len(list(cache.iterdir())) == 1  # the second round was a hit


# ---------------------------------------------------------------------------------------- a copy of the sample data

def test_options_and_strict_hit_equal_the_full_load(tmp_path, cache, caplog, monkeypatch):
    root = _sample_copy(tmp_path / "d")
    emo = root / "emo" / "emo_4.json"
    emo.write_text(emo.read_text(encoding="utf-8").replace('"reason": "', '"reason": ', 1), encoding="utf-8")
    os.utime(emo, ns=(OLD_NS, OLD_NS))  # malformed at line 9, and cached
    for pairing, repair in (("verified", False), ("published", False), ("verified", True)):
        with caplog.at_level(logging.WARNING):
            cold = load_corpus(root, pairing=pairing, repair=repair)
            warm = load_corpus(root, pairing=pairing, repair=repair)
        _same(cold, warm)
        assert warm.dialogues[4].emo_files == ("emo_4.json",)  # paired from the raw text
        assert (warm.dialogues[4].chains is not None) is repair  # json-repair reads it again on the hit
    assert len(list(cache.iterdir())) == 3
    warnings = [r.getMessage() for r in caplog.records if "PAIRING BY FILE NUMBER" in r.getMessage()]
    assert len(warnings) == 2 and warnings[0] == warnings[1]
    messages, hits = [], []
    monkeypatch.setattr(loadcache, "lookup", lambda p, real=loadcache.lookup: hits.append(real(p)) or hits[-1])
    for _ in range(2):  # the first from a hit of the non-strict entry, the second from a full load
        with pytest.raises(DataDefectError) as exc:
            load_corpus(root, strict=True)
        messages.append(str(exc.value))
        shutil.rmtree(cache, ignore_errors=True)  # the second load: a full one
    assert messages[0] == messages[1] and messages[0].startswith("1 malformed file(s) under --strict: emo_4.json "
                                                                 "line 9")
    assert [h is not None for h in hits] == [True, False]


def test_a_changed_file_misses(tmp_path, cache):
    root = _sample_copy(tmp_path / "d")
    before = load_corpus(root)
    assert type(load_corpus(root).dialogues) is LazyDialogues
    chat = root / "chat" / "chat_3.json"
    old = json.loads(chat.read_text(encoding="utf-8"))[0]["sentence"]
    chat.write_text(chat.read_text(encoding="utf-8").replace(old, old[1:] + old[0], 1), encoding="utf-8")
    after = load_corpus(root)
    assert type(after.dialogues) is dict  # a miss
    assert after.dialogues[3].utterances[0].sentence == old[1:] + old[0] != old
    assert after.dialogues[3] != before.dialogues[3] and after.dialogues[1] == before.dialogues[1]


def test_a_same_size_change_with_the_old_mtime_misses(tmp_path, cache):
    root = _sample_copy(tmp_path / "d")
    load_corpus(root)
    chat = root / "chat" / "chat_3.json"
    data = chat.read_bytes()
    i = data.index(b'"sentence"')
    chat.write_bytes(data[:i] + data[i:].replace(b"\n", b"\r", 1))  # one byte changed for another
    os.utime(chat, ns=(OLD_NS, OLD_NS))  # mtime as before: the inode's change time still tells
    assert type(load_corpus(root).dialogues) is dict


def test_added_and_removed_files_miss(tmp_path, cache):
    root = _sample_copy(tmp_path / "d")
    first = load_corpus(root)
    shutil.copy2(root / "chat" / "chat_2.json", root / "chat" / "chat_9.json")
    second = load_corpus(root)
    assert type(second.dialogues) is dict and second.dialogues[2].chat_files == ("chat_2.json", "chat_9.json")
    assert [d.file for d in second.defects if d.kind == "duplicate"] == ["chat_9.json"]
    os.unlink(root / "chat" / "chat_9.json")
    third = load_corpus(root)
    assert third.dialogues == first.dialogues and third.defects == first.defects


def test_unwritable_cache_still_loads(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    monkeypatch.setattr(loadcache, "cache_root", lambda: blocker / "cache")  # mkdir fails, even for root
    root = _sample_copy(tmp_path / "d")
    a, b = load_corpus(root), load_corpus(root)
    assert type(a.dialogues) is dict and type(b.dialogues) is dict
    assert a.dialogues == b.dialogues and len(a.dialogues) == 8 and a.defects == b.defects


@pytest.mark.parametrize("garbage", [b'{"key": "', b"\x00\xff", b"[]", b'{"key": null}', "KEYED"])
def test_a_corrupt_entry_is_ignored_and_rewritten(tmp_path, cache, garbage):
    root = _sample_copy(tmp_path / "d")
    cold = load_corpus(root)
    (entry,) = cache.iterdir()
    if garbage == "KEYED":  # the right key, a broken body
        garbage = json.dumps({"key": json.loads(entry.read_bytes())["key"], "n_read": 0, "defects": 5,
                              "dialogues": []}).encode()
    entry.write_bytes(garbage)
    again = load_corpus(root)
    assert type(again.dialogues) is dict and again.dialogues == cold.dialogues and again.defects == cold.defects
    _same(cold, load_corpus(root))  # the entry was written anew


def test_a_lazy_corpus_pickles_as_the_full_one(tmp_path, cache):
    root = _sample_copy(tmp_path / "d")
    cold = load_corpus(root)
    warm = load_corpus(root)
    assert 9 not in warm.dialogues and warm.dialogues.get(9) is None
    copy = pickle.loads(pickle.dumps(warm))
    assert type(copy.dialogues) is dict and copy.dialogues == cold.dialogues and copy.defects == cold.defects
