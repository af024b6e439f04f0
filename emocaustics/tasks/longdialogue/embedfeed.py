"""A sample's side texts embedded beside the LLM calls, as the samples need them (for
EmoCaustics: a dialogue's utterances; each entry is `{"id": sample id, "texts": [...]}`). `start_feed` makes it for the
plan (`SideInputs.feed`), and `embeddings(sample id)` is what travels with that sample to its solver.

An EmoCaustics run used to embed every dialogue in a Ray Data stage before any of them reached the model (blocks of
64: the first LLM call waited minutes on a 400-dialogue run). Here each sample asks for its own embeddings when a step first needs
them (`rag` before its first call, `window` only when an answer names no known event); meanwhile the feed works
through the remaining samples, longest first, so that most are ready before they are asked for, except for `window`
in this process (`background`), where it embeds only the samples that ask. A sample that asks jumps the queue
(several that ask: the longest of them first). One embedding runs at a time: on a CPU a second one would only share
the same cores. Working ahead, it encodes several samples at once (at least GROUP_TEXTS texts), which an encoder sorts
by length across them: a third less work on a CPU than sample by sample (`embedprocess.GROUP_BATCH`); each of them
gets its rows when the encode ends. A sample that alone has GROUP_TEXTS texts or more, and every sample asked for on
demand, is encoded in chunks of 32, 64, 128...: its first rows are usable early.

The packaged `minilm` (and any local sentence-transformers model) loads in a child process started with the feed,
while the first calls go out (in the background: when a sample first asks); an `openai:` embedder is a client like
any other.

Samples that run inside replica actors cannot await this process's futures: with a board attached
(`embedboard.py`) the feed also posts every chunk there, and takes the replicas' asks from it.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import numpy as np

from emocaustics.tasks.longdialogue.embedboard import board_embeddings, start_board
from emocaustics.tasks.longdialogue.embeddings import EmbeddingFailed, Embeddings
from emocaustics.tasks.longdialogue.embedprocess import EmbedderProcess, in_daemon_thread


# The key of an item in the feed (and its ticket on the board), set on the item when the feed is made: a copy of the
# item (`{**item, ...}`, as the runner ships it) keeps it. Keyed by `id(item)` before, a copied item's sample waited
# forever for rows filed under the original's id.
KEY = "feed_key"
CHUNK = 32  # texts in a sample's first encode (then doubling): its first utterances are usable early
GROUP_TEXTS = 1024  # see embedprocess.GROUP_BATCH for the measurement


class EmbedFeed:
    def __init__(self, spec: str, items: list[dict[str, Any]], marks: dict[str, float] | None = None, *,
                 background: bool = False, threads: int | None = None) -> None:
        from emocaustics.models.embedders import make_embedder

        self.spec = spec
        self.embedder = make_embedder(spec)  # parses the spec here: a bad one fails the run before it starts
        self._process: EmbedderProcess | None = None
        # background: the consumers await embeddings only now and then (window, in this process), so the embedder's
        # CPU must not be taken from the loop that drives the calls: it loads niced when a sample first asks, and
        # embeds only the samples that ask (a sample whose answers always name known events never costs an encode;
        # on the 400-sample window run against the stand-in, embedding every sample ahead took ~1 s of wall from
        # the calls on 2 cores).
        # `rag` waits on every sample's embeddings: it keeps full priority and works ahead.
        self.background = background
        # CPU threads of a local embedder (None: torch's default, every core). Beside a CPU engine on the same cores,
        # half: with both cores the embedder's threads preempt the engine's mid-step (engine_bench window: the engine
        # had 1.3 of 2 cores, the embedder 32 CPU-seconds for 854 texts it encodes in 19 on one thread).
        self.threads = threads
        self._ask = asyncio.Event()
        self.marks = marks if marks is not None else {}
        # Longest sample first (its chain of dependent calls sets the run's length): on the 50-sample window run
        # of engine_bench, in sample order, the longest one asked last and waited 13 s of a 52 s LLM phase for its
        # rows while short samples were embedded ahead of it.
        self._order = sorted(items, key=lambda it: -len(it["texts"]))
        for n, it in enumerate(self._order):
            it[KEY] = n
        self._by_id = {it["id"]: it for it in self._order}
        self._futures: dict[int, asyncio.Future[np.ndarray]] = {}
        self._asked: list[int] = []  # item keys asked for: served before the rest, longest first
        self._parts: dict[int, list[np.ndarray]] = {}  # rows embedded so far, chunk by chunk
        self._progress = asyncio.Condition()
        self._worker: asyncio.Task[None] | None = None
        self.texts = 0
        self.seconds = 0.0
        self.board: Any = None  # an EmbeddingBoard actor: rows for samples inside replicas (attach_board)

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        for it in self._order:
            self._futures[self.ticket(it)] = loop.create_future()
        self._worker = asyncio.ensure_future(self._work())

    def _wanted(self, item: dict[str, Any]) -> asyncio.Future[np.ndarray]:
        """The item's future; asked for (served before the rest) while it is not done."""
        fut = self._futures[self.ticket(item)]
        if not fut.done():
            self._asked.append(self.ticket(item))
            self._ask.set()
        return fut

    async def get(self, item: dict[str, Any]) -> np.ndarray:
        return await asyncio.shield(self._wanted(item))

    async def upto(self, item: dict[str, Any], n: int) -> np.ndarray:
        """At least the first n rows of the item's embeddings (all of them once done): `rag` asks utterance i as soon
        as utterances 0..i are embedded, instead of waiting for the whole sample."""
        fut = self._wanted(item)
        parts = self._parts.setdefault(self.ticket(item), [])
        async with self._progress:
            await self._progress.wait_for(lambda: fut.done() or sum(len(p) for p in parts) >= n)
        if fut.done():
            return fut.result()
        return np.concatenate(parts)

    def attach_board(self, board: Any) -> None:
        """Post every chunk to `board` from now on, and what is already embedded at once; each item's ticket is
        its feed key (`ticket(item)`)."""
        self.board = board
        for it in self._order:
            key = self.ticket(it)
            start = 0
            for part in self._parts.get(key, []):
                board.post.remote(key, start, part)
                start += len(part)
            self._post_end(key, self._futures[key])  # the feed has started (`start_feed`): every key has its future

    def entry(self, sample_id: str) -> dict[str, Any]:
        """The feed's entry of a sample (what `get`, `upto` and `ticket` take)."""
        return self._by_id[sample_id]

    def embeddings(self, sample_id: str) -> Embeddings:
        """What travels with the sample to its solver: its rows from this feed (in this process) or from the board
        (inside its replica, awaited when a step needs them); the feed's failure as `EmbeddingFailed`."""
        entry = self.entry(sample_id)
        if self.board is not None:
            return board_embeddings(self.board, self.ticket(entry))
        return Embeddings(lambda: _rows(self.get(entry)), lambda n: _rows(self.upto(entry, n)))

    @staticmethod
    def ticket(item: dict[str, Any]) -> int:
        return int(item[KEY])

    def _post_end(self, key: int, fut: asyncio.Future[np.ndarray]) -> None:
        if self.board is None or not fut.done() or fut.cancelled():  # no board, or nothing to tell yet
            return
        exc = fut.exception()
        if exc is None:
            self.board.end.remote(key, len(fut.result()))
        else:
            self.board.fail.remote(key, str(exc))

    async def _load(self) -> None:
        from emocaustics.models.embedders import SentenceTransformerEmbedder

        if not isinstance(self.embedder, SentenceTransformerEmbedder):
            return
        self.marks["embedder_start"] = time.time()
        self._process = EmbedderProcess.shared(self.spec, nice=10 if self.background else 0, threads=self.threads)
        await in_daemon_thread(self._process.wait_ready)
        self.marks["embedder_loaded"] = time.time()

    def _next(self) -> list[dict[str, Any]]:
        """The samples to embed next (none: nothing to do now). Samples that wait come first, the longest of them
        first (`_order`); in the background only they, one at a time (the rest stay asked); working ahead, the next
        samples in order join them in one encode up to GROUP_TEXTS texts."""
        asked = {key for key in self._asked if key in self._futures and not self._futures[key].done()}
        queue = [it for it in self._order if self.ticket(it) in asked]
        if not self.background:
            queue += [it for it in self._order
                      if self.ticket(it) not in asked and not self._futures[self.ticket(it)].done()]
        group: list[dict[str, Any]] = []
        size = 0
        for it in queue:
            if group and (self.background or size >= GROUP_TEXTS):
                break
            group.append(it)
            size += len(it["texts"])
        self._asked = [key for key in asked if key not in {self.ticket(it) for it in group}]
        return group

    async def _encode(self, texts: list[str], grouped: bool = False) -> np.ndarray:
        if self._process is not None:
            vecs = await in_daemon_thread(self._process.encode, texts, grouped)
        else:
            vecs = await self.embedder.embed(texts)
        return np.asarray(vecs, dtype=np.float32).reshape(len(texts), -1)

    async def _embed(self, group: list[dict[str, Any]]) -> None:
        """Several samples in one encode, each getting all its rows when it ends; or one sample in chunks of 32, 64,
        128...: early rows soon, the rest in big batches."""
        t0 = time.perf_counter()
        texts = [t for it in group for t in it["texts"]]
        try:
            if len(group) > 1:
                vecs, start = await self._encode(texts, grouped=True), 0
                for it in group:
                    self._add(it, 0, vecs[start:start + len(it["texts"])])
                    start += len(it["texts"])
            else:
                start, size = 0, CHUNK
                while start < len(texts):
                    first, chunk = start, texts[start:start + size]
                    start, size = start + size, size * 2
                    self._add(group[0], first, await self._encode(chunk))
                    async with self._progress:
                        self._progress.notify_all()
        except Exception as exc:
            for it in group:
                self._futures[self.ticket(it)].set_exception(
                    RuntimeError(f"embedding failed: {type(exc).__name__}: {exc}"))
        else:
            self.seconds += time.perf_counter() - t0
            self.texts += len(texts)
            for it in group:
                parts = self._parts.setdefault(self.ticket(it), [])
                self._futures[self.ticket(it)].set_result(
                    np.concatenate(parts) if parts else np.zeros((0, 0), dtype=np.float32))
        for it in group:
            self._post_end(self.ticket(it), self._futures[self.ticket(it)])
        async with self._progress:
            self._progress.notify_all()

    def _add(self, item: dict[str, Any], first: int, rows: np.ndarray) -> None:
        """Rows `first`.. of the item, kept and posted to the board."""
        self._parts.setdefault(self.ticket(item), []).append(rows)
        if self.board is not None:
            self.board.post.remote(self.ticket(item), first, rows)

    async def _work(self) -> None:
        try:
            if self.background:  # loaded when first asked: the 400-dialogue window run against the stand-in never
                await self._ask.wait()  # asks, and its niced load took the CPU the driver and endpoint share
            await self._load()
        except Exception as exc:  # every sample that needs embeddings fails with the reason, none hangs
            for key, fut in self._futures.items():
                if not fut.done():
                    fut.set_exception(RuntimeError(f"embedder failed to load: {type(exc).__name__}: {exc}"))
                    self._post_end(key, fut)
            return
        while True:
            if self.board is not None:  # the replicas' asks
                try:
                    self._asked.extend(await self.board.asked.remote())
                except Exception:  # the board is gone: its waiters fail on their own; the feed goes on in order
                    pass
            if not (group := self._next()):
                if not self.background or all(f.done() for f in self._futures.values()):
                    break
                self._ask.clear()
                await self._ask.wait()  # the next sample that asks
                continue
            await self._embed(group)

    async def close(self) -> None:
        if self._worker is not None and not self._worker.done():
            self._worker.cancel()
            try:
                await self._worker
            except (asyncio.CancelledError, Exception):
                pass
        for fut in self._futures.values():  # nobody awaits these any more; mark retrieved so asyncio stays quiet
            if fut.done() and not fut.cancelled():
                fut.exception()
        # The process stays for the next config of the job (`EmbedderProcess.shared`): a daemon, gone with this one.
        if self.board is not None:
            import ray

            ray.kill(self.board)


