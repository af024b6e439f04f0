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

from emocaustics.core.progress import Progress
from emocaustics.models.embedders import normalise_rows
from emocaustics.models.embedstore import identity_of
from emocaustics.tasks.aer.context import Chunk, chunk_topic
from emocaustics.tasks.aer.data import Topic

if TYPE_CHECKING:
    from emocaustics.models.cacheplace import CacheChoice
    from emocaustics.models.embedstore import EmbeddingStore

T = TypeVar("T")
EMBED_BATCH = 256  # passages per embedder call: the progress line moves between calls


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


async def embed_kept(embedder: Any, store: EmbeddingStore | None, texts: list[str], stage: str | None = None
                     ) -> np.ndarray:
    """The vectors of `texts`: those the store holds for this embedder, the rest embedded EMBED_BATCH at a time (with
    a progress line named `stage`, when given: minutes on a loaded machine, before any question is asked) and kept."""
    identity = identity_of(embedder)
    kept = store.get_many(identity, texts) if store is not None else {}
    todo = [i for i in range(len(texts)) if i not in kept]
    progress = Progress(stage, len(todo)) if stage and todo else None
    if progress is not None:  # said at once: the embedder's load and first batch took 96 s on a loaded machine
        progress.update(0)
    for at in range(0, len(todo), EMBED_BATCH):
        batch = [texts[i] for i in todo[at:at + EMBED_BATCH]]
        vecs = normalise_rows(np.asarray(await embedder.embed(batch), dtype=np.float32))
        if vecs.shape[0] != len(batch):
            raise RuntimeError(f"embedder returned {vecs.shape[0]} vectors for {len(batch)} texts")
        if store is not None:
            store.put_many(identity, batch, vecs)
        kept.update(zip(todo[at:at + EMBED_BATCH], vecs))
        if progress is not None:
            progress.update(len(batch))
    if progress is not None:  # on a terminal: the live line's newline
        progress.close()
    return np.stack([kept[i] for i in range(len(texts))]) if texts else np.zeros((0, 1), np.float32)


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
