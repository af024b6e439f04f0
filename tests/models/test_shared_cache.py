"""The shared response cache (issue 42 point 2), below the job: where it lives, its key (two API keys, one entry; no
key or URL password in the file), read-only use, the size cap with least-recently-used eviction, and two processes
writing overlapping answers at once. The OpenAI-compatible stand-in (tests/fakes) stands in for a remote API."""

from __future__ import annotations

import asyncio
import multiprocessing
import sqlite3
import time
from pathlib import Path

import pytest

from emocaustics.core.errors import UsageError
from emocaustics.models.base import ChatRequest, Completion
from emocaustics.models.cacheplace import CacheChoice, choose, shared_folder
from emocaustics.models.cachefile import journal_mode
from emocaustics.models.cachestore import ResponseCache
from emocaustics.models.factory import make_llm
from emocaustics.models.spec import parse_llm_spec
from fakes.openai_chat import FakeOpenAIServer

KEY_1, KEY_2, PASSWORD = "sk-first-Qx81vv", "sk-second-Rw02tt", "pw-Zq9-hunter2"


def _entries(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])


def _bytes_of(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def _ask(spec: str, choice: CacheChoice, text: str = "hello") -> Completion:
    async def go() -> Completion:
        llm = make_llm(parse_llm_spec(spec), cache_dir=choice)
        try:
            return (await llm.generate([ChatRequest(messages=({"role": "user", "content": text},))]))[0]
        finally:
            await llm.aclose()

    return asyncio.run(go())


def test_where_the_cache_lives_and_the_job_choices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EMOCAUSTICS_RESPONSE_CACHE")
    monkeypatch.delenv("EMOCAUSTICS_CACHE", raising=False)
    assert shared_folder() == Path.home() / ".cache" / "emocaustics" / "responses"
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "root"))
    assert choose("on") == CacheChoice(tmp_path / "root" / "responses")
    assert choose("read-only") == CacheChoice(tmp_path / "root" / "responses", read_only=True)
    assert choose("off") is None
    assert choose(str(tmp_path / "mine")).path == tmp_path / "mine" / "responses.sqlite"
    monkeypatch.setenv("EMOCAUSTICS_RESPONSE_CACHE", str(tmp_path / "own"))
    assert choose("on").folder == tmp_path / "own"
    monkeypatch.setenv("EMOCAUSTICS_CACHE_MAX_GB", "lots")
    with pytest.raises(UsageError, match="EMOCAUSTICS_CACHE_MAX_GB='lots'"):
        choose("on")


def test_two_keys_one_entry_and_no_secret_in_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EMOCAUSTICS_API_KEY", raising=False)
    choice = CacheChoice(tmp_path / "shared")
    with FakeOpenAIServer() as server:
        spec = f"openai:fake-chat@{server.base_url}"
        monkeypatch.setenv("OPENAI_API_KEY", KEY_1)
        first = _ask(spec, choice)
        monkeypatch.setenv("OPENAI_API_KEY", KEY_2)
        second = _ask(spec, choice)
        assert len(server.bodies) == 1  # the second key's request was answered by the cache
        assert second.cached and not first.cached and second.text == first.text
        # credentials in the endpoint's URL: sent as HTTP Basic, stored nowhere (models/http.py strips them)
        url = server.base_url.replace("http://", f"http://alice:{PASSWORD}@")
        _ask(f"openai:fake-chat@{url}", choice, "with a password")
        assert len(server.bodies) == 2 and server.auth_headers[-1].startswith("Basic ")
    assert _entries(choice.path) == 2
    stored = _bytes_of(choice.folder)  # the database, its WAL and anything beside it
    assert stored and all(secret.encode() not in stored for secret in (KEY_1, KEY_2, PASSWORD, "alice"))


def test_read_only_answers_and_adds_nothing(tmp_path: Path) -> None:
    path = tmp_path / "c" / "responses.sqlite"
    ResponseCache(tmp_path / "none" / "responses.sqlite", read_only=True)
    assert not (tmp_path / "none").exists()  # a read-only cache creates no file
    writer = ResponseCache(path)
    writer.put_many("m", [("a", Completion(text="A"))])
    writer.close()
    reader = ResponseCache(f"file:{path}?mode=ro")  # as a model actor is handed it (`ref`)
    assert reader.read_only and reader.get_many(["a", "b"])["a"].text == "A"
    reader.put_many("m", [("b", Completion(text="B"))])
    reader.close()
    assert _entries(path) == 1


