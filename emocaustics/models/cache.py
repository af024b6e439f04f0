"""On-disk response cache: a rerun, a resumed run or a re-score never pays for the same LLM call twice.

One sqlite file in WAL mode, so that the driver and every model actor (separate processes) can read and write it at
the same time. The key is the sha256 of (model cache id, messages, schema, sampling); only successful completions are
stored, so a failure is retried on the next run instead of being replayed.

Writes are handed to a writer thread that commits whatever has piled up in one transaction: a commit per answer
batch was about a tenth of the driver's CPU per call at hundreds of calls per second, and sqlite works outside the GIL, so
the thread runs beside the event loop. Pending answers are served to `get_many` from memory and are committed at
`flush`/`close` and at interpreter exit; a process killed outright loses at most the answers of its last moments
(they are asked again on the next run; predictions are never kept only here). A commit that fails (a full disk) is
kept by the writer thread and raised to the next `put_many` or `flush` as one line naming the file
(`core.writes.WriteFailed`): the run stops, and the answers committed before stay.
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import json
import sqlite3
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from emocaustics.core.errors import WriteFailed
from emocaustics.core.writes import failed
from emocaustics.models.base import LLM, ChatRequest, Completion, Layer
from emocaustics.models.usage import Usage


def request_key(model: str, request: ChatRequest) -> str:
    payload = {
        "model": model,
        "messages": [dict(m) for m in request.messages],
        "schema": request.schema,
        "sampling": request.sampling.key(),
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """sqlite-backed map from request key to Completion; safe across threads and processes."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # One connection guarded by a lock: calls are short, and sqlite serialises writers anyway.
            self._db = sqlite3.connect(self.path, timeout=60.0, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT NOT NULL, value TEXT NOT NULL,"
                " created REAL NOT NULL)"
            )
        except (OSError, sqlite3.Error) as exc:  # a full disk, a read-only folder: one line naming the file
            raise failed(self.path, exc) from None
        self._pending: dict[str, tuple[str, str, str, float]] = {}  # key -> row, not yet committed
        self._wake = threading.Condition()
        # The writer's own connection: readers (WAL) do not wait for its commits
        self._wlock = threading.Lock()
        self._wdb = sqlite3.connect(self.path, timeout=60.0, check_same_thread=False, isolation_level=None)
        self._wdb.execute("PRAGMA synchronous=NORMAL")
        self._writer: threading.Thread | None = None
        self._closed = False
        self._error: WriteFailed | None = None  # the writer thread's failed commit, raised to the next caller
        _OPEN.add(self)

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
        with self._lock:
            for start in range(0, len(rest), 500):  # sqlite's bound-parameter limit
                chunk = rest[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(f"SELECT key, value FROM responses WHERE key IN ({marks})", chunk).fetchall()
                for key, value in rows:
                    found[key] = self._completion(value)
        return found

    def put_many(self, model: str, items: list[tuple[str, Completion]]) -> None:
        now = time.time()
        rows = [
            (
                key,
                model,
                json.dumps(
                    {
                        "text": c.text,
                        "parsed": c.parsed,
                        "prompt_tokens": c.prompt_tokens,
                        "generated_tokens": c.generated_tokens,
                        "repaired": c.repaired,
                    },
                    ensure_ascii=False,
                ),
                now,
            )
            for key, c in items
            if c.error is None  # failures are never cached: the next run tries again
        ]
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
        """Commit every pending row in one transaction; they stay readable from memory until committed."""
        with self._wlock:
            with self._wake:
                rows = list(self._pending.values())
            if not rows:
                return
            try:
                self._wdb.execute("BEGIN IMMEDIATE")
                self._wdb.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)", rows)
                self._wdb.execute("COMMIT")
            except BaseException as exc:
                if self._wdb.in_transaction:  # sqlite rolls a full disk's transaction back itself
                    self._wdb.execute("ROLLBACK")
                if isinstance(exc, (OSError, sqlite3.Error)):
                    raise failed(self.path, exc) from None
                raise
            with self._wake:
                for row in rows:
                    if self._pending.get(row[0]) is row:
                        del self._pending[row[0]]

    def flush(self) -> None:
        """Commit every answer put so far (other processes see them once this returns); `WriteFailed` if the file
        cannot take them."""
        self._commit_pending()
        with self._wake:
            self._error = None  # committed after all (room was made)

    def __len__(self) -> int:
        self.flush()
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._wake:
            if self._closed:
                return
            self._closed = True
            self._wake.notify_all()
        try:
            self.flush()
        finally:  # a commit that failed (`WriteFailed`, raised) leaves no connection or thread behind
            if self._writer is not None:
                self._writer.join(5)
            with self._wlock:
                self._wdb.close()
            with self._lock:
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


class CachedLLM(Layer):
    """A layer in front of any model: answers repeated requests from the cache, keyed under the model's identity
    (`cache_id`: the smoke model's includes its content hash). Counts hits and misses in `usage`."""

    def __init__(self, llm: LLM, cache: ResponseCache) -> None:
        super().__init__(llm)
        self.cache = cache
        self.usage = Usage()

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        keys = [request_key(self.cache_id, r) for r in requests]
        hits = self.cache.get_many(keys)
        missing = [i for i, k in enumerate(keys) if k not in hits]
        self.usage.cache_hits += len(requests) - len(missing)
        self.usage.cache_misses += len(missing)
        answers = await self.llm.generate([requests[i] for i in missing]) if missing else []
        self.cache.put_many(self.cache_id, [(keys[i], c) for i, c in zip(missing, answers)])
        fresh = dict(zip(missing, answers))
        return [fresh[i] if i in fresh else hits[keys[i]] for i in range(len(requests))]

    @property
    def runs_remotely(self) -> bool:  # type: ignore[override]
        """Whether `run` ships items to the wrapped model's actors (they must then be serialisable)."""
        return self.llm.runs_remotely

    async def run(
        self, fn: Callable[[Any, Any], Awaitable[Any]], items: list[Any], affinity_key: Callable[[Any], str] | None = None,
        *, weight_key: Callable[[Any], int] | None = None, chain_key: Callable[[Any], int] | None = None,
        cache_path: Any = None,
    ) -> list[Any]:
        """`fn(llm, item)` for every item, with this cache in front of the model (inside the model's actor if it has one)."""
        if self.llm.runs_remotely:
            return await self.llm.run(fn, items, affinity_key, cache_path=self.cache.path, weight_key=weight_key,
                                      chain_key=chain_key)
        from emocaustics.models.local import run_local

        return await run_local(self, fn, items)

    async def aclose(self) -> None:
        """Close the wrapped model's connections of this event loop, if it holds any (remote endpoints), and commit
        the answers put so far: another cache object on the same file (the next LLM made on the run folder, another
        process) reads them from disk, and the writer thread may not have committed them yet (a batch test read a
        miss under CI load)."""
        await self.llm.aclose()
        await asyncio.to_thread(self.cache.flush)

    async def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(await self.llm.stats())
        for key in ("cache_hits", "cache_misses"):
            out[key] = out.get(key, 0) + getattr(self.usage, key)
        return out
