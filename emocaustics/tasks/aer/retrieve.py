"""Retrieval for `context: retrieve`: each topic's documents chunked and embedded, the top-k chunks by cosine
similarity to the target event and its options.

The embedder is the job's (`ScoreContext.embedder`, any object with `async embed(texts) -> (n, d)` L2-normalised
rows, e.g. emocaustics.models.embedders). Every vector, the chunks' and the queries', is kept across runs by the
embedder's identity and the text (`models/embedstore.py`, beside the run's response cache, `ScoreContext.cache`): a
second run, or another config of a job, embeds only what no run embedded before, so it loads no embedder at all when
nothing changed. Without a cache (`--no-cache`) nothing is read or kept.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable
from contextlib import closing, nullcontext
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from emocaustics.models.embedstore import embed_kept
from emocaustics.tasks.aer.context import Chunk, chunk_topic
from emocaustics.tasks.aer.data import Topic

if TYPE_CHECKING:
    from emocaustics.models.cacheplace import CacheChoice

T = TypeVar("T")


def run_sync(coro: Awaitable[T]) -> T:
    """Run a coroutine from sync code, also when the caller is already inside an event loop (then on a thread)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)  # type: ignore[arg-type]
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()  # type: ignore[arg-type]


def chunk_text(c: Chunk) -> str:
    return f"{c.title}\n{c.text}" if c.title else c.text


def query_text(target_event: str, options: dict[str, str]) -> str:
    return target_event + "\n" + "\n".join(options[k] for k in sorted(options))


async def top_chunks(embedder: Any, queries: list[tuple[Topic, str]], top_k: int, chunk_tokens: int,
                     chars_per_token: float, cache: CacheChoice | None = None) -> list[list[tuple[Chunk, float]]]:
    """For each (topic, query text): the top_k chunks of that topic by similarity, best first (ties: document order);
    `cache`: the run's, whose embedding store is read and added to (None: nothing kept)."""
    topics = list({t.topic_id: t for t, _ in queries}.values())
    chunks = {t.topic_id: chunk_topic(t, chunk_tokens, chars_per_token) for t in topics}
    with closing(cache.embeddings()) if cache is not None else nullcontext() as store:
        vecs = await embed_kept(embedder, store, [chunk_text(c) for t in topics for c in chunks[t.topic_id]],
                                f"embed documents of {len(topics)} topic(s)")
        qvecs = await embed_kept(embedder, store, [q for _, q in queries])
    index = dict(zip(chunks, np.split(vecs, np.cumsum([len(c) for c in chunks.values()])[:-1])))
    out = []
    for (topic, _), qv in zip(queries, qvecs):
        sims = index[topic.topic_id] @ qv if chunks[topic.topic_id] else []
        order = sorted(range(len(sims)), key=lambda i: (-float(sims[i]), i))[:top_k]
        out.append([(chunks[topic.topic_id][i], float(sims[i])) for i in order])
    return out
