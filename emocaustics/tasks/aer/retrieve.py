"""Retrieval for `context: retrieve`: each topic's documents chunked and embedded ONCE per process (per embedder and
chunking), shared by every question and every config of a job; the top-k chunks by cosine similarity to the target
event and its options.

The embedder is the job's (`ScoreContext.embedder`, any object with `async embed(texts) -> (n, d)` L2-normalised
rows, e.g. emocaustics.models.embedders); its `identity` (else its `name`) keys the cache.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from emocaustics.core.progress import Progress
from emocaustics.models.embedders import normalise_rows
from emocaustics.tasks.aer.context import Chunk, chunk_topic
from emocaustics.tasks.aer.data import Topic

T = TypeVar("T")


@dataclass
class TopicIndex:
    chunks: list[Chunk]
    vectors: np.ndarray  # (len(chunks), d), L2-normalised


_INDEX: dict[tuple[str, str, int, float], TopicIndex] = {}  # (embedder, topic digest, chunk_tokens, chars/token)
EMBED_BATCH = 256  # passages per embedder call: the progress line moves between calls


def clear_cache() -> None:
    _INDEX.clear()


def run_sync(coro: Awaitable[T]) -> T:
    """Run a coroutine from sync code, also when the caller is already inside an event loop (then on a thread)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)  # type: ignore[arg-type]
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()  # type: ignore[arg-type]


def _key(embedder: Any, topic: Topic, chunk_tokens: int, chars_per_token: float) -> tuple[str, str, int, float]:
    return (str(getattr(embedder, "identity", None) or getattr(embedder, "name", type(embedder).__name__)), topic.digest,
            chunk_tokens, chars_per_token)


def chunk_text(c: Chunk) -> str:
    return f"{c.title}\n{c.text}" if c.title else c.text


async def _embed(embedder: Any, texts: list[str]) -> np.ndarray:
    vecs = np.asarray(await embedder.embed(texts), dtype=np.float32)
    if vecs.shape[0] != len(texts):
        raise RuntimeError(f"embedder returned {vecs.shape[0]} vectors for {len(texts)} texts")
    return normalise_rows(vecs)


async def index_topics(embedder: Any, topics: list[Topic], chunk_tokens: int,
                       chars_per_token: float) -> dict[int, TopicIndex]:
    """topic id -> its chunks and vectors; the chunks of topics not yet cached are embedded EMBED_BATCH at a time,
    with a progress line (minutes on a loaded machine, before any question is asked)."""
    todo = [t for t in topics if _key(embedder, t, chunk_tokens, chars_per_token) not in _INDEX]
    if todo:
        chunked = [chunk_topic(t, chunk_tokens, chars_per_token) for t in todo]
        texts = [chunk_text(c) for chunks in chunked for c in chunks]
        progress, parts = Progress(f"embed documents of {len(todo)} topic(s)", len(texts)), []
        for at in range(0, len(texts), EMBED_BATCH):
            parts.append(await _embed(embedder, texts[at:at + EMBED_BATCH]))
            progress.update(len(parts[-1]))
        if parts:  # on a terminal: the live line's newline
            progress.close()
        vecs = np.concatenate(parts) if parts else np.zeros((0, 1), np.float32)
        at = 0
        for t, chunks in zip(todo, chunked):
            _INDEX[_key(embedder, t, chunk_tokens, chars_per_token)] = TopicIndex(chunks, vecs[at:at + len(chunks)])
            at += len(chunks)
    return {t.topic_id: _INDEX[_key(embedder, t, chunk_tokens, chars_per_token)] for t in topics}


def query_text(target_event: str, options: dict[str, str]) -> str:
    return target_event + "\n" + "\n".join(options[k] for k in sorted(options))


async def top_chunks(embedder: Any, queries: list[tuple[Topic, str]], top_k: int, chunk_tokens: int,
                     chars_per_token: float) -> list[list[tuple[Chunk, float]]]:
    """For each (topic, query text): the top_k chunks of that topic by similarity, best first (ties: document order)."""
    topics = list({t.topic_id: t for t, _ in queries}.values())
    index = await index_topics(embedder, topics, chunk_tokens, chars_per_token)
    qvecs = await _embed(embedder, [q for _, q in queries]) if queries else np.zeros((0, 1), np.float32)
    out = []
    for (topic, _), qv in zip(queries, qvecs):
        idx = index[topic.topic_id]
        if not idx.chunks:
            out.append([])
            continue
        sims = idx.vectors @ qv
        order = sorted(range(len(idx.chunks)), key=lambda i: (-float(sims[i]), i))[:top_k]
        out.append([(idx.chunks[i], float(sims[i])) for i in order])
    return out
