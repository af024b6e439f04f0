"""Issue 55 item 4: `context: retrieve`'s embeddings are kept across runs by the embedder's identity and the text
(models/embedstore.py, beside the response cache), so that a second run embeds nothing; and used as the run uses its
response cache (issue 53's "one mechanism"): `--no-cache` keeps and reads nothing, `read-only` reads and adds
nothing, a job's own cache folder holds them."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import numpy as np
import pytest

from emocaustics.core.errors import UsageError
from emocaustics.models.cacheplace import CacheChoice, shared_folder
from emocaustics.models.embedstore import FILE_NAME, EmbeddingStore
from emocaustics.tasks.aer.data import load_split
from emocaustics.tasks.aer.context import top_chunks
from tasks.aer.aer_fixtures import KeywordEmbedder, doc, question, topic, write_dataset

WORDS = ["storm", "harbour", "council"]


def _topics(tmp_path: Path, third: str = "Tourists came in summer.") -> list:
    docs = [doc(1, 1, content="The council met."), doc(2, 1, content="A storm flooded the harbour."),
            doc(3, 1, content=third)]
    root = write_dataset(tmp_path / third[:8], {"sample": ([question(1, 1)], [topic(1, docs)])})
    return list(load_split(str(root), "sample").topics.values())


def _rank(emb: KeywordEmbedder, topics: list, cache: CacheChoice | None = None) -> list:
    cache = cache or CacheChoice(shared_folder())  # the default `cache: on`
    hits = top_chunks(emb, [(topics[0], "storm in the harbour")], 2, 160, 4.0, cache)
    return [(c.doc, round(s, 5)) for c, s in hits[0]]


def test_a_second_build_with_the_same_identity_and_texts_embeds_nothing(tmp_path):
    topics = _topics(tmp_path)
    first = KeywordEmbedder(WORDS)
    ranked = _rank(first, topics)
    assert first.calls == [3, 1] and ranked[0][0] == 2  # the chunks, then the query
    assert (shared_folder() / FILE_NAME).is_file()  # beside the response cache
    again = KeywordEmbedder(WORDS)  # a new embedder object, as a second run's: nothing held in memory
    assert _rank(again, topics) == ranked and again.calls == []


def test_another_identity_or_text_is_embedded_afresh(tmp_path):
    _rank(KeywordEmbedder(WORDS), _topics(tmp_path))
    other = KeywordEmbedder(WORDS)
    other.identity = "keyword-double:other-weights"
    _rank(other, _topics(tmp_path))
    assert other.calls == [3, 1]  # another identity: every text again
    changed = KeywordEmbedder(WORDS)
    _rank(changed, _topics(tmp_path, third="The harbour reopened."))
    assert changed.calls == [1]  # one document's text changed: that chunk alone


def test_a_damaged_store_is_named_and_never_read(tmp_path):
    path = shared_folder() / FILE_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"not a database, " * 512)
    emb = KeywordEmbedder(WORDS)
    with pytest.raises(UsageError, match=f"embedding cache {path} is damaged"):
        _rank(emb, _topics(tmp_path))
    assert emb.calls == []
    path.unlink()
    store = EmbeddingStore(shared_folder())  # an entry cut short: the file is named, the entry not used
    store.put_many("x", ["a"], np.ones((1, 2), np.float32))
    store.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE vectors SET vec = x'0102'")
    with pytest.raises(UsageError, match=f"{path} is damaged .*2 bytes"):
        EmbeddingStore(shared_folder()).get_many("x", ["a"])


def test_two_runs_at_once_share_the_store(tmp_path):
    """Each writes in its own transaction; the first vector stored for a key stays, and neither fails."""
    texts = [f"text {i}" for i in range(300)]
    errors: list[BaseException] = []

    def run(value: float) -> None:
        try:
            store = EmbeddingStore(shared_folder())
            store.put_many("emb", texts, np.full((300, 4), value, np.float32))
            store.close()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(v,)) for v in (1.0, 2.0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    got = EmbeddingStore(shared_folder()).get_many("emb", texts)
    assert len(got) == 300 and len({float(v[0]) for v in got.values()}) == 1


def test_no_cache_reads_and_keeps_nothing(tmp_path):
    topics = _topics(tmp_path)
    _rank(KeywordEmbedder(WORDS), topics)  # the shared store holds these texts now
    off = KeywordEmbedder(WORDS)
    hits = top_chunks(off, [(topics[0], "storm in the harbour")], 2, 160, 4.0, None)
    assert off.calls == [3, 1] and hits[0][0][0].doc == 2  # every text embedded again: nothing read


def test_a_read_only_cache_reads_what_is_there_and_adds_nothing(tmp_path):
    topics = _topics(tmp_path)
    mine = tmp_path / "mine"
    empty = KeywordEmbedder(WORDS)
    _rank(empty, topics, CacheChoice(mine, read_only=True))
    assert empty.calls == [3, 1] and not mine.exists()  # nothing there, nothing made
    _rank(KeywordEmbedder(WORDS), topics, CacheChoice(mine))
    stamp = (mine / FILE_NAME).stat().st_mtime_ns
    changed = KeywordEmbedder(WORDS)
    _rank(changed, _topics(tmp_path, third="The harbour reopened."), CacheChoice(mine, read_only=True))
    assert changed.calls == [1]  # read: only the changed chunk embedded ...
    assert (mine / FILE_NAME).stat().st_mtime_ns == stamp  # ... and not kept
    assert EmbeddingStore(mine).get_many(changed.identity, ["The harbour reopened."]) == {}


def test_a_job_s_own_cache_folder_holds_its_embeddings(tmp_path):
    mine = tmp_path / "mine"
    _rank(KeywordEmbedder(WORDS), _topics(tmp_path), CacheChoice(mine))
    assert (mine / FILE_NAME).is_file() and not (shared_folder() / FILE_NAME).exists()
