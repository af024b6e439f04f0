"""The response cache: a rerun, a resume, a re-score, another job or an `eval` after a `run` never pays for the same
LLM call twice. Shared across runs by default (`models/cacheplace.py` says where, and which mode a job chose).

The key is the sha256 of (model cache id, messages, schema, sampling); the cache id is the model's identity
(`LLMSpec.identity`: local weights with their files' fingerprint; an endpoint's URL without the credentials that
`models.http.strip_credentials` took out): no key or password reaches the key or the file (`models/cachestore.py`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from emocaustics.models.base import LLM, ChatRequest, Completion, Layer
from emocaustics.models.cachestore import ResponseCache
from emocaustics.models.usage import Usage

__all__ = ["CachedLLM", "ResponseCache", "request_key"]


def request_key(model: str, request: ChatRequest) -> str:
    # The sha256 of json.dumps({"messages", "model", "sampling", "schema"}, sort_keys=True, ensure_ascii=False,
    # separators=(",", ":")), byte for byte. The messages (strings only, nearly all of the bytes) go through orjson,
    # which writes strings as json does and is ten times faster (the key is made for every call); the rest through
    # json, since orjson writes some floats otherwise (1e-05 as 0.00001) and the key must not change.
    rest = json.dumps({"model": model, "schema": request.schema, "sampling": request.sampling.key()},
                      sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    messages = orjson.dumps([dict(m) for m in request.messages], option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(b'{"messages":' + messages + b"," + rest[1:].encode("utf-8")).hexdigest()


class CachedLLM(Layer):
    """A layer in front of any model: answers repeated requests from the cache, keyed under the model's identity
    (`cache_id`: `LLMSpec.identity`, local weights' fingerprint included). Counts hits and misses in `usage`."""

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

    async def run(self, fn: Callable[[Any, Any], Awaitable[Any]], items: list[Any],
                  affinity_key: Callable[[Any], str] | None = None, **keys: Any) -> list[Any]:
        """`fn(llm, item)` for every item, with this cache in front of the model (inside the model's actor if it has
        one: the placement keys `weight_key`, `chain_key` go with it)."""
        if self.llm.runs_remotely:
            return await self.llm.run(fn, items, affinity_key, **{**keys, "cache_path": self.cache.ref})
        return await super().run(fn, items)  # here, through this cache (`ModelBase.run`)

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
