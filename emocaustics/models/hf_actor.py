"""A Ray actor hosting one `transformers` model (the `hf:` backend), for users without vLLM.

It is a replica like `vllm_actor.VLLMEngineActor` (which it extends), so the same `ModelPool` places, retries and
restarts it, `run_one` runs a dialogue's state machine beside the model, and `stats` reports the same counters.
transformers has no continuous batching: the actor queues the requests of all concurrent calls and answers them in
padded `generate` calls of up to `max_batch` requests (`hf_generate.HFGenerator`), in a worker thread so that new
requests keep arriving while one batch runs. Requests with other sampling settings (temperature, top_p, seed) go into
other batches. GPU when the replica has one (the pool reserves one per replica when the cluster has GPUs), else CPU.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from emocaustics.models.base import ChatRequest, Completion
from emocaustics.models.vllm_actor import VLLMEngineActor


class HFModelActor(VLLMEngineActor):
    """Decorated with `ray.remote` by the pool; `engine_opts` are the spec's `hf_generate.HF_KEYS` options."""

    def __init__(self, model: str, engine_opts: dict[str, Any], name: str, cache_id: str | None = None) -> None:
        super().__init__(model, engine_opts, name, cache_id)
        self._queue: deque[tuple[ChatRequest, asyncio.Future[Completion]]] = deque()
        self._wake: asyncio.Event | None = None
        self._batcher: asyncio.Task[None] | None = None
        self.batches = 0  # generate calls made, and the requests they answered: stats()["mean_batch"]
        self.batched_requests = 0

    async def _load(self) -> None:
        from emocaustics.models.hf_generate import HFGenerator, HFOptions

        options = HFOptions.from_options(self.engine_opts)
        self._engine = await asyncio.to_thread(HFGenerator, self.model, options)
        self._max_len = self._engine.max_len
        self._wake = asyncio.Event()
        self._batcher = asyncio.ensure_future(self._batches())

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        if self._engine is None:
            await self.start()
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in requests]
        self._queue.extend(zip(requests, futures))
        assert self._wake is not None
        self._wake.set()
        return await self._counted(len(requests), asyncio.gather(*futures))

    def _take(self) -> list[tuple[ChatRequest, asyncio.Future[Completion]]]:
        """The next batch: the oldest waiting request and the next ones with its sampling settings, up to max_batch;
        requests whose caller is gone (cancelled) are dropped."""
        from emocaustics.models.hf_generate import sampling_key

        size = int(self._engine.options.max_batch)
        key = sampling_key(self._queue[0][0])
        batch, rest = [], deque()
        while self._queue:
            request, future = self._queue.popleft()
            if future.done():
                continue
            if len(batch) < size and sampling_key(request) == key:
                batch.append((request, future))
            else:
                rest.append((request, future))
        self._queue = rest
        return batch

    async def _batches(self) -> None:
        """The actor's one batching loop: wait for requests, give concurrent callers `batch_wait` seconds to add
        theirs, then answer the queue batch by batch."""
        assert self._wake is not None
        while True:
            await self._wake.wait()
            self._wake.clear()
            wait = float(self._engine.options.batch_wait)
            if wait > 0:
                await asyncio.sleep(wait)
            while self._queue:
                batch = self._take()
                if not batch:
                    continue
                try:
                    answers = await asyncio.to_thread(self._engine.generate, [r for r, _ in batch])
                except Exception as exc:  # out of memory, a model bug: this batch fails, the replica goes on
                    answers = [Completion(text="", error=f"generate failed: {type(exc).__name__}: {exc}")] * len(batch)
                self.batches += 1
                self.batched_requests += len(batch)
                for (_, future), answer in zip(batch, answers):
                    if not future.done():
                        future.set_result(answer)

    async def stats(self) -> dict[str, Any]:
        out = await super().stats()
        out.update(batches=self.batches, mean_batch=self.batched_requests / self.batches if self.batches else None)
        return out

    async def shutdown(self) -> None:
        if self._batcher is not None:
            self._batcher.cancel()
            self._batcher = None
        for _, future in self._queue:
            if not future.done():
                future.set_result(Completion(text="", error="replica shut down"))
        self._queue.clear()
        self._engine = None
