"""A circuit breaker in front of a remote endpoint: once the endpoint is dead, stop calling it.

A dead endpoint otherwise costs every sample the client's full retry schedule and a 400-sample job grinds for hours
(or, for a server that accepts requests and never answers, waits forever without a word). The endpoint is declared
dead, and every further request raises `EndpointDown` (core/errors.py: a typed stop) naming it, when:

- `limit` requests in a row end in a connection error or a timeout (each already retried by the client);
- `server_errors` requests in a row end in an HTTP 5xx (each already retried by the client): a server that answers
  500 to everything is as dead as one that refuses connections;
- nothing at all has come back from it for `stall` seconds while requests were in flight (a hang). "Something" is any
  HTTP response, retried ones included (the client reports each through `on_response`), so a rate-limited endpoint
  answering 429 is alive. The default is two client timeouts (at least 30 s): by then every attempt in flight has
  timed out once and its retry is silent too. The requests still waiting are abandoned with the same stop. The
  silence clock pauses while nothing is in flight and goes on when the next request is sent: requests that all time
  out together and are sent again do not start a new silence (they did, and the deadline slipped to the connection
  failure count).

Any other answer resets the counts. Failures are told apart by the kind their client gave them (models/base.py:
`ErrorKind`), never by their text. While requests wait with no answer, a line every `report_every` seconds says so
("waiting on ENDPOINT: 4 requests in flight, no answer for 45 s"). The stop goes up through the solver and the
solving plan, where no further sample starts (those in flight end at their next call); the job runner names it once
and exits with status 4. Finished samples are kept and `--resume` continues.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

from emocaustics.core.errors import EndpointDown, Stop
from emocaustics.models.base import ChatRequest, Completion, ErrorKind, Layer, PerLoop
from emocaustics.models.gate import PriorityGate
from emocaustics.models.ratelimit import AdaptiveLimiter

ENDPOINT_DOWN = "endpoint down"
DEFAULT_LIMIT = 5  # connection failures or timeouts in a row
DEFAULT_SERVER_ERRORS = 10  # requests in a row that ended in HTTP 5xx after their retries
STALL_TIMEOUTS = 2.0  # default stall deadline, in client timeouts ...
STALL_FLOOR = 30.0  # ... and never below this (a short client timeout does not make a short silence fatal)
REPORT_EVERY = 15.0  # seconds between "waiting on" lines (at most a third of the stall deadline)
# "Nobody answered". A throttled request (429) is requeued behind the adaptive limit. Overload (503/529) lowers the
# limit too, but is a server error here: an endpoint overloaded for good is dead.
NO_ANSWER = (ErrorKind.CONNECTION, ErrorKind.TIMEOUT)
REQUEUE_LIMIT = 20  # default `max_throttled`: times a request answered 429 goes back through the adaptive queue


def default_stall(timeout: float) -> float:
    return max(STALL_TIMEOUTS * timeout, STALL_FLOOR)


class _LoopState:
    """What the breaker keeps per event loop: its gate, the requests in flight there, and the loop's watchdog."""

    def __init__(self, concurrency: int) -> None:
        # Requests wait here, not inside the client, so that a request queued when the breaker trips is never sent.
        self.gate = PriorityGate(concurrency)
        self.running: set[asyncio.Future[Any]] = set()
        self.abandoned: set[asyncio.Future[Any]] = set()  # cancelled by the watchdog (not by the caller)
        self.watchdog: asyncio.Task[None] | None = None


