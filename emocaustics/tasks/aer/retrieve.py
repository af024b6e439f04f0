"""Retrieval for `context: retrieve` (`context.top_chunks`, which chunks each topic's documents): the top-k texts of a
group by cosine similarity to a query text (the target event and its options).

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


async def ranked(embedder: Any, groups: list[list[str]], queries: list[tuple[int, str]], top_k: int,
                 cache: CacheChoice | None, stage: str) -> list[list[tuple[int, float]]]:
    """For each (group, query text): the top_k texts of `groups[group]` by similarity, best first (ties: the group's
    order), as (index in the group, similarity); the groups' texts are embedded with a progress line named `stage`;
    `cache`: the run's, whose embedding store is read and added to (None: nothing kept)."""
    with closing(cache.embeddings()) if cache is not None else nullcontext() as store:
        vecs = await embed_kept(embedder, store, [t for g in groups for t in g], stage)
        qvecs = await embed_kept(embedder, store, [q for _, q in queries])
    index = np.split(vecs, np.cumsum([len(g) for g in groups])[:-1])
    out = []
    for (g, _), qv in zip(queries, qvecs):
        sims = index[g] @ qv if groups[g] else []
        order = sorted(range(len(sims)), key=lambda i: (-float(sims[i]), i))[:top_k]
        out.append([(i, float(sims[i])) for i in order])
    return out
