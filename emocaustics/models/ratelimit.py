"""Rate limits that adapt, per remote model: `rpm` / `tpm` budgets and AIMD concurrency.

- **Budgets.** `rpm` (requests per minute) and `tpm` (tokens per minute: prompt estimate plus `max_tokens`, as the
  providers count a request against it) are token buckets refilled continuously, holding a tenth of a second's
  worth (so a budget is spread evenly over the minute, never spent in a burst at its start, and any one second sees at
  most 1.1 times its share). A request larger than the bucket waits for a full one and leaves it in debt.
- **AIMD concurrency.** The model's concurrency starts at its `concurrency` (the ceiling). An answer that says "too
  many" (HTTP 429, or 503/529 "overloaded") halves it (floor 1) -- once per window: the answers of requests already in
  flight when it was cut do not cut it again --, and each window of successes in a row (as many as the current limit,
  at least `GROW_AFTER`; `PROBE_SLOWER` times as many to reach the limit the last cut was made from) raises it by
  one, back up to the ceiling.
- **A learned rate.** Concurrency alone cannot hold a per-second limit when answers are fast (at 50 ms an answer, a
  single slot sends 20 requests a second). So a 429 that says a rate limit was reached (a `x-ratelimit-remaining-*` /
  `anthropic-ratelimit-*-remaining` header at 0) sets a request rate instead of halving concurrency (halving it at each
  such answer starved the requests: ratelimit_bench held 0.72 of the allowed rate): the successes of the last
  `RATE_WINDOW` seconds (what the server just let through) times `RATE_MARGIN`, a token bucket like `rpm`; before
  successes have come for that long, what got through over their span plus the server's wait (the highest of the
  burst's answers). Each second of successes raises the rate: by `RATE_PROBE` up to what got through at the last such
  answer, then by `RATE_PROBE_NEAR` while within `RATE_NEAR` above it (where the limit probably is), by `RATE_PROBE`
  again past that, and by `RATE_PROBE_FIRST` above a first-window guess. The breaker's queue (models/breaker.py)
  applies the limit to the requests it lets in, and sends a request that got a 429 back through it (the client does
  not retry a 429 then) after the pause below.
- **Server hints.** `Retry-After` / `retry-after-ms` on such an answer, and `x-ratelimit-remaining-requests: 0` (or
  Anthropic's `anthropic-ratelimit-requests-remaining: 0`) with its reset time, pause new requests to the model until
  then; the request that got the answer is retried by the client after the same wait (models/http.py).

One `AdaptiveLimiter` per endpoint and process (`limiter_for`), shared by every config and LLM object that calls it.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
import weakref
from collections import deque
from typing import Any

from emocaustics.models.base import ChatRequest
from emocaustics.models.gate import PriorityGate

THROTTLED = frozenset({429, 503, 529})  # "too many requests" and "overloaded"
MAX_PAUSE = 60.0  # seconds; a longer hint is not trusted (as the client's own retry wait)
# Successes in a row that raise the limit by one: at least this many, else a window of the limit. Growth after a
# single success (limit 1) finds the provider's limit again at once and is rejected for it.
GROW_AFTER = 20
PROBE_SLOWER = 4  # ... and this many times as many to reach the limit that was last cut (where the 429s came)
RATE_WINDOW = 1.0  # seconds of successes a cut measures the server's rate over
RATE_MARGIN = 0.95  # the learned rate: that measure times this
RATE_PROBE = 1.05  # each RATE_WINDOW seconds of successes without such a cut raise the learned rate by this factor
# ... but only this much while it is within RATE_NEAR of the rate the last cut measured (either side): the limit is
# probably there, and probing past it at 5 % a second was rejected for it every few seconds (ratelimit_bench: 5.8 % of
# calls); above that band without a cut the limit was elsewhere, and probing is fast again
RATE_NEAR = 0.97
RATE_PROBE_FIRST = 1.25  # above a rate guessed in the first second, before any full second was measured
RATE_PROBE_NEAR = 1.005


def request_tokens(request: ChatRequest) -> int:
    """What a request counts against a tokens-per-minute budget: its prompt (about 4 bytes a token, as the providers'
    own estimators) plus its `max_tokens`."""
    prompt = sum(len(m.get("content", "").encode("utf-8")) for m in request.messages) // 4 + 4 * len(request.messages)
    return prompt + int(request.sampling.max_tokens or 0)


class TokenBucket:
    """`per_minute` units a minute, refilled continuously, holding at most a tenth of a second's worth (at least 1)."""

    def __init__(self, per_minute: float) -> None:
        self.level = 0.0
        self.set_rate(per_minute)
        self.level = self.capacity
        self.stamp = time.monotonic()

    def set_rate(self, per_minute: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate / 10)
        self.level = min(self.level, self.capacity)

    def _refill(self) -> None:
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    def wait_for(self, n: float) -> float:
        """Seconds until `n` units (at most the capacity) are there; 0: taken now."""
        self._refill()
        need = min(float(n), self.capacity)
        if self.level >= need:
            self.level -= n  # may go below 0: a request bigger than the bucket leaves a debt
            return 0.0
        return (need - self.level) / self.rate


