"""Acceptance numbers on the published EmoCaustics data; skipped, saying why, when the data is not present."""

from __future__ import annotations

import json
import time

import pytest

from emocaustics.cli import main
from emocaustics.tasks.longdialogue.data.load import load_corpus
from emocaustics.tasks.longdialogue.data.pairing import text_sorted_rank
from emocaustics.tasks.longdialogue.data.subsets import LONG_20, resolve

pytestmark = pytest.mark.published


def test_whole_corpus_numbers(published_corpus):
    c = published_corpus
    assert len(c.dialogues) == 400 and sorted(c.dialogues) == list(range(1, 401))
    assert sum(len(d) for d in c.dialogues.values()) == 25040
    assert sum(len(d.chat_files) for d in c.dialogues.values()) == 800
    assert all(len(d.chat_files) == 2 for d in c.dialogues.values())


def test_duplicates_are_k_and_k_plus_400(published_corpus):
    for d in published_corpus.dialogues.values():
        a, b = (int(f[5:-5]) for f in d.chat_files)
        assert b == a + 400


def test_content_pairing_agrees_with_the_renumbering_rule(published_corpus):
    """The issue's rule r(k) is checked against the pairing the loader derived from text, not used to build it:
    every pair that text decided agrees, and only near-twin dialogues were settled otherwise (and reported)."""
    r = text_sorted_rank(400)
    c = published_corpus
    for k, d in c.dialogues.items():
        assert f"chat_{r[k]}.json" in d.chat_files, k
        assert f"emo_{k}.json" in d.emo_files and f"emo_{r[k] + 400}.json" in d.emo_files
    unverified = [x for x in c.defects if x.kind.startswith("pairing_")]
    assert len(unverified) <= 20 and all(x.kind == "pairing_inferred" and "twin" in x.message for x in unverified)
    assert any(x.kind == "mispaired" and x.file == "emo_2.json" and "chat_112.json" in x.message for x in c.defects)


def test_malformed_emo_files_keep_their_dialogues(published_corpus):
    bad = {(x.file, x.line, x.column) for x in published_corpus.defects if x.kind == "malformed"}
    assert {f for f, _, _ in bad} == {"emo_117.json", "emo_144.json", "emo_421.json", "emo_451.json"}
    assert all(line and col for _, line, col in bad)
    for k in (117, 144):
        assert published_corpus.dialogues[k].chains is None and len(published_corpus.dialogues[k]) > 0


def test_repair_recovers_the_malformed_chains(published_root):
    c = load_corpus(published_root, repair=True)
    assert c.dialogues[117].chains and c.dialogues[144].chains
    assert {x.file for x in c.defects if x.kind == "repaired"} == {"emo_117.json", "emo_144.json", "emo_421.json",
                                                                    "emo_451.json"}


def test_named_subsets(published_root):
    p100, _ = resolve("paper-100", None, root=published_root)
    assert len(p100) == 100 and sum(len(d) for d in p100) == 1856
    long20, _ = resolve("long-20", None, root=published_root)
    assert [d.id for d in long20] == list(LONG_20)
    assert sum(len(d) for d in long20) == 4143 and min(len(d) for d in long20) >= 165


def test_reference_pairing_picks_other_dialogues(published_root):
    long20, _ = resolve("long-20", None, root=published_root, pairing="published")
    assert max(len(d) for d in long20) < 165  # read as chat numbers, these are short dialogues


def test_label_noise_and_source_ids_are_counted(published_corpus):
    noise = [x for x in published_corpus.defects if x.kind == "label_noise"]
    assert any("'doubtful'" in x.message for x in noise) and any("''" in x.message for x in noise)
    assert any(x.kind == "source_id" and "家属" in x.message for x in published_corpus.defects)


def test_stats_json_acceptance(published_root, capsys):
    assert main(["data", "stats", "--data", str(published_root), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["files"]["chat"] == 800 and s["dialogues"] == 400 and s["utterances"] == 25040
    assert s["duplicates"] == 400
    assert {"emo": "emo_2.json", "annotates": "chat_112.json"} in s["mispaired"]
    assert {m["file"] for m in s["malformed"]} == {"emo_117.json", "emo_144.json", "emo_421.json", "emo_451.json"}
    assert all(m["line"] and m["column"] for m in s["malformed"])


def test_loading_is_fast(published_root):
    t = time.perf_counter()
    load_corpus(published_root)
    assert time.perf_counter() - t < 10.0
