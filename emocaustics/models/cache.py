"""On-disk response cache: a rerun, a resumed run or a re-score never pays for the same LLM call twice.

One sqlite file in WAL mode, so that the driver and every model actor (separate processes) can read and write it at
the same time. The key is the sha256 of (model cache id, messages, schema, sampling); only successful completions are
stored, so a failure is retried on the next run instead of being replayed.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from emocaustics.models.base import LLM, ChatRequest, Completion
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
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # One connection guarded by a lock: calls are short, and sqlite serialises writers anyway.
        self._db = sqlite3.connect(self.path, timeout=60.0, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT NOT NULL, value TEXT NOT NULL,"
            " created REAL NOT NULL)"
        )

    def get_many(self, keys: list[str]) -> dict[str, Completion]:
        found: dict[str, Completion] = {}
        with self._lock:
            for start in range(0, len(keys), 500):  # sqlite's bound-parameter limit
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(f"SELECT key, value FROM responses WHERE key IN ({marks})", chunk).fetchall()
                for key, value in rows:
                    d = json.loads(value)
                    found[key] = Completion(
                        text=d["text"],
                        parsed=d.get("parsed"),
                        prompt_tokens=d.get("prompt_tokens", 0),
                        generated_tokens=d.get("generated_tokens", 0),
                        repaired=d.get("repaired", False),
                        cached=True,
                    )
        return found

    def put_many(self, model: str, items: list[tuple[str, Completion]]) -> None:
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
                time.time(),
            )
            for key, c in items
            if c.error is None  # failures are never cached: the next run tries again
        ]
        if not rows:
            return
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)", rows)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


class CachedLLM:
    """Wraps any LLM; answers repeated requests from the cache. Counts hits and misses in `usage`."""

    def __init__(self, llm: LLM, cache: ResponseCache) -> None:
        self.llm = llm
        self.cache = cache
        self.name = llm.name
        # Cache under the model's identity, not its spec: the smoke model's id includes its content hash.
        self.cache_id: str = getattr(llm, "cache_id", llm.name)
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
    def runs_remotely(self) -> bool:
        """Whether `run` ships items to the wrapped model's actors (they must then be serialisable)."""
        return bool(getattr(self.llm, "runs_remotely", False))

    async def run(
        self, fn: Callable[[Any, Any], Awaitable[Any]], items: list[Any], affinity_key: Callable[[Any], str] | None = None,
        *, weight_key: Callable[[Any], int] | None = None,
    ) -> list[Any]:
        """`fn(llm, item)` for every item, with this cache in front of the model (inside the model's actor if it has one)."""
        inner_run = getattr(self.llm, "run", None)
        if inner_run is not None and getattr(self.llm, "runs_remotely", False):
            return await inner_run(fn, items, affinity_key, cache_path=self.cache.path, weight_key=weight_key)
        from emocaustics.models.local import run_local

        return await run_local(self, fn, items)

    async def stats(self) -> dict[str, Any]:
        inner = getattr(self.llm, "stats", None)
        out: dict[str, Any] = dict(await inner()) if inner else {}
        for key in ("cache_hits", "cache_misses"):
            out[key] = out.get(key, 0) + getattr(self.usage, key)
        return out
