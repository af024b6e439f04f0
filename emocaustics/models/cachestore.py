"""The response cache's store (`models/cache.py` is its layer): a map from request key to answer that several
processes share.

One sqlite file in WAL mode (`models/cachefile.py` opens and checks it), so that the driver and every model actor
(separate processes), and several runs at once on one machine, read and write it at the same time: each writer
commits in `BEGIN IMMEDIATE` transactions under a 60 s busy timeout. Only successful completions are stored, so a
failure is retried on the next run instead of being replayed; the first answer stored for a key stays (two runs that
asked at once store one entry).

Writes are handed to a writer thread that commits whatever has piled up in one transaction: a commit per answer
batch was about a tenth of the driver's CPU per call at hundreds of calls per second, and sqlite works outside the GIL, so
the thread runs beside the event loop. Pending answers are served to `get_many` from memory and are committed at
`flush`/`close` and at interpreter exit; a process killed outright loses at most the answers of its last moments
(they are asked again on the next run; predictions are never kept only here). A commit that fails (a full disk) is
kept by the writer thread and raised to the next `put_many` or `flush` as one line naming the file
(`core.writes.WriteFailed`): the run stops, and the answers committed before stay.

Size cap: with `max_bytes` (`EMOCAUSTICS_CACHE_MAX_GB`), the least recently used entries (a hit counts as a use) are
deleted once the entries' bytes pass it, when the cache opens, as answers are committed and when it closes.
A read-only cache (`read_only=True`, or a `file:PATH?mode=ro` path) answers from the file and writes nothing.
"""

from __future__ import annotations

import atexit
import json
import sqlite3
import threading
import time
import weakref
from pathlib import Path

from emocaustics.core.errors import WriteFailed
from emocaustics.core.writes import failed
from emocaustics.models.base import Completion
from emocaustics.models.cachefile import CORRUPT, ROW_OVERHEAD, connect, damaged, immediate, open_file, retried