def parse_duration(text: str) -> float | None:
    """OpenAI's reset durations ("1s", "20ms", "6m0s", "1h2m3.5s") in seconds."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", text or "")
    if not parts:
        return None
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(v) * scale[u] for v, u in parts)


def server_pause(status: int, headers: Any) -> float | None:
    """Seconds the server asks us to wait before the next request, if it asks."""
    if headers is None:
        return None
    if status in THROTTLED:
        from emocaustics.models.http import server_wait

        wait = server_wait(headers)
        if wait is not None:
            return wait
    for remaining, reset in (("x-ratelimit-remaining-requests", "x-ratelimit-reset-requests"),
                             ("anthropic-ratelimit-requests-remaining", "anthropic-ratelimit-requests-reset")):
        if (headers.get(remaining) or "").strip() == "0":
            value = headers.get(reset) or ""
            wait = parse_duration(value)
            if wait is None:  # Anthropic: an RFC 3339 time
                from datetime import datetime

                try:
                    wait = datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() - time.time()
                except ValueError:
                    wait = None
            if wait is not None:
                return wait
    return None


# Headers with which a provider says a 429 hit its request or token limit (OpenAI, Anthropic).
LIMIT_REMAINING = ("x-ratelimit-remaining-requests", "x-ratelimit-remaining-tokens",
                   "anthropic-ratelimit-requests-remaining", "anthropic-ratelimit-tokens-remaining",
                   "anthropic-ratelimit-input-tokens-remaining", "anthropic-ratelimit-output-tokens-remaining")


def says_rate_limit(headers: Any) -> bool:
    """Does the answer say a rate limit was reached (a `*-remaining` header at 0)? Only then is a rate learned: a 429
    for another reason (a quota, a fault) tells nothing of the rate, and learning from it would ratchet the rate down
    with every cut (an AER job against a stand-in with random 429s ran 4x slower)."""
    if headers is None:
        return False
    return any((headers.get(name) or "").strip() == "0" for name in LIMIT_REMAINING)


class AdaptiveLimiter:
    """The concurrency limit (AIMD), the rpm/tpm buckets and the pause of one endpoint (see the module docstring)."""

    def __init__(self, ceiling: int, *, rpm: float | None = None, tpm: float | None = None) -> None:
        self.ceiling = max(1, int(ceiling))
        self.limit = self.ceiling
        self.rpm, self.tpm = rpm, tpm
        self.requests = TokenBucket(rpm) if rpm else None
        self.tokens = TokenBucket(tpm) if tpm else None
        self.paused_until = 0.0
        self.cuts = 0  # times the limit was halved
        self.rate_cuts = 0  # times a rate-limit answer set the learned rate
        self.lowest = self.ceiling
        self._successes = 0
        self._since_cut = self.ceiling  # answers since the last cut (a new cut needs a window of them)
        self._window = 0
        self._cut_from = self.ceiling + 1  # the limit the last cut was made from
        self.learned: TokenBucket | None = None  # the rate the server let through, from the last cut (see above)
        self._ok_times: deque[float] = deque()  # when the successes of the last RATE_WINDOW seconds came
        self._first_ok: float | None = None
        self._probed = 0.0  # when the learned rate was last set or raised
        self._cut_rate = 0.0  # per minute: what got through when the last rate-limit cut came (before the margin)
        self._lock = threading.Lock()
        # the queues (one per event loop) whose limit follows this one's, with their loops
        self._gates: weakref.WeakKeyDictionary[PriorityGate, asyncio.AbstractEventLoop] = weakref.WeakKeyDictionary()

    def attach(self, gate: PriorityGate) -> None:
        """Called in the gate's event loop."""
        self._gates[gate] = asyncio.get_running_loop()
        gate.set_limit(self.limit)

    def _apply(self, limit: int) -> None:
        self.limit = limit
        self.lowest = min(self.lowest, limit)
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        for gate, loop in list(self._gates.items()):
            if loop is here:
                gate.set_limit(limit)
            elif not loop.is_closed():  # a gate is its loop's: changed there
                loop.call_soon_threadsafe(gate.set_limit, limit)

    def answered(self, status: int | None, headers: Any = None) -> None:
        """Every HTTP response of the endpoint (retried attempts included)."""
        if status is None:
            return
        pause = server_pause(status, headers)
        with self._lock:
            if pause is not None and 0 < pause <= MAX_PAUSE:
                self.paused_until = max(self.paused_until, time.monotonic() + pause)
            self._since_cut += 1
            now = time.monotonic()
            while self._ok_times and now - self._ok_times[0] > RATE_WINDOW:
                self._ok_times.popleft()
            if status in THROTTLED:
                self._successes = 0
                if says_rate_limit(headers):
                    # a rate limit: the learned rate answers it, not concurrency (halving concurrency at each such
                    # answer starved the requests: at 1 slot and 50 ms an answer, 20 a second at most; bench 0.72)
                    self._learn_rate(now, pause)
                    return
                if self._since_cut >= self._window:  # requests sent before the last cut do not cut again
                    self._window, self._since_cut = self.limit, 0
                    self.cuts += 1
                    self._cut_from = self.limit
                    new = max(1, self.limit // 2)
                else:
                    return
            elif status < 400:
                if self._first_ok is None:
                    self._first_ok = now
                self._ok_times.append(now)
                if self.learned is not None and now - self._probed >= RATE_WINDOW:  # probe for headroom above it
                    self._probed = now
                    rate = self.learned.rate * 60
                    band = (self._cut_rate, self._cut_rate / RATE_NEAR)  # past it: the limit is not there
                    if not self._cut_rate:  # a first-window guess (its burst's answers may still have been coming)
                        rate *= RATE_PROBE_FIRST
                    elif rate < band[0]:  # fast, but not past the band's floor in one step
                        rate = min(rate * RATE_PROBE, band[0])
                    else:
                        rate *= RATE_PROBE_NEAR if rate <= band[1] else RATE_PROBE
                    self.learned.set_rate(rate)
                self._successes += 1
                need = max(self.limit, GROW_AFTER) * (PROBE_SLOWER if self.limit + 1 >= self._cut_from else 1)
                if self._successes < need:
                    return
                if self.limit >= self.ceiling:
                    self._successes = 0
                    return
                self._successes = 0
                new = self.limit + 1
            else:
                return
        self._apply(new)

    def _learn_rate(self, now: float, pause: float | None) -> None:
        """A rate-limit answer: set the learned rate from what got through (under the lock)."""
        if self._first_ok is None:
            return  # nothing got through yet: the server's pause is all there is to go by
        got = len(self._ok_times)
        span = now - self._first_ok
        if span >= RATE_WINDOW:
            if self._since_cut < self._window:  # answers of requests sent before the last measure
                return
            self._window, self._since_cut = self.limit, 0
            rate = got / RATE_WINDOW * 60  # per minute
            self._cut_rate = rate
        else:
            # The first window: what got through since the first success, over that span and the wait the server
            # asks for (the window it counts in). The answers of the first burst come in any order, so the highest
            # of their measures is kept.
            rate = got / max(0.1, span + pause if pause is not None else RATE_WINDOW) * 60
            if self.learned is not None and rate * RATE_MARGIN <= self.learned.rate * 60:
                return
        if rate * RATE_MARGIN < 1:
            return
        self.rate_cuts += 1
        self._probed = now
        if self.learned is None:
            self.learned = TokenBucket(rate * RATE_MARGIN)
        else:
            self.learned.set_rate(rate * RATE_MARGIN)

    async def admit(self, request: ChatRequest) -> None:
        """Wait for the server's pause to pass and for the request's share of the rpm/tpm budgets."""
        while True:
            with self._lock:
                wait = self.paused_until - time.monotonic()
                if wait <= 0 and self.learned is not None:
                    wait = self.learned.wait_for(1)
                if wait <= 0:
                    wait = self.requests.wait_for(1) if self.requests is not None else 0.0
                    if wait > 0 and self.learned is not None:
                        self.learned.level += 1  # give the learned slot back: it waits for the rpm budget
                    if wait <= 0 and self.tokens is not None:
                        wait = self.tokens.wait_for(request_tokens(request))
                        if wait > 0 and self.requests is not None:
                            self.requests.level += 1  # give the request slot back: it waits for tokens
            if wait <= 0:
                return
            await asyncio.sleep(wait)


_limiters: dict[str, AdaptiveLimiter] = {}
_registry_lock = threading.Lock()


def limiter_for(endpoint: str, ceiling: int, *, rpm: float | None = None, tpm: float | None = None
                ) -> AdaptiveLimiter:
    """The process's limiter of an endpoint (made on first use; later settings replace the budgets)."""
    with _registry_lock:
        lim = _limiters.get(endpoint)
        if lim is None or (lim.ceiling, lim.rpm, lim.tpm) != (max(1, int(ceiling)), rpm, tpm):
            lim = _limiters[endpoint] = AdaptiveLimiter(ceiling, rpm=rpm, tpm=tpm)
        return lim
