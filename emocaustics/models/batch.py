"""`batch: true` on an `openai:` / `anthropic:` model: independent calls go through the provider's batch API (half
price), the rest live.

    request (ChatRequest.live False) -> collected while the run is in flight; a chunk is sent when it is full (the
    provider's limits: models/batch_api.py, or the model's `batch_size`) or when no request came for `batch_quiet`
    seconds (`batch_max_wait` after its first request at the latest) -> persisted -> polled every `batch_poll`
    seconds, with a progress line -> each request's answer matched by custom_id (the request's cache key), whatever
    order the provider's output has.
    request with `live=True` (a chain's next step waits on it; a re-ask) -> the live path at once.

- **Resumable.** Before a chunk is sent its requests are written to `batches/<id>.jsonl` beside the response cache
  (the run's cache folder), and once the provider has the batch its id goes into `batches.jsonl` there. A killed job's
  rerun (or `--resume`) finds its pending batches there: a request whose key is in one waits for that batch instead of
  being sent again. A batch's answers go into the response cache as soon as it ends (those nobody waits for too), so
  a rerun pays for nothing twice. (A kill between the provider's answer to "create" and the line in batches.jsonl
  loses that batch's id: the requests are then sent again.)
- **Failures.** A failed line (an HTTP error, an answer that is not the JSON asked for), a request the batch expired
  or cancelled before answering, a batch that failed validation or could not be created, and a batch whose status
  could not be read `POLL_FAILURES` times in a row are all asked again live, through the live path (rate limit,
  dead-endpoint breaker and budget included); what fails there is that request's Completion with `error`, as live;
  a typed stop there (a dead endpoint, the budget) reaches every caller waiting on those requests.
- **Cost.** Batched answers are marked `Completion.batched` and billed at the batch price (`Price.cost(batch=True)`);
  with a `max_cost_usd`, each batched request reserves its worst case at the batch price before the chunk is sent.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from emocaustics.core.errors import Stop
from emocaustics.models.breaker import _print_line, answers_or_stop
from emocaustics.models.base import ChatRequest, Completion, ErrorKind, Layer, PerLoop
from emocaustics.models.batchstore import STORE, BatchStore
from emocaustics.models.cache import request_key
from emocaustics.models.usage import Usage

log = logging.getLogger(__name__)
QUIET = 2.0  # seconds without a new request before a partial chunk is sent
MAX_WAIT = 60.0  # ... and at the latest this long after its first request
POLL = 30.0  # seconds between status reads
REPORT_EVERY = 60.0  # a progress line at least this often while a batch runs (and at every change of status)
POLL_FAILURES = 10  # status reads failing in a row before the batch's requests are asked live


@dataclass
class _Entry:
    key: str
    request: ChatRequest
    future: asyncio.Future[Completion]
    line: bytes = b""


@dataclass
class _LoopState:
    """Per event loop: the requests waiting for answers, the chunk being collected, the batches being followed."""

    waiting: dict[str, _Entry] = field(default_factory=dict)
    queue: list[_Entry] = field(default_factory=list)
    queue_bytes: int = 0
    first: float = 0.0
    last: float = 0.0
    flusher: asyncio.Task[None] | None = None
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    resumed: dict[str, str] = field(default_factory=dict)  # key -> id of a pending batch of an earlier run
    pending: dict[str, dict[str, ChatRequest]] = field(default_factory=dict)  # batch id -> its requests
    followed: set[str] = field(default_factory=set)


class BatchLLM(Layer):
    """A layer in front of the live path of a remote model (breaker -> budget -> client): the provider's batch API."""

    def __init__(self, live: Any, api: Any, *, endpoint: str, store: BatchStore | None = None, cache: Any = None,
                 batch_size: int | None = None, quiet: float = QUIET, max_wait: float = MAX_WAIT,
                 poll: float = POLL, ledger: Any = None, price: Any = None) -> None:
        super().__init__(live)
        self.live, self.api, self.endpoint, self.store, self.cache = self.llm, api, endpoint, store, cache
        self.max_requests = min(int(batch_size or api.max_requests), api.max_requests)
        self.quiet, self.max_wait, self.poll = float(quiet), float(max_wait), float(poll)
        self.report = _print_line  # the breaker's progress lines
        self.ledger, self.price = ledger, price  # the job's max_cost_usd (models/budget.py), when set and priced
        self.usage = Usage()  # the calls answered through batches
        self.counts = {"batches": 0, "batches_resumed": 0, "batched_calls": 0, "batch_live_retries": 0}
        self._loops = PerLoop(self._new_state)

    # -- the caller's side ------------------------------------------------------------------------------------
    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        state: _LoopState = self._loops.here()
        waits = [self._live_one(r) if r.live else self._enqueue(state, r) for r in requests]
        return await answers_or_stop(waits)

    async def _live_one(self, request: ChatRequest) -> Completion:
        return (await self.live.generate([request]))[0]

    def _new_state(self) -> _LoopState:
        state = _LoopState()
        if self.store is not None:  # an earlier run's (or loop's) batches still running at the provider
            state.pending = self.store.pending(self.endpoint)
            state.resumed = {k: b for b, reqs in state.pending.items() for k in reqs}
        return state

    def _enqueue(self, state: _LoopState, request: ChatRequest) -> asyncio.Future[Completion]:
        key = request_key(self.cache_id, request)
        if key in state.waiting:  # the same request already waits (answers are keyed as the cache keys them)
            return state.waiting[key].future
        entry = _Entry(key, request, asyncio.get_running_loop().create_future())
        state.waiting[key] = entry
        batch_id = state.resumed.get(key)
        if batch_id is not None:  # sent by an earlier run: wait for that batch
            if batch_id not in state.followed:
                state.followed.add(batch_id)
                self.counts["batches_resumed"] += 1
                self.report(f"batch {batch_id} ({self.endpoint}): resumed from {STORE} "
                            f"({len(state.pending[batch_id])} requests)")
                self._spawn(state, self._follow(state, batch_id, state.pending[batch_id], {}))
            return entry.future
        entry.line = self.api.line(key, request)
        if state.queue and state.queue_bytes + len(entry.line) > self.api.max_bytes:
            self._flush(state)
        now = time.monotonic()
        if not state.queue:
            state.first = now
        state.queue.append(entry)
        state.queue_bytes += len(entry.line)
        state.last = now
        if len(state.queue) >= self.max_requests:
            self._flush(state)
        elif state.flusher is None or state.flusher.done():
            state.flusher = asyncio.get_running_loop().create_task(self._flush_when_quiet(state))
        return entry.future

    def _spawn(self, state: _LoopState, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        state.tasks.add(task)
        task.add_done_callback(state.tasks.discard)

    async def _flush_when_quiet(self, state: _LoopState) -> None:
        while state.queue:
            due = min(state.last + self.quiet, state.first + self.max_wait)
            now = time.monotonic()
            if now >= due:
                self._flush(state)
                return
            await asyncio.sleep(due - now)

    def _flush(self, state: _LoopState) -> None:
        chunk, state.queue, state.queue_bytes = state.queue, [], 0
        if chunk:
            self._spawn(state, self._submit(state, chunk))

    # -- one batch ----------------------------------------------------------------------------------------------
    async def _submit(self, state: _LoopState, chunk: list[_Entry]) -> None:
        holds: dict[str, float] = {}
        if self.ledger is not None and self.price is not None:
            from emocaustics.models.budget import reserve_tokens

            kept = []
            for e in chunk:
                hold = self.price.cost(reserve_tokens(e.request), int(e.request.sampling.max_tokens or 0), batch=True)
                if self.ledger.reserve(hold):
                    holds[e.key] = hold
                    kept.append(e)
                else:  # the typed stop (models/budget.py): the request's caller stops the run
                    self._resolve(state, e.key, self.ledger.stop())
            chunk = kept
            if not chunk:
                return
        local = uuid.uuid4().hex
        try:
            if self.store is not None:
                self.store.write_requests(local, [(e.key, e.request) for e in chunk])
            batch_id = await self.api.submit([e.line for e in chunk], note=self.endpoint)
        except Exception as exc:
            self.report(f"batch of {len(chunk)} requests to {self.endpoint} could not be created "
                        f"({type(exc).__name__}: {str(exc)[:200]}); asking them live")
            self._release(holds)
            await self._ask_live(state, [e.key for e in chunk])
            return
        if self.store is not None:
            self.store.submitted(self.endpoint, batch_id, local, len(chunk))
        self.counts["batches"] += 1
        self.report(f"batch {batch_id} ({self.endpoint}): {len(chunk)} requests submitted")
        await self._follow(state, batch_id, {e.key: e.request for e in chunk}, holds)

    async def _follow(self, state: _LoopState, batch_id: str, requests: dict[str, ChatRequest],
                      holds: dict[str, float]) -> None:
        """Poll until the batch ends, then answer its requests (failed ones live)."""
        t0, seen, said, failures = time.monotonic(), None, 0.0, 0
        status, ended = "unknown", False
        while not ended:
            try:
                st = await self.api.state(batch_id)
            except Exception as exc:
                failures += 1
                if failures >= POLL_FAILURES:
                    self.report(f"batch {batch_id} ({self.endpoint}): status unreadable {failures} times "
                                f"({type(exc).__name__}: {str(exc)[:160]}); asking its requests live")
                    break
            else:
                failures, status, ended, now = 0, st.status, st.ended, time.monotonic()
                if (st.status, st.done, st.failed) != seen or now - said >= REPORT_EVERY:
                    seen, said = (st.status, st.done, st.failed), now
                    self.report(f"batch {batch_id} ({self.endpoint}): {st.status}, {st.done + st.failed}/"
                                f"{st.total} done" + (f", {st.failed} failed" if st.failed else "")
                                + f", {now - t0:.0f} s")
            if not ended:
                await asyncio.sleep(self.poll)
        results = {}
        if ended:
            try:
                results = await self.api.results(batch_id)
            except Exception as exc:
                self.report(f"batch {batch_id} ({self.endpoint}): results unreadable ({type(exc).__name__}: "
                            f"{str(exc)[:160]}); asking its requests live")
        answered: list[tuple[str, Completion]] = []
        retry: list[str] = []
        for key, request in requests.items():
            answer = results.get(key)
            c = self.api.completion(answer, request) if answer is not None else None
            if c is not None and c.kind is not ErrorKind.ANSWER:
                c.batched = True
                answered.append((key, c))
            else:
                retry.append(key)
        if self.cache is not None:  # every answer, also those no request of this run waits for
            self.cache.put_many(self.cache_id, answered)
        self.usage.count([c for _, c in answered])
        self.counts["batched_calls"] += len(answered)
        if self.ledger is not None and self.price is not None:
            for key, c in answered:
                self.ledger.settle(holds.pop(key, 0.0), self.price.cost(c.prompt_tokens, c.generated_tokens,
                                                                        batch=True))
            self._release(holds)
        if self.store is not None and ended:  # else it stays pending: a rerun follows it again
            self.store.finished(self.endpoint, batch_id, status)
        for key, c in answered:
            self._resolve(state, key, c)
        waiting = [k for k in retry if k in state.waiting]
        if retry:
            self.report(f"batch {batch_id} ({self.endpoint}): {len(answered)} answered, {len(retry)} without an "
                        f"answer ({status}); asking the {len(waiting)} still wanted live")
        await self._ask_live(state, waiting)

    async def _ask_live(self, state: _LoopState, keys: list[str]) -> None:
        keys = [k for k in keys if k in state.waiting]
        self.counts["batch_live_retries"] += len(keys)
        if not keys:
            return
        # The waiting entry's own request (same key: same messages, schema and sampling) is the one asked.
        try:
            answers = await self.live.generate([state.waiting[k].request for k in keys])
        except Stop as stop:  # a dead endpoint or the budget: every caller waiting here gets it (none hangs)
            answers = [stop] * len(keys)  # type: ignore[list-item]
        for key, c in zip(keys, answers):
            self._resolve(state, key, c)

    def _resolve(self, state: _LoopState, key: str, answer: Completion | Stop) -> None:
        """The waiting caller's answer, or the typed stop it gets instead (a dead endpoint, the budget)."""
        entry = state.waiting.pop(key, None)
        state.resumed.pop(key, None)
        if entry is not None and not entry.future.done():
            entry.future.set_exception(answer) if isinstance(answer, Stop) else entry.future.set_result(answer)

    def _release(self, holds: dict[str, float]) -> None:
        if self.ledger is not None:
            for hold in holds.values():
                self.ledger.settle(hold, 0.0)
        holds.clear()

    # -- the rest of the LLM object ------------------------------------------------------------------------------
    async def aclose(self) -> None:
        state = self._loops.drop()
        if state is not None:
            for task in [*state.tasks, *([state.flusher] if state.flusher else [])]:
                task.cancel()
        await self.api.aclose()
        await self.live.aclose()

    async def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(await self.live.stats())
        for key, value in self.usage.as_dict().items():
            out[key] = out.get(key, 0) + value
        return {**out, **self.counts}
