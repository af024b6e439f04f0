"""Loading folders: duplicates, content-verified pairing (shuffled files), malformed annotations, subsets."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from emocaustics.core.errors import UsageError
from emocaustics.tasks.longdialogue.data.fetch import SOURCE
from emocaustics.tasks.longdialogue.data.load import SAMPLE_ROOT, load_corpus, load_sample
from emocaustics.tasks.longdialogue.data.pairing import text_sorted_rank
from emocaustics.tasks.longdialogue.data.subsets import parse_ids, resolve

# a derangement of the sample's 8 dialogues: chat file PERM[k] holds the dialogue that emo_k annotates
PERM = {1: 5, 2: 7, 3: 1, 4: 8, 5: 2, 6: 4, 7: 3, 8: 6}


def _copy(dst: Path, chat_names: dict[int, int] | None = None) -> Path:
    (dst / "chat").mkdir(parents=True)
    (dst / "emo").mkdir()
    for k in range(1, 9):
        shutil.copy(SAMPLE_ROOT / "chat" / f"chat_{k}.json", dst / "chat" / f"chat_{(chat_names or {}).get(k, k)}.json")
        shutil.copy(SAMPLE_ROOT / "emo" / f"emo_{k}.json", dst / "emo" / f"emo_{k}.json")
    return dst


def test_sample_loads_clean_and_paired_by_number():
    c = load_sample()
    assert sorted(c.dialogues) == list(range(1, 9))
    for k, d in c.dialogues.items():
        assert d.chat_files == (f"chat_{k}.json",) and d.emo_files == (f"emo_{k}.json",)
        assert d.source == "sample" and d.chains is not None and 6 <= len(d) <= 20 and 2 <= len(d.holders) <= 3
        assert set(d.chains) == set(d.holders)
    assert {x.kind for x in c.defects} <= {"source_self"}
    assert any(len(e.source_ids) > 1 for d in c.dialogues.values() for evs in d.chains.values()
               for ev in evs for e in ev.emotions)


def test_duplicates_are_counted_once_and_keep_every_name(tmp_path):
    root = _copy(tmp_path / "d")
    for k in (1, 2, 3):  # publish three dialogues twice, annotations too
        shutil.copy(root / "chat" / f"chat_{k}.json", root / "chat" / f"chat_{k + 8}.json")
        shutil.copy(root / "emo" / f"emo_{k}.json", root / "emo" / f"emo_{k + 8}.json")
    c = load_corpus(root)
    assert len(c.dialogues) == 8
    assert c.dialogues[2].chat_files == ("chat_2.json", "chat_10.json")
    assert c.dialogues[2].emo_files == ("emo_2.json", "emo_10.json")
    dups = [x for x in c.defects if x.kind == "duplicate"]
    assert sorted(x.file for x in dups) == sorted([f"chat_{k}.json" for k in (9, 10, 11)] +
                                                  [f"emo_{k}.json" for k in (9, 10, 11)])
    assert not [x for x in c.defects if x.kind == "mispaired"]


def test_shuffled_chat_numbers_are_untangled_from_content(tmp_path):
    c = load_corpus(_copy(tmp_path / "d", PERM))
    for k, n in PERM.items():
        assert c.dialogues[k].chat_files == (f"chat_{n}.json",), k
        assert c.dialogues[k].emo_files == (f"emo_{k}.json",)
    mis = {x.file: x.message for x in c.defects if x.kind == "mispaired"}
    assert set(mis) == {f"emo_{k}.json" for k in PERM}
    assert "annotates chat_5.json" in mis["emo_1.json"]
    assert not [x for x in c.defects if x.kind.startswith("pairing_")]


def test_published_pairing_pairs_by_number_and_warns(tmp_path, caplog):
    root = _copy(tmp_path / "d", PERM)
    with caplog.at_level(logging.WARNING):
        c = load_corpus(root, pairing="published")
    assert "PAIRING BY FILE NUMBER" in caplog.text
    assert c.pairing == "published"
    assert c.dialogues[1].chat_files == ("chat_1.json",) and c.dialogues[1].emo_files == ("emo_1.json",)
    # chat_1 now holds sample dialogue 3, while emo_1 annotates sample dialogue 1: the reference way mixes them up
    assert c.dialogues[1].utterances == load_sample().dialogues[3].utterances
    assert len([x for x in c.defects if x.kind == "mispaired"]) == 8


def test_malformed_annotation_keeps_its_dialogue(tmp_path):
    root = _copy(tmp_path / "d", PERM)
    p = root / "emo" / "emo_4.json"
    text = p.read_text(encoding="utf-8")
    p.write_text(text.replace('"reason": "', '"reason": ', 1), encoding="utf-8")
    c = load_corpus(root)
    d = c.dialogues[4]
    assert d.chains is None and d.chat_files == ("chat_8.json",)  # still paired from the raw text
    bad = [x for x in c.defects if x.kind == "malformed"]
    assert [(x.file, x.line) for x in bad] == [("emo_4.json", 9)]
    with pytest.raises(UsageError, match="emo_4.json line 9"):
        load_corpus(root, strict=True)
    fixed = load_corpus(root, repair=True)
    assert fixed.dialogues[4].chains == load_sample().dialogues[4].chains
    assert [x.kind for x in fixed.defects if x.file == "emo_4.json" and x.kind in ("repaired", "malformed")] == [
        "repaired"]


def test_unpaired_chat_is_kept_and_reported(tmp_path):
    root = _copy(tmp_path / "d")
    (root / "emo" / "emo_6.json").unlink()
    c = load_corpus(root)
    assert c.dialogues[6].chains is None and c.dialogues[6].chat_files == ("chat_6.json",)
    assert any(x.kind == "unpaired" and x.file == "chat_6.json" for x in c.defects)
    assert c.dialogues[5].chat_files == ("chat_5.json",)


def test_data_root_resolution(tmp_path, monkeypatch):
    monkeypatch.delenv("EMOCAUSTICS_DATA", raising=False)
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))
    with pytest.raises(UsageError, match="looked in .*cache"):
        SOURCE.locate()
    with pytest.raises(UsageError, match="chat/ and emo/"):
        SOURCE.locate(tmp_path)
    root = _copy(tmp_path / "d")
    monkeypatch.setenv("EMOCAUSTICS_DATA", str(root))
    assert SOURCE.locate() == root
    assert SOURCE.locate(SAMPLE_ROOT) == SAMPLE_ROOT


def test_the_pairing_is_kept_in_the_cache_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))
    load_corpus(_copy(tmp_path / "d"))  # a folder never loaded: matched, and the match kept for the next load
    assert len(list((tmp_path / "cache" / "pairing").glob("*.json"))) == 1


def test_subsets_and_ids(tmp_path):
    dialogues, corpus = resolve("sample", [3, 1])
    assert [d.id for d in dialogues] == [1, 3] and corpus.dialogues[1].source == "sample"
    with pytest.raises(UsageError, match="unknown subset"):
        resolve("paper-1000", None)
    with pytest.raises(UsageError, match=r"\[99\]"):
        resolve("sample", [1, 99])
    with pytest.raises(UsageError, match="paper-100"):
        resolve("paper-100", None, root=_copy(tmp_path / "d"))  # only 8 dialogues there
    assert parse_ids("1, 2，3") == [1, 2, 3] and parse_ids(None) is None
    with pytest.raises(UsageError, match="'x'"):
        parse_ids("1,x")


def test_text_sorted_rank_matches_the_documented_examples():
    r = text_sorted_rank(400)
    assert (r[1], r[2], r[100]) == (1, 112, 3)
