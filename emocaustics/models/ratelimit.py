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
  single slot sends 20 requests a second). So a cut whose answer says a rate limit was reached (a
  `x-ratelimit-remaining-*` / `anthropic-ratelimit-*-remaining` header at 0) also sets a request rate: the successes of the last `RATE_WINDOW`
  seconds (what the server just let through) times `RATE_MARGIN`, a token bucket like `rpm`; each second of successes
  raises it by `RATE_PROBE` (probing for headroom), the next cut sets it from what got through again. The breaker's queue (models/breaker.py) applies
  the limit to the requests it lets in, and sends a request that got a 429 back through it (the client does not
  retry a 429 then) after the pause below.
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
        self.lowest = self.ceiling
        self._successes = 0
        self._since_cut = self.ceiling  # answers since the last cut (a new cut needs a window of them)
        self._window = 0
        self._cut_from = self.ceiling + 1  # the limit the last cut was made from
        self.learned: TokenBucket | None = None  # the rate the server let through, from the last cut (see above)
        self._ok_times: deque[float] = deque()  # when the successes of the last RATE_WINDOW seconds came
        self._first_ok: float | None = None
        self._probed = 0.0  # when the learned rate was last set or raised
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
                if self._since_cut >= self._window:  # requests sent before the last cut do not cut again
                    self.cuts += 1
                    self._window, self._since_cut, self._cut_from = self.limit, 0, self.limit
                    # over the last RATE_WINDOW seconds, or since the first success if that is more recent
                    span = min(RATE_WINDOW, now - self._first_ok) if self._first_ok is not None else RATE_WINDOW
                    let_through = len(self._ok_times) / max(span, 0.1) * 60 * RATE_MARGIN  # per minute
                    if let_through >= 1 and says_rate_limit(headers):
                        if self.learned is None:
                            self.learned = TokenBucket(let_through)
                        else:
                            self.learned.set_rate(let_through)
                        self._probed = now
                    new = max(1, self.limit // 2)
                else:
                    return
            elif status < 400:
                if self._first_ok is None:
                    self._first_ok = now
                self._ok_times.append(now)
                if self.learned is not None and now - self._probed >= RATE_WINDOW:  # probe for headroom above it
                    self._probed = now
                    self.learned.set_rate(self.learned.rate * 60 * RATE_PROBE)
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