async def _rows(pending: Any) -> Any:
    """A sample's rows from the feed; the feed's failure as the `EmbeddingFailed` its solver reports."""
    try:
        return await pending
    except Exception as exc:
        raise EmbeddingFailed(str(exc)) from None


async def start_feed(texts: dict[str, list[str]], embedder_spec: str | None, in_process: bool,
                     marks: dict[str, float], *, ahead: bool) -> EmbedFeed:
    """The embedding feed of a run's side texts (sample id -> texts), started now beside the model's calls; with
    replicas (not `in_process`), its board. `ahead`: the solver waits on every sample's rows (`rag`)."""
    # In this process (an endpoint) a solver that consults embeddings only now and then (`window`) lets
    # the embedder yield the CPU to the loop that drives the calls; for a replica the embedder runs at full priority
    # (niced, it starved behind a CPU engine and held window dialogues back). A model in Ray actors may be a CPU
    # engine on these cores: the embedder then takes half of them.
    threads = None if in_process else max(1, (os.cpu_count() or 2) // 2)
    feed = EmbedFeed(embedder_spec or "minilm", [{"id": k, "texts": t} for k, t in texts.items()], marks,
                     background=in_process and not ahead, threads=threads)
    feed.start()
    await asyncio.sleep(0)  # lets the feed start its embedder process before anything else blocks this loop
    if not in_process:  # samples go to their replicas at once and await their rows there
        feed.attach_board(start_board())
    return feed
