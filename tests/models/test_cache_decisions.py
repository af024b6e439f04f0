"""The response cache's decisions (issue 53's mutation area `cache`: models/cache.py, cacheplace.py, cachefile.py,
cachestore.py), fast: the key, hits and misses and the order of answers, where the cache lives and which `cache:`
values are taken, the size cap's variable, the journal on each filesystem, a busy file opened again, and what an
entry holds. Plain sqlite files under tmp_path; a stand-in model; no Ray, no endpoint."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from emocaustics.core.errors import UsageError
from emocaustics.models import cachefile
from emocaustics.models.base import ChatRequest, Completion, ModelBase, Sampling
from emocaustics.models.cache import CachedLLM, request_key
from emocaustics.models.cachefile import check_file, damaged, journal_mode, open_file, open_store, retried
from emocaustics.models.cacheplace import CacheChoice, CacheValueError, as_choice, cache_value, choose, max_bytes, \
    shared_folder
from emocaustics.models.cachestore import ResponseCache


def _request(text: str, **sampling) -> ChatRequest:
    return ChatRequest(({"role": "user", "content": text},), sampling=Sampling(**sampling))


@pytest.mark.parametrize("messages, schema, sampling, model", [
    (({"role": "user", "content": "é"},), {"type": "object"}, dict(temperature=0.5, seed=3), "id"),
    # control characters, quotes, a line separator, an emoji, a lone key order to sort; a float json writes with an
    # exponent (orjson would write 1e-05 as 0.00001); a schema with floats and a non-ASCII model name
    (({"role": "system", "content": "a\x00\x1f\x7f\"\\/\u2028😀\n\t"}, {"content": "x", "role": "assistant"},
      {"role": "user", "content": ""}), {"type": "number", "minimum": 1e-05, "maximum": 1e16},
     dict(temperature=1e-05, top_p=0.95, max_tokens=7), "mödel@http://h:1/v1"),
    (({"role": "user", "content": "z" * 5000},), None, {}, ""),
])
def test_the_key_is_the_sha256_of_the_canonical_request(messages, schema, sampling, model):
    r = ChatRequest(messages, schema=schema, sampling=Sampling(**sampling))
    blob = json.dumps({"model": model, "messages": [dict(m) for m in messages], "schema": schema,
                       "sampling": r.sampling.key()}, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert request_key(model, r) == hashlib.sha256(blob.encode("utf-8")).hexdigest()
    assert "\\u00e9" not in blob  # the text as it is, not escaped


class Model(ModelBase):
    name = "stand-in"

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    async def generate(self, requests):
        self.asked.append([r.messages[0]["content"] for r in requests])
        return [Completion(text=r.messages[0]["content"].upper(), prompt_tokens=2, generated_tokens=3)
                if r.messages[0]["content"] != "bad" else Completion("", error="refused") for r in requests]

    async def stats(self):
        return {"cache_hits": 10, "calls": 4}


def test_hits_and_misses_in_the_order_asked(tmp_path):
    model = Model()
    model.cache_id = "model-id"
    cache = ResponseCache(tmp_path / "c.sqlite")
    llm = CachedLLM(model, cache)

    async def go():
        first = await llm.generate([_request("a"), _request("bad")])
        second = await llm.generate([_request("b"), _request("a"), _request("bad"), _request("c")])
        third = await llm.generate([_request("a")])
        return first, second, third, await llm.stats()

    first, second, third, stats = asyncio.run(go())
    assert model.asked == [["a", "bad"], ["b", "bad", "c"]]  # a failure is asked again, a success is not
    assert [c.text for c in second] == ["B", "A", "", "C"] and [c.cached for c in second] == [False, True, False, False]
    assert (second[1].prompt_tokens, second[1].generated_tokens) == (2, 3)
    assert third[0].cached and third[0].text == "A"
    assert (llm.usage.cache_hits, llm.usage.cache_misses) == (2, 5)
    assert stats == {"cache_hits": 12, "cache_misses": 5, "calls": 4}
    cache.close()
    with sqlite3.connect(tmp_path / "c.sqlite") as db:
        rows = dict(db.execute("SELECT key, model FROM responses").fetchall())
    assert rows == {request_key("model-id", _request(t)): "model-id" for t in ("a", "b", "c")}


def test_a_remote_model_gets_the_cache_by_its_reference(tmp_path):
    class Remote(Model):
        runs_remotely = True

        async def run(self, fn, items, affinity_key=None, **keys):
            return [("remote", fn, items, keys, affinity_key)]

    async def solve(model, item):
        return item

    cache = ResponseCache(tmp_path / "c.sqlite", read_only=True)
    llm = CachedLLM(Remote(), cache)
    got = asyncio.run(llm.run(solve, [1], "aff", weight_key="w"))
    assert got == [("remote", solve, [1], {"weight_key": "w", "cache_path": f"file:{tmp_path / 'c.sqlite'}?mode=ro"},
                    "aff")]
    assert llm.runs_remotely is True and CachedLLM(Model(), cache).runs_remotely is False


def test_where_the_shared_cache_lives(monkeypatch, tmp_path):
    monkeypatch.setenv("EMOCAUSTICS_RESPONSE_CACHE", "  ")
    monkeypatch.setenv("EMOCAUSTICS_CACHE", f" {tmp_path} ")
    assert shared_folder() == tmp_path / "responses"
    monkeypatch.setenv("EMOCAUSTICS_RESPONSE_CACHE", "~/mine")
    assert shared_folder() == Path.home() / "mine"
    monkeypatch.setenv("EMOCAUSTICS_RESPONSE_CACHE", "")
    monkeypatch.setenv("EMOCAUSTICS_CACHE", "~/root")
    assert shared_folder() == Path.home() / "root" / "responses"


@pytest.mark.parametrize("raw, got", [("", None), ("  ", None), ("20", 20_000_000_000), (" 0.5 ", 500_000_000),
                                      ("1e-12", 1), ("2.5e-9", 2)])
def test_the_cap_in_bytes(monkeypatch, raw, got):
    monkeypatch.setenv("EMOCAUSTICS_CACHE_MAX_GB", raw)
    assert max_bytes() == got


@pytest.mark.parametrize("raw", ["0", "-1", "lots", "nan"])
def test_a_cap_that_is_not_a_positive_number(monkeypatch, raw):
    monkeypatch.setenv("EMOCAUSTICS_CACHE_MAX_GB", raw)
    with pytest.raises(UsageError) as got:
        max_bytes()
    assert str(got.value) == (f"EMOCAUSTICS_CACHE_MAX_GB={raw!r}: give the cache's size cap in GB, a positive number "
                              "(e.g. 20)")


def test_a_choice_says_where_and_how(monkeypatch, tmp_path):
    monkeypatch.setenv("EMOCAUSTICS_CACHE_MAX_GB", "1")
    on, ro = CacheChoice(tmp_path), CacheChoice(tmp_path, read_only=True)
    assert on.path == tmp_path / "responses.sqlite"
    assert on.describe() == str(tmp_path / "responses.sqlite")
    assert ro.describe() == f"{tmp_path / 'responses.sqlite'} (read-only)"
    assert on.record() == {"path": str(on.path), "mode": "on", "max_bytes": 1_000_000_000}
    assert ro.record()["mode"] == "read-only"
    opened = ro.open()
    assert (opened.read_only, opened.max_bytes, opened.path) == (True, 1_000_000_000, on.path)
    opened = on.open()
    assert (opened.read_only, opened.max_bytes) == (False, 1_000_000_000)
    opened.close()
    assert as_choice(None) is None and as_choice(on) is on
    assert as_choice(str(tmp_path)) == on and as_choice(tmp_path) == on


@pytest.mark.parametrize("value", ["on", " off ", "read-only", "./x", "~/x", "/x", "a/b", ".x", "~"])
def test_modes_and_paths_are_taken(value):
    assert cache_value(value) == value.strip()


def test_a_word_that_is_neither_names_the_nearest_mode():
    with pytest.raises(CacheValueError) as got:
        cache_value(" READONLY ")
    assert str(got.value) == ("'READONLY' is not a cache mode (on, off, read-only; did you mean 'read-only'?) nor a "
                              "folder: write a folder as a path (./READONLY, ~/READONLY, /PATH)")
    with pytest.raises(ValueError) as got:
        cache_value("mine")
    assert str(got.value) == ("'mine' is not a cache mode (on, off, read-only) nor a folder: write a folder as a path "
                              "(./mine, ~/mine, /PATH)")


def test_the_choices_of_a_job(monkeypatch, tmp_path):
    monkeypatch.setenv("EMOCAUSTICS_RESPONSE_CACHE", str(tmp_path / "shared"))
    monkeypatch.delenv("EMOCAUSTICS_CACHE_MAX_GB", raising=False)
    assert choose(None) == CacheChoice(tmp_path / "shared")
    assert choose("read-only") == CacheChoice(tmp_path / "shared", read_only=True)
    assert choose(" off ") is None
    monkeypatch.setenv("HOME", str(tmp_path))
    assert choose("~/own") == CacheChoice(tmp_path / "own")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "responses.sqlite").write_bytes(b"x" * 4096)
    with pytest.raises(UsageError, match="is damaged"):
        choose(str(tmp_path / "bad"))
    monkeypatch.setenv("EMOCAUSTICS_CACHE_MAX_GB", "-2")
    with pytest.raises(UsageError, match="EMOCAUSTICS_CACHE_MAX_GB"):
        choose("./mine")
    assert choose("off") is None  # no cache: its cap does not matter


MOUNTS = "/dev/root / ext4 rw 0 0\nsrv:/e /data nfs rw 0 0\nsrv:/f /data/x/y cifs rw 0 0\nfuse /s fuse.sshfs rw 0 0\n"


@pytest.mark.parametrize("path, mode", [("/data", "DELETE"), ("/data/a.sqlite", "DELETE"), ("/datax/a", "WAL"),
                                        ("/data/x/y/a", "DELETE"), ("/s/a", "DELETE"), ("/home/a", "WAL"),
                                        ("/", "WAL")])
def test_the_journal_on_each_filesystem(path, mode):
    assert journal_mode(Path(path), MOUNTS) == mode
    assert journal_mode(Path(path), "short line\n") == "WAL"


def test_a_mount_over_a_mount_is_the_one_in_effect():
    """/proc/mounts lists mounts in the order they were made: of two at one point the later hides the earlier, so an
    NFS share mounted over a local disk's folder gets sqlite's rollback journal, and a local disk over NFS gets WAL."""
    assert journal_mode(Path("/data/a"), "/dev/sda1 /data ext4 rw 0 0\nsrv:/e /data nfs4 rw 0 0\n") == "DELETE"
    assert journal_mode(Path("/data/a"), "srv:/e /data nfs4 rw 0 0\n/dev/sda1 /data ext4 rw 0 0\n") == "WAL"


def test_the_journal_read_from_this_machines_mounts(tmp_path, monkeypatch):
    assert journal_mode(tmp_path / "c.sqlite") in ("WAL", "DELETE")
    monkeypatch.setattr(cachefile, "Path", _NoMounts)
    assert journal_mode(tmp_path / "c.sqlite") == "WAL"  # no /proc/mounts: a local disk


class _NetworkMounts(type(Path())):
    """/proc/mounts of a machine whose /data is on NFS (the file only at its own path)."""

    def read_text(self, *a, **k):
        if str(self) != "/proc/mounts":
            raise OSError("no such file")
        return "/dev/root / ext4 rw 0 0\nsrv:/e /data nfs4 rw 0 0\n"


def test_the_journal_read_from_a_network_machines_mounts(monkeypatch):
    monkeypatch.setattr(cachefile, "Path", _NetworkMounts)
    assert journal_mode(_NetworkMounts("/data/cache/c.sqlite")) == "DELETE"


@pytest.mark.parametrize("mounts, path", [("srv:/ / nfs4 rw 0 0\n", "/home/a"),  # the root itself on NFS
                                          ("srv:/ /srv/dataX nfs rw 0 0\n", "/srv/dataX/a")])
def test_the_journal_under_any_mount_point(mounts, path):
    assert journal_mode(Path(path), mounts) == "DELETE"


def test_a_mount_line_needs_its_type():
    assert journal_mode(Path("/data/a"), "srv:/e /data nfs\n") == "DELETE"  # device, mount point, type: enough
    assert journal_mode(Path("/data/a"), "srv:/e /data\n") == "WAL"  # no type: not read


class _NoMounts(type(Path())):
    def read_text(self, *a, **k):
        raise OSError("no /proc")


def test_a_new_file_is_made_with_its_settings(tmp_path):
    db = open_file(tmp_path / "c.sqlite")
    assert db.execute("PRAGMA auto_vacuum").fetchone()[0] == 2  # incremental
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA synchronous").fetchone()[0] == 1  # normal
    assert [r[1] for r in db.execute("PRAGMA table_info(responses)")] == ["key", "model", "value", "created", "used",
                                                                          "size"]
    db.close()
    other = open_store(tmp_path / "o.sqlite", "CREATE TABLE IF NOT EXISTS t (a)")
    assert other.execute("PRAGMA auto_vacuum").fetchone()[0] == 0
    other.close()


def test_a_busy_file_is_opened_again_and_other_errors_raised_at_once(monkeypatch):
    slept: list[float] = []
    monkeypatch.setattr(cachefile.time, "sleep", slept.append)
    tries = iter([sqlite3.OperationalError("database is locked")] * 3 + ["db"])

    def open_():
        got = next(tries)
        if isinstance(got, Exception):
            raise got
        return got

    assert retried(open_) == "db" and slept == [0.05, 0.1, 0.15000000000000002]
    calls = []

    def locked():
        calls.append(1)
        raise sqlite3.OperationalError("database is locked")

    with pytest.raises(sqlite3.OperationalError):
        retried(locked, tries=3)
    assert len(calls) == 3
    with pytest.raises(sqlite3.OperationalError):
        retried(locked)
    assert len(calls) == 3 + 20  # by default: 20 tries (about 10 s of waits)
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        retried(lambda: (_ for _ in ()).throw(sqlite3.OperationalError("disk I/O error")))


def test_a_damaged_file_is_named_and_a_missing_or_whole_one_passes(tmp_path):
    assert str(damaged(tmp_path / "c", "why")) == (f"response cache {tmp_path / 'c'} is damaged (why): run with "
                                                   "--no-cache (cache: off), or move the file away (a new one is made)")
    check_file(tmp_path / "none.sqlite")
    ResponseCache(tmp_path / "ok.sqlite").close()
    check_file(tmp_path / "ok.sqlite")
    (tmp_path / "bad.sqlite").write_bytes(b"not sqlite" * 500)
    with pytest.raises(UsageError) as got:
        check_file(tmp_path / "bad.sqlite")
    assert str(got.value).startswith(f"response cache {tmp_path / 'bad.sqlite'} is damaged (file is not a database)")


def _big_cache(path: Path, rows: int = 12_000) -> None:
    """A cache file whose quick_check calls sqlite's progress handler (every 100,000 steps), its last page damaged."""
    db = open_file(path)
    with cachefile.immediate(db, path):
        db.executemany("INSERT INTO responses VALUES (?, 'm', '{}', 1, 1, 1)", ((f"k{i:06d}",) for i in range(rows)))
    db.close()
    with open(path, "r+b") as f:
        f.seek(path.stat().st_size - 4096)
        f.write(b"\xff" * 4096)