def test_the_cap_evicts_the_least_recently_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "responses.sqlite"
    cache = ResponseCache(path)
    for i in range(10):  # ten entries, one commit each, each a little older than the next
        cache.put_many("m", [(f"k{i}", Completion(text="x" * 1000))])
        cache.flush()
        time.sleep(0.01)
    cache.get_many(["k0", "k1"])  # the two oldest are used again: now the most recent
    cache.close()
    size = 1000 + 2 + 1 + 64 + len('{"text": "", "parsed": null, "prompt_tokens": 0, "generated_tokens": 0, "repaired": false}')
    monkeypatch.setenv("EMOCAUSTICS_CACHE_MAX_GB", str(4.5 * size / 1e9))  # room for four entries
    capped = CacheChoice(tmp_path).open()  # opening evicts down to the cap
    assert set(capped.get_many([f"k{i}" for i in range(10)])) == {"k0", "k1", "k8", "k9"}
    capped.put_many("m", [("new", Completion(text="y" * 1000))])
    capped.close()  # and so does closing, after the new entry is committed
    with sqlite3.connect(path) as db:
        left = {k for (k,) in db.execute("SELECT key FROM responses")}
        total = db.execute("SELECT SUM(size) FROM responses").fetchone()[0]
    assert "new" in left and len(left) == 4 and total <= 4.5 * size


def _write_overlapping(path: str, start: int, n: int) -> None:
    cache = ResponseCache(path)
    for i in range(start, start + n, 5):  # small commits, as a run's answers come, interleaved with the other writer
        cache.put_many("m", [(f"k{j}", Completion(text=f"v{j}")) for j in range(i, i + 5)])
        cache.flush()
    cache.close()


def test_two_processes_writing_at_once_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "responses.sqlite")  # created by the two writers at once
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write_overlapping, args=(path, start, 1500)) for start in (0, 1000)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    assert _entries(Path(path)) == 2500  # 0..2499: the 500 keys both wrote are one entry each
    got = ResponseCache(path, read_only=True).get_many([f"k{j}" for j in range(2500)])
    assert len(got) == 2500 and all(c.text == f"v{j}" for j, c in ((int(k[1:]), c) for k, c in got.items()))


def test_a_network_filesystem_gets_the_rollback_journal() -> None:
    """sqlite's WAL shares its index through memory, which machines cannot share over a network filesystem: there the
    cache uses the rollback journal, which needs only the filesystem's locks."""
    mounts = "/dev/sda1 / ext4 rw 0 0\nserver:/export /mnt/shared nfs4 rw 0 0\nhost:/x /mnt/shared/local ext4 rw 0 0\n"
    assert journal_mode(Path("/mnt/shared/responses/responses.sqlite"), mounts) == "DELETE"
    assert journal_mode(Path("/mnt/shared/local/responses.sqlite"), mounts) == "WAL"  # the longest mount point wins
    assert journal_mode(Path("/mnt/sharedx/responses.sqlite"), mounts) == "WAL"
    assert journal_mode(Path("/home/u/.cache/emocaustics/responses/responses.sqlite"), mounts) == "WAL"


def test_a_cache_of_before_the_cap_is_sized_and_capped(tmp_path: Path) -> None:
    """A responses.sqlite written before the cap existed (no last use, no sizes) gets both when first opened, so
    that the cap counts its entries and evicts the oldest first."""
    path = tmp_path / "responses.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, model TEXT NOT NULL, value TEXT NOT NULL,"
                   " created REAL NOT NULL)")
        db.executemany("INSERT INTO responses VALUES (?, ?, ?, ?)",
                       [(f"k{i}", "m", '{"text": "' + "x" * 100 + '"}', float(i)) for i in range(10)])
    cache = ResponseCache(path, max_bytes=600)  # room for three entries of 179 bytes
    assert set(cache.get_many([f"k{i}" for i in range(10)])) == {"k7", "k8", "k9"}
    cache.close()