class BreakerLLM(Layer):
    """A layer in front of a remote provider's client (models/base.py: name, stats and aclose are the client's)."""

    def __init__(self, llm: Any, endpoint: str, limit: int = DEFAULT_LIMIT, concurrency: int = 16, *,
                 server_errors: int = DEFAULT_SERVER_ERRORS, stall: float | None = None,
                 report: Callable[[str], None] | None = None, limiter: AdaptiveLimiter | None = None,
                 max_throttled: int = REQUEUE_LIMIT, client: Any = None) -> None:
        super().__init__(llm)
        self.endpoint = endpoint
        self.limit = max(1, int(limit))
        self.server_errors = max(1, int(server_errors))
        self.concurrency = max(1, int(concurrency))
        client = llm if client is None else client  # the endpoint's client, under the layers between (budget)
        self.stall = float(stall) if stall else default_stall(float(getattr(client, "timeout", None) or 60.0))
        self.report_every = min(REPORT_EVERY, self.stall / 3)
        self.report = report or _print_line
        self.max_throttled = max(0, int(max_throttled))  # requeues of one request answered 429
        self.limiter = limiter  # adaptive concurrency and rpm/tpm budgets (models/ratelimit.py), applied at the gate
        self.consecutive = 0  # connection failures in a row
        self.consecutive_5xx = 0
        self.tripped = False
        self.reason = ""
        self.inflight = 0
        self.heard = time.monotonic()  # the last answer of any kind (or when requests started waiting)
        self.idle_since: float | None = self.heard  # since when nothing is in flight (None: something is)
        self._reported = (self.heard, 0.0)  # (heard, silence) of the last "waiting on" line
        self._lock = threading.Lock()
        self._loops = PerLoop(self._new_state)
        if hasattr(client, "on_response"):
            client.on_response = self._answered

    def down_reason(self) -> str:
        return self.reason or f"{ENDPOINT_DOWN}: {self.endpoint}: stopped calling it"

    def _answered(self, status: int | None = None, headers: Any = None) -> None:
        """Any HTTP response from the endpoint (called by the client, retried attempts included)."""
        self.heard = time.monotonic()
        if self.limiter is not None:
            self.limiter.answered(status, headers)

    def _trip(self, reason: str) -> None:
        with self._lock:
            if not self.tripped:
                self.tripped, self.reason = True, f"{ENDPOINT_DOWN}: {self.endpoint} {reason}; stopped calling it"

    def _count(self, answers: list[Completion]) -> None:
        for c in answers:
            error = c.error or ""
            with self._lock:
                if c.kind in NO_ANSWER:
                    self.consecutive += 1
                    n, limit, what, key = self.consecutive, self.limit, "connection failures or timeouts", \
                        "max_connection_failures"
                elif c.kind is ErrorKind.SERVER:
                    self.heard = time.monotonic()
                    self.consecutive_5xx += 1
                    n, limit, what, key = self.consecutive_5xx, self.server_errors, "server errors (HTTP 5xx)", \
                        "max_server_errors"
                else:
                    self.heard = time.monotonic()
                    self.consecutive = self.consecutive_5xx = 0
                    continue
            if n >= limit:
                self._trip(f"failed {n} requests in a row with {what}, each after its retries (last: {error}; "
                           f"the model's {key} sets how many)")

    def _new_state(self) -> _LoopState:
        state = _LoopState(self.concurrency)
        if self.limiter is not None:
            self.limiter.attach(state.gate)
        return state

    async def _one(self, request: ChatRequest) -> Completion:
        answer = await self._attempt(request)
        requeued = 0
        # Throttled with an adaptive limit in front (the client does not retry a 429 then): back through the queue,
        # whose concurrency the answer lowered and which waits out the server's Retry-After (models/ratelimit.py).
        while self.limiter is not None and requeued < self.max_throttled and answer.kind is ErrorKind.THROTTLED:
            requeued += 1
            answer = await self._attempt(request)
        self._count([answer])
        if self.tripped and answer.error:  # this failure was the last straw: its sample stops with the others
            raise EndpointDown(self.down_reason())
        return answer

    async def _attempt(self, request: ChatRequest) -> Completion:
        state: _LoopState = self._loops.here()
        async with state.gate.slot(request.priority):  # the longest dependent chain first (models/gate.py)
            if self.tripped:
                raise EndpointDown(self.down_reason())
            if self.limiter is not None:  # the server's pause and the rpm/tpm budgets (not counted as silence)
                await self.limiter.admit(request)
            with self._lock:
                if self.inflight == 0 and self.idle_since is not None:
                    # Silence counts only while someone waits for an answer: the clock paused while nothing was in
                    # flight and goes on from where it stood (restarting it let requests that all timed out together,
                    # sent again, put the deadline off for good).
                    now = time.monotonic()
                    self.heard = now - max(0.0, self.idle_since - self.heard)
                    self.idle_since = None
                self.inflight += 1
            call = asyncio.ensure_future(self.llm.generate([request]))
            state.running.add(call)
            if state.watchdog is None or state.watchdog.done():
                state.watchdog = asyncio.get_running_loop().create_task(self._watch(state))
            try:
                answer = (await call)[0]
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if call not in state.abandoned or (current is not None and current.cancelling()):
                    raise  # the caller was cancelled, not (only) the request abandoned
                raise EndpointDown(self.down_reason()) from None
            finally:
                state.running.discard(call)
                state.abandoned.discard(call)
                with self._lock:
                    self.inflight -= 1
                    if self.inflight == 0:
                        self.idle_since = time.monotonic()
        return answer

    async def _watch(self, state: _LoopState) -> None:
        """While this loop has requests in flight: report silence, declare a stall, abandon requests once tripped."""
        tick = min(1.0, self.report_every / 2)
        due = time.monotonic() + tick
        while state.running:
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            now = time.monotonic()
            late, due = now - due, now + tick
            if late > tick:
                # This loop was busy with other work (a slow import, CPU-bound code) and could not read answers
                # meanwhile: that time is not the endpoint's silence.
                with self._lock:
                    self.heard = min(now, self.heard + late)
            if not self.tripped and self.inflight:
                silent = time.monotonic() - self.heard
                if silent >= self.stall:
                    self._trip(f"gave no answer for {silent:.0f} s with {self.inflight} requests in flight "
                               f"(stall deadline {self.stall:g} s: the model's stall_seconds)")
                elif silent >= self.report_every:
                    self._report_waiting(silent)
            if self.tripped:
                for call in list(state.running):
                    state.abandoned.add(call)
                    call.cancel()

    def _report_waiting(self, silent: float) -> None:
        with self._lock:
            heard, last = self._reported
            if heard == self.heard and silent - last < self.report_every:
                return
            self._reported = (self.heard, silent)
            inflight = self.inflight
        self.report(f"waiting on {self.endpoint}: {inflight} requests in flight, no answer for {silent:.0f} s "
                    f"(declared dead after {self.stall:g} s)")

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        return await answers_or_stop([self._one(r) for r in requests])

    async def aclose(self) -> None:
        """Close the client's connections of this event loop (see `OpenAIChatLLM.aclose`)."""
        state = self._loops.drop()
        if state is not None and state.watchdog is not None and not state.watchdog.done():
            state.watchdog.cancel()
        await self.llm.aclose()


def _print_line(line: str) -> None:
    """A line beside the progress lines (stdout); on a terminal it first clears the live progress line."""
    prefix = "\r\x1b[K" if sys.stdout.isatty() else ""
    print(prefix + line, flush=True)


async def answers_or_stop(calls: list[Awaitable[Completion]]) -> list[Completion]:
    """Every call's answer, in order; when one of them stops (a typed `Stop`), the stop, once the others have ended
    too (once stopped, they end at once: refused at the gate, or abandoned by the watchdog), so none is left running
    with its exception unread."""
    results = await asyncio.gather(*calls, return_exceptions=True)
    for r in results:
        if isinstance(r, Stop):
            raise r
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return results  # type: ignore[return-value]