def _row_of(size: int, key: str) -> tuple[str, Completion]:
    """An entry whose size, as the cap counts it, is `size` bytes."""
    empty = len(key) + 1 + len(json.dumps({"text": "", "parsed": None, "prompt_tokens": 0, "generated_tokens": 0,
                                           "repaired": False})) + 64
    return key, Completion("x" * (size - empty))


def test_eviction_runs_once_a_twentieth_of_the_cap_was_committed_since(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite", max_bytes=8000)  # a twentieth: 400 bytes
    evictions: list[int] = []
    real = cache.evict
    cache.evict = lambda: (evictions.append(cache._since_evict), real())[1]
    for key, size, want in (("k1", 400, []), ("k2", 200, [600]), ("k3", 400, [600])):
        cache.put_many("m", [_row_of(size, key)])
        cache.flush()
        assert evictions == want, key  # exactly 400 is not past it; 400 + 200 is, and the count starts again
    cache.close()


@pytest.mark.parametrize("cap, kept", [(450, ["k1", "k2", "k3"]), (449, ["k2", "k3"]), (300, ["k2", "k3"]),
                                       (299, ["k3"])])
def test_eviction_deletes_the_least_recently_used_until_within_the_cap(tmp_path, cap, kept):
    db = open_file(tmp_path / "c.sqlite")
    db.executemany("INSERT INTO responses VALUES (?, 'm', 'v', ?, ?, 150)", [("k1", 1, 3), ("k2", 2, 4), ("k3", 0, 5)])
    db.close()
    ResponseCache(tmp_path / "c.sqlite", max_bytes=cap).close()  # evicts on opening
    with sqlite3.connect(tmp_path / "c.sqlite") as db:
        assert [k for (k,) in db.execute("SELECT key FROM responses ORDER BY key")] == kept


def test_a_damaged_file_is_read_until_the_checks_time_is_up(tmp_path, monkeypatch):
    _big_cache(tmp_path / "big.sqlite")
    with pytest.raises(UsageError, match="is damaged"):  # within its seconds: read to the damage at the end
        check_file(tmp_path / "big.sqlite")
    monkeypatch.setattr(cachefile, "CHECK_SECONDS", -1.0)  # time up at once: the rest is checked as it is used
    check_file(tmp_path / "big.sqlite")


@pytest.mark.parametrize("column", ["used REAL NOT NULL DEFAULT 0", "size INTEGER NOT NULL DEFAULT 0"])
def test_a_cache_with_one_of_its_new_columns_gains_the_other(tmp_path, column):
    with sqlite3.connect(tmp_path / "c.sqlite") as db:  # a process that was adding the columns stopped between them
        db.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, model TEXT NOT NULL, value TEXT NOT NULL, "
                   f"created REAL NOT NULL, {column})")
        db.execute("INSERT INTO responses VALUES ('k', 'm', 'v', 5, 0)")
    db = open_file(tmp_path / "c.sqlite")
    assert db.execute("SELECT used, size FROM responses").fetchall() == [(5.0, 3 + 64)]
    db.close()