class ResponseCache:
    """sqlite-backed map from request key to Completion; safe across threads, processes and concurrent runs."""

    def __init__(self, path: str | Path, *, read_only: bool = False, max_bytes: int | None = None) -> None:
        text = str(path)
        if text.startswith("file:"):  # `ref` of a read-only cache, as a model actor is handed it
            text, _, query = text[5:].partition("?")
            read_only = read_only or "mode=ro" in query
        self.path, self.read_only, self.max_bytes = Path(text), read_only, max_bytes
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[str, str, str, float, float, int]] = {}  # key -> row, not yet committed
        self._touched: dict[str, float] = {}  # key -> when a hit used it (LRU), not yet committed
        self._wake = threading.Condition()
        self._wlock = threading.Lock()
        self._writer: threading.Thread | None = None
        self._closed = False
        self._error: WriteFailed | None = None  # the writer thread's failed commit, raised to the next caller
        self._since_evict = 0  # bytes committed since the last eviction
        self._db: sqlite3.Connection | None = None
        self._wdb: sqlite3.Connection | None = None
        if read_only:
            if self.path.exists():  # no file: an empty cache, and none is created
                self._db = retried(lambda: connect(f"file:{self.path}?mode=ro", True))
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # One connection guarded by a lock: calls are short, and sqlite serialises writers anyway.
            self._db = retried(lambda: open_file(self.path))
            # The writer's own connection: readers (WAL) do not wait for its commits
            self._wdb = connect(str(self.path), False)
            self._wdb.execute("PRAGMA synchronous=NORMAL")
        except (OSError, sqlite3.Error) as exc:  # a full disk, a read-only folder: one line naming the file
            corrupt = getattr(exc, "sqlite_errorname", "") in CORRUPT
            raise (damaged(self.path, exc) if corrupt else failed(self.path, exc)) from None
        self.evict()
        _OPEN.add(self)

    @property
    def ref(self) -> str:
        """This cache as a string another process opens the same way (`ResponseCache(ref)`: a model actor)."""
        return f"file:{self.path}?mode=ro" if self.read_only else str(self.path)

    @staticmethod
    def _completion(value: str) -> Completion:
        d = json.loads(value)
        return Completion(text=d["text"], parsed=d.get("parsed"), prompt_tokens=d.get("prompt_tokens", 0),
                          generated_tokens=d.get("generated_tokens", 0), repaired=d.get("repaired", False),
                          cached=True)

    def get_many(self, keys: list[str]) -> dict[str, Completion]:
        found: dict[str, Completion] = {}
        with self._wake:
            for key in keys:
                row = self._pending.get(key)
                if row is not None:
                    found[key] = self._completion(row[2])
        rest = [k for k in keys if k not in found]
        if self._db is None:
            return found
        with self._lock:
            for start in range(0, len(rest), 500):  # sqlite's bound-parameter limit
                chunk = rest[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(f"SELECT key, value FROM responses WHERE key IN ({marks})", chunk).fetchall()
                for key, value in rows:
                    found[key] = self._completion(value)
        if not self.read_only and len(found) > len(keys) - len(rest) and not self._closed:
            now = time.time()
            with self._wake:  # the hits' use, for the least-recently-used eviction: committed with the next rows
                self._touched.update((k, now) for k in rest if k in found)
        return found

    def put_many(self, model: str, items: list[tuple[str, Completion]]) -> None:
        if self.read_only:
            return
        now = time.time()
        rows = []
        for key, c in items:
            if c.error is not None:  # failures are never cached: the next run tries again
                continue
            value = json.dumps({"text": c.text, "parsed": c.parsed, "prompt_tokens": c.prompt_tokens,
                                "generated_tokens": c.generated_tokens, "repaired": c.repaired}, ensure_ascii=False)
            size = len(key) + len(model.encode("utf-8")) + len(value.encode("utf-8")) + ROW_OVERHEAD
            rows.append((key, model, value, now, now, size))
        if not rows:
            return
        with self._wake:
            if self._closed:
                raise RuntimeError(f"response cache {self.path} is closed")
            if self._error is not None:  # the cache cannot be written: the run stops (its rows are not lost)
                raise self._error
            for row in rows:
                self._pending[row[0]] = row
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_loop, name="response-cache-writer", daemon=True)
                self._writer.start()
            self._wake.notify()

    def _write_loop(self) -> None:
        while True:
            with self._wake:
                while not self._pending and not self._closed:
                    self._wake.wait()
                if not self._pending and self._closed:
                    return
            try:
                self._commit_pending()
            except WriteFailed as exc:  # kept for the next put or flush to raise: a thread's traceback stops nothing
                with self._wake:
                    self._error, self._writer = exc, None
                return

    def _commit_pending(self) -> None:
        """Commit every pending row (and the hits' use) in one transaction; rows stay readable from memory until
        committed. A key another process stored meanwhile keeps its first answer."""
        if self._wdb is None:
            return
        with self._wlock:
            with self._wake:
                rows, touched = list(self._pending.values()), list(self._touched.items())
                self._touched = {}
            if not rows and not touched:
                return
            try:
                with immediate(self._wdb, self.path) as db:
                    db.executemany("INSERT INTO responses VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE "
                                   "SET used = excluded.used", rows)
                    db.executemany("UPDATE responses SET used = max(used, ?) WHERE key = ?",
                                   [(t, k) for k, t in touched])
            except BaseException:
                with self._wake:  # tried again with the next commit
                    self._touched = {**dict(touched), **self._touched}
                raise
            with self._wake:
                for row in rows:
                    if self._pending.get(row[0]) is row:
                        del self._pending[row[0]]
            self._since_evict += sum(row[5] for row in rows)
        if self.max_bytes is not None and self._since_evict > self.max_bytes // 20:
            self.evict()

    def evict(self) -> None:
        """Delete the least recently used entries until the entries' bytes are within `max_bytes`."""
        if self.max_bytes is None or self._wdb is None:
            return
        with self._wlock:
            self._since_evict = 0
            with immediate(self._wdb, self.path) as db:
                total = int(db.execute("SELECT COALESCE(SUM(size), 0) FROM responses").fetchone()[0])
                doomed, over = [], total - self.max_bytes
                if over > 0:
                    for key, size in db.execute("SELECT key, size FROM responses ORDER BY used, created"):
                        if over <= 0:
                            break
                        doomed.append((key,))
                        over -= size
                    db.executemany("DELETE FROM responses WHERE key = ?", doomed)
            if doomed:  # their pages given back to the filesystem: `execute` runs the pragma but frees no page
                try:  # (and `executescript` commits first, so it comes after the transaction)
                    self._wdb.executescript("PRAGMA incremental_vacuum")
                except sqlite3.Error as exc:
                    raise failed(self.path, exc) from None

    def flush(self) -> None:
        """Commit every answer put so far (other processes see them once this returns); `WriteFailed` if the file
        cannot take them."""
        self._commit_pending()
        with self._wake:
            self._error = None  # committed after all (room was made)

    def close(self) -> None:
        with self._wake:
            if self._closed:
                return
            self._closed = True
            self._wake.notify_all()
        try:
            self.flush()
            self.evict()
        finally:  # a commit that failed (`WriteFailed`, raised) leaves no connection or thread behind
            if self._writer is not None:
                self._writer.join(5)
            with self._wlock:
                if self._wdb is not None:
                    self._wdb.close()
            with self._lock:
                if self._db is not None:
                    self._db.close()
            _OPEN.discard(self)


_OPEN: weakref.WeakSet[ResponseCache] = weakref.WeakSet()


@atexit.register
def _flush_open_caches() -> None:
    for cache in list(_OPEN):
        try:
            cache.flush()
        except Exception:  # at exit a failed write only costs a repeated call next run
            pass