def test_a_failed_migration_names_the_file(tmp_path):
    from emocaustics.core.errors import WriteFailed

    with sqlite3.connect(tmp_path / "c.sqlite") as db:
        db.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, model TEXT, value TEXT, created REAL)")
    db = cachefile.connect(f"file:{tmp_path / 'c.sqlite'}?mode=ro", True)  # a write refused: as a full disk is
    with pytest.raises(WriteFailed, match=str(tmp_path / "c.sqlite")):
        cachefile._add_lru_columns(db, tmp_path / "c.sqlite")
    db.close()


def test_what_an_entry_holds_and_its_size(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    c = Completion("tëxt", parsed={"a": 1}, prompt_tokens=4, generated_tokens=5, repaired=True)
    cache.put_many("modèl", [("k1", c), ("k2", Completion("", error="x"))])
    pending = cache.get_many(["k1", "k2"])  # from memory, before the commit
    cache.close()
    with sqlite3.connect(tmp_path / "c.sqlite") as db:
        key, model, value, created, used, size = db.execute("SELECT * FROM responses").fetchone()
    assert (key, model) == ("k1", "modèl") and created == used
    assert json.loads(value) == {"text": "tëxt", "parsed": {"a": 1}, "prompt_tokens": 4, "generated_tokens": 5,
                                 "repaired": True} and "tëxt" in value
    assert size == 2 + len("modèl".encode()) + len(value.encode()) + 64
    again = ResponseCache(tmp_path / "c.sqlite", read_only=True).get_many(["k1", "k2"])
    for got in (pending, again):
        assert list(got) == ["k1"]
        assert (got["k1"].text, got["k1"].parsed, got["k1"].prompt_tokens, got["k1"].generated_tokens,
                got["k1"].repaired, got["k1"].cached) == ("tëxt", {"a": 1}, 4, 5, True, True)


def test_an_old_entry_without_its_counts_reads_as_none(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.close()
    with sqlite3.connect(tmp_path / "c.sqlite") as db:
        db.execute("INSERT INTO responses VALUES ('k', 'm', '{\"text\": \"t\"}', 1, 1, 10)")
    got = ResponseCache(tmp_path / "c.sqlite", read_only=True).get_many(["k"])["k"]
    assert (got.text, got.parsed, got.prompt_tokens, got.generated_tokens, got.repaired) == ("t", None, 0, 0, False)


def test_a_read_only_cache_by_flag_or_by_reference(tmp_path):
    path = tmp_path / "c.sqlite"
    assert not ResponseCache(path, read_only=True).get_many(["k"]) and not path.exists()  # none is made
    writer = ResponseCache(path)
    writer.put_many("m", [("k", Completion("t"))])
    writer.close()
    ro = ResponseCache(f"file:{path}?mode=ro")
    assert ro.read_only and ro.path == path and ro.ref == f"file:{path}?mode=ro"
    ro.put_many("m", [("k2", Completion("t"))])
    assert set(ro.get_many(["k", "k2"])) == {"k"}
    assert ResponseCache(f"file:{path}").read_only is False and ResponseCache(path).ref == str(path)


def test_many_keys_are_read_past_sqlites_parameter_limit(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put_many("m", [(f"k{i}", Completion(str(i))) for i in range(1201)])
    cache.flush()
    got = cache.get_many([f"k{i}" for i in range(1201)] + ["none"])
    assert len(got) == 1201 and got["k1200"].text == "1200" and got["k0"].text == "0"
    cache.close()


def _committed(path: Path, want: int) -> bool:
    """Whether another connection sees `want` entries within 2 s (the writer thread commits on its own)."""
    import time

    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        with sqlite3.connect(path) as db:
            if db.execute("SELECT count(*) FROM responses").fetchone()[0] == want:
                return True
        time.sleep(0.01)
    return False


def test_the_writer_thread_commits_each_batch_without_a_flush(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put_many("m", [("k1", Completion("a"))])
    assert _committed(tmp_path / "c.sqlite", 1)  # another process sees it while this run goes on
    cache.put_many("m", [("k2", Completion("b"))])
    assert _committed(tmp_path / "c.sqlite", 2)  # and the next batch: the thread waits for more, it does not end
    cache.close()


def test_the_writer_thread_does_not_hold_the_process_at_exit(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put_many("m", [("k1", Completion("a"))])
    daemon = cache._writer.daemon
    cache.close()  # before the assertion: a thread that is no daemon would keep this test's process alive
    assert daemon is True  # a process that ends without closing its cache is not kept waiting (atexit commits)


def test_a_commit_that_fails_is_raised_to_the_next_put_naming_the_file(tmp_path):
    from emocaustics.core.errors import WriteFailed

    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path)
    cache._wdb.close()
    cache._wdb = cachefile.connect(f"file:{path}?mode=ro", True)  # the writer's commits refused, as on a full disk
    cache.put_many("m", [("k1", Completion("a"))])
    writer = cache._writer
    writer.join(2)
    assert not writer.is_alive()  # the thread ends; the failure is kept for the caller
    with pytest.raises(WriteFailed, match=f"^cannot write {path}: "):
        cache.put_many("m", [("k2", Completion("b"))])
    assert set(cache.get_many(["k1"])) == {"k1"}  # its rows are not lost
    with pytest.raises(WriteFailed):
        cache.close()  # nor at close: tried again, refused again, and the connections closed


def test_the_damage_named_is_quick_checks_first_finding(tmp_path):
    path = tmp_path / "c.sqlite"
    db = open_file(path)
    with cachefile.immediate(db, path):
        db.executemany("INSERT INTO responses VALUES (?, 'm', '{}', 1, 1, 1)", ((f"k{i:06d}",) for i in range(300)))
    db.close()
    with open(path, "r+b") as f:  # a leaf page's header: quick_check reports it as text, not as an error
        f.seek(path.stat().st_size - 2 * 4096)
        f.write(b"\x07\x07\x07")
    with pytest.raises(UsageError) as got:
        check_file(path)
    assert f"{path} is damaged (Page " in str(got.value) and "***" not in str(got.value)


def test_a_cache_makes_its_folders_or_names_the_file_it_cannot_make(tmp_path):
    from emocaustics.core.errors import WriteFailed

    ResponseCache(tmp_path / "a" / "b" / "c.sqlite").close()  # folders made as deep as needed
    assert (tmp_path / "a" / "b" / "c.sqlite").is_file()
    (tmp_path / "f").write_text("a file, not a folder", encoding="utf-8")
    with pytest.raises(WriteFailed, match=f"^cannot write {tmp_path / 'f' / 'c.sqlite'}: File exists \\(EEXIST\\)"):
        ResponseCache(tmp_path / "f" / "c.sqlite")


def test_a_damaged_file_opened_is_named_and_every_connection_waits_a_minute_for_a_busy_one(tmp_path):
    path = tmp_path / "bad.sqlite"
    path.write_bytes(b"not sqlite" * 500)
    with pytest.raises(UsageError, match=f"^response cache {path} is damaged \\(file is not a database\\): "):
        ResponseCache(path)
    db = cachefile.connect(str(tmp_path / "ok.sqlite"), False)
    assert db.execute("PRAGMA busy_timeout").fetchone()[0] == 60_000  # another run's commit is waited for
    db.close()


def test_only_a_file_without_the_caps_columns_is_migrated(tmp_path, monkeypatch):
    migrated: list = []
    monkeypatch.setattr(cachefile, "_add_lru_columns", lambda db, path: migrated.append(path))
    open_file(tmp_path / "new.sqlite").close()  # made with them: no write transaction on every open
    assert migrated == []
    with sqlite3.connect(tmp_path / "old.sqlite") as db:
        db.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, model TEXT, value TEXT, created REAL)")
    open_file(tmp_path / "old.sqlite").close()
    assert migrated == [tmp_path / "old.sqlite"]  # the file named, for a failed write's message


def test_a_failed_eviction_names_the_file(tmp_path):
    from emocaustics.core.errors import WriteFailed

    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path, max_bytes=10**6)
    cache.put_many("m", [("k", Completion("a"))])
    cache.flush()
    cache.max_bytes = 1  # now over the cap: the eviction must delete
    cache._wdb.close()
    cache._wdb = cachefile.connect(f"file:{path}?mode=ro", True)
    with pytest.raises(WriteFailed, match=f"^cannot write {path}: "):
        cache.evict()
    cache._wdb.close()
    cache._wdb = None
    cache.close()


class _VacuumFails:
    """The writer's connection, whose `PRAGMA incremental_vacuum` (giving pages back) fails as a full disk's would."""

    def __init__(self, db):
        self.db = db

    def __getattr__(self, name):
        return getattr(self.db, name)

    def executescript(self, script):
        raise sqlite3.OperationalError("disk I/O error")


def test_pages_that_cannot_be_given_back_name_the_file(tmp_path):
    from emocaustics.core.errors import WriteFailed

    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path, max_bytes=10**6)
    cache.put_many("m", [("k", Completion("a"))])
    cache.flush()
    cache.max_bytes, real = 1, cache._wdb
    cache._wdb = _VacuumFails(real)
    with pytest.raises(WriteFailed, match=f"^cannot write {path}: disk I/O error"):
        cache.evict()
    cache._wdb = real
    cache.close()


def test_keys_are_read_500_to_a_query(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")

    class Counting:
        def __init__(self, db):
            self.db, self.queries = db, 0

        def execute(self, *args):
            self.queries += 1
            return self.db.execute(*args)

    cache._db = counting = Counting(cache._db)
    cache.get_many([f"k{i}" for i in range(1001)])
    assert counting.queries == 3  # sqlite's bound-parameter limit, at 500 a query: 500, 500, 1
    cache._db = counting.db
    cache.close()


def test_the_embeddings_kept_beside_the_cache(tmp_path):
    from emocaustics.models.embedstore import FILE_NAME

    for read_only in (False, True):
        store = CacheChoice(tmp_path, read_only=read_only).embeddings()
        assert (store.path, store.read_only) == (tmp_path / FILE_NAME, read_only)


def test_a_read_only_cache_keeps_no_use_of_its_hits(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put_many("m", [("k", Completion("a"))])
    cache.close()
    ro = ResponseCache(tmp_path / "c.sqlite", read_only=True)
    assert set(ro.get_many(["k", "none"])) == {"k"} and ro._touched == {}  # nothing it could ever write
    ro.close()


def test_a_closed_cache_takes_no_more(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.close()
    cache.close()  # twice: nothing
    cache.put_many("m", [("k", Completion("", error="x"))])  # nothing to store: no error
    with pytest.raises(RuntimeError, match=f"^response cache {tmp_path / 'c.sqlite'} is closed$"):
        cache.put_many("m", [("k", Completion("t"))])


def test_a_hit_counts_as_a_use(tmp_path, monkeypatch):
    from emocaustics.models import cachestore

    now = [1000.0]
    monkeypatch.setattr(cachestore.time, "time", lambda: now[0])
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put_many("m", [("a", Completion("1")), ("b", Completion("2"))])
    cache.flush()
    now[0] = 2000.0
    cache.get_many(["a", "none"])
    cache.flush()
    with sqlite3.connect(tmp_path / "c.sqlite") as db:
        used = dict(db.execute("SELECT key, used FROM responses"))
    assert used == {"a": 2000.0, "b": 1000.0}
    now[0] = 1500.0  # an older use does not move it back
    cache.get_many(["a"])
    cache.close()
    with sqlite3.connect(tmp_path / "c.sqlite") as db:
        assert dict(db.execute("SELECT key, used FROM responses"))["a"] == 2000.0
