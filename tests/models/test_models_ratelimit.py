"""Rate limits that adapt (issue 32, models/ratelimit.py): a 429 halves a model's concurrency (floor 1), successes
raise it back, the server's Retry-After pauses new requests, and `rpm` keeps a job under a provider's limit. Against
the OpenAI stand-in with a rate limit (tests/fakes/openai_chat.py `max_rps`: 429 with Retry-After above N requests
in any second), a real HTTP server."""

from __future__ import annotations

import asyncio

from fakes.openai_chat import FakeOpenAIServer, Faults

from emocaustics.models.base import ChatRequest
from emocaustics.models.factory import make_llm
from emocaustics.models.spec import parse_llm_spec
from emocaustics.models.gate import PriorityGate
from emocaustics.models.ratelimit import (GROW_AFTER, PROBE_SLOWER, RATE_MARGIN, RATE_NEAR, RATE_PROBE,
                                          RATE_PROBE_FIRST, RATE_PROBE_NEAR, AdaptiveLimiter, parse_duration, server_pause)


def _requests(n: int) -> list[ChatRequest]:
    return [ChatRequest(messages=({"role": "user", "content": f"question {i}"},)) for i in range(n)]


def test_aimd_halves_once_per_window_and_grows_back():
    lim = AdaptiveLimiter(16)
    lim.answered(429)
    assert lim.limit == 8
    for _ in range(7):  # answers of requests that were in flight at the cut: no second cut
        lim.answered(429)
    assert lim.limit == 8 and lim.cuts == 1
    for _ in range(GROW_AFTER - 1):
        lim.answered(200)
    assert lim.limit == 8
    lim.answered(200)  # a window of successes: one more
    assert lim.limit == 9
    lim.answered(429)  # the window since the cut has passed: the next 429 cuts again
    assert lim.limit == 4 and lim.cuts == 2
    for _ in range(100):
        lim.answered(429)
    assert lim.limit == 1 == lim.lowest  # floor 1
    for _ in range(10_000):
        lim.answered(200)
    assert lim.limit == 16  # never above the ceiling


def test_growth_probes_the_limit_that_was_cut_slower():
    lim = AdaptiveLimiter(4)
    lim.answered(429)
    assert lim.limit == 2
    for _ in range(GROW_AFTER):
        lim.answered(200)
    assert lim.limit == 3
    for _ in range(GROW_AFTER * PROBE_SLOWER - 1):  # 4 is where the 429s came from
        lim.answered(200)
    assert lim.limit == 3
    lim.answered(200)
    assert lim.limit == 4


def test_a_cut_learns_the_rate_the_server_let_through_and_probes_above_it(monkeypatch):
    from emocaustics.models import ratelimit

    clock = [0.0]
    monkeypatch.setattr(ratelimit.time, "monotonic", lambda: clock[0])

    def ten_a_second(lim: AdaptiveLimiter) -> None:  # ten successes over the last second
        for i in range(10):
            clock[0] = 100.0 + i / 10
            lim.answered(200)
        clock[0] = 101.0

    lim = AdaptiveLimiter(32)
    assert lim.learned is None  # no rate limit until the server says so
    ten_a_second(lim)
    lim.answered(429)  # a 429 that does not say a rate limit was reached (a fault, a quota): no rate learned
    assert lim.learned is None and lim.limit == 16
    lim = AdaptiveLimiter(32)
    ten_a_second(lim)
    lim.answered(429, {"x-ratelimit-remaining-requests": "0"})  # "too many": 10 a second got through
    assert lim.learned is not None and abs(lim.learned.rate - 10 * RATE_MARGIN) < 1e-9
    lim.answered(200)  # a success within the second: the rate stays
    assert abs(lim.learned.rate - 10 * RATE_MARGIN) < 1e-9
    clock[0] = 102.0
    lim.answered(200)  # a second of successes since: probe a little higher
    assert abs(lim.learned.rate - 10 * RATE_MARGIN * RATE_PROBE) < 1e-9


LIMIT_REACHED = {"x-ratelimit-remaining-requests": "0"}


def _clocked(monkeypatch) -> list[float]:
    from emocaustics.models import ratelimit

    clock = [100.0]
    monkeypatch.setattr(ratelimit.time, "monotonic", lambda: clock[0])
    return clock


def _successes(lim: AdaptiveLimiter, clock: list[float], per_second: int, seconds: float) -> None:
    for _ in range(int(per_second * seconds)):
        clock[0] += 1 / per_second
        lim.answered(200)


def _limit_reached(lim: AdaptiveLimiter, clock: list[float], per_second: int) -> None:
    clock[0] += 0.5 / per_second  # between two successes: the last second holds exactly `per_second` of them
    lim.answered(429, LIMIT_REACHED)


def test_the_first_window_learns_over_the_servers_wait_and_rate_limits_never_cut_concurrency(monkeypatch):
    clock = _clocked(monkeypatch)
    lim = AdaptiveLimiter(32)
    _successes(lim, clock, 20, 0.5)  # 10 successes from 100.05 to 100.5: no full second yet
    clock[0] += 0.025
    lim.answered(429, {**LIMIT_REACHED, "retry-after-ms": "500"})  # the window has room again in 0.5 s
    first = 10 / (0.475 + 0.5) * RATE_MARGIN  # what got through, over its span and the wait
    assert abs(lim.learned.rate - first) < 1e-6
    assert lim.limit == 32 and lim.cuts == 0 and lim.rate_cuts == 1  # the rate paces: concurrency is left alone
    lim.answered(429, {**LIMIT_REACHED, "retry-after-ms": "900"})  # a lower measure of the same burst: kept higher
    assert abs(lim.learned.rate - first) < 1e-6 and lim.rate_cuts == 1
    clock[0] += 1.0
    lim.answered(200)  # a second on: a first-window guess is probed fast (some of its burst may have been unanswered)
    assert abs(lim.learned.rate - first * RATE_PROBE_FIRST) < 1e-6
    _successes(lim, clock, 20, 2.0)
    before = lim.limit
    _limit_reached(lim, clock, 20)  # a full second measured: 20 got through
    assert abs(lim.learned.rate - 20 * RATE_MARGIN) < 1e-6 and lim.rate_cuts == 2
    assert lim.limit == before and lim.cuts == 0
    _successes(lim, clock, 20, 2.0)  # (answers in flight at a measure do not count against the next)
    rate = lim.learned.rate
    lim.answered(429)  # a 429 that says no rate limit (a fault): concurrency is halved, the rate stays
    assert lim.limit == before // 2 and lim.cuts == 1 and lim.learned.rate == rate


def test_probing_is_fast_up_to_what_got_through_and_slow_just_above_it(monkeypatch):
    clock = _clocked(monkeypatch)
    lim = AdaptiveLimiter(32)
    _successes(lim, clock, 100, 2.0)
    _limit_reached(lim, clock, 100)  # 100 a second got through
    rates = []
    for _ in range(3):  # each second of successes probes once
        clock[0] += 1.0
        lim.answered(200)
        rates.append(lim.learned.rate)
    assert abs(rates[0] - 100 * RATE_MARGIN * RATE_PROBE) < 1e-6  # below what got through: fast
    assert abs(rates[1] - 100) < 1e-6  # ... but not past it in one step
    assert abs(rates[2] - 100 * RATE_PROBE_NEAR) < 1e-6  # just above it, where the limit probably is: slow
    lim.learned.set_rate(60 * 100 / RATE_NEAR * 1.001)  # past the band without a 429: the limit is elsewhere
    clock[0] += 1.0
    lim.answered(200)
    assert abs(lim.learned.rate - 100 / RATE_NEAR * 1.001 * RATE_PROBE) < 1e-6


def test_server_hints_pause_new_requests():
    assert server_pause(429, {"retry-after-ms": "250"}) == 0.25
    assert server_pause(429, {"retry-after": "2"}) == 2.0
    assert server_pause(200, {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1m2.5s"}) == 62.5
    assert server_pause(200, {"x-ratelimit-remaining-requests": "3", "x-ratelimit-reset-requests": "1s"}) is None
    assert parse_duration("20ms") == 0.02


def test_a_lowered_gate_lets_nobody_in_until_holders_drop_below_it():
    async def go() -> list[str]:
        gate, log = PriorityGate(4), []
        for _ in range(4):
            await gate.acquire()
        gate.set_limit(2)
        waiter = asyncio.ensure_future(gate.acquire())
        await asyncio.sleep(0)
        gate.release()
        gate.release()  # 2 holders left: at the limit, still nobody in
        await asyncio.sleep(0)
        log.append(f"after 2 releases: {waiter.done()}")
        gate.release()
        await asyncio.sleep(0)
        log.append(f"after 3 releases: {waiter.done()}")
        gate.set_limit(8)
        return log

    assert asyncio.run(go()) == ["after 2 releases: False", "after 3 releases: True"]


def _run(url: str, n: int, **opts) -> tuple[list, object]:
    query = "&".join(f"{k}={v}" for k, v in opts.items())  # the endpoint's limits, typed where the spec is parsed
    llm = make_llm(parse_llm_spec(f"openai:fake@{url}" + (f"?{query}" if query else "")))

    async def go() -> list:
        try:
            return await llm.generate(_requests(n))
        finally:
            await llm.aclose()

    return asyncio.run(go()), llm.limiter


def test_a_rate_limit_is_learned_and_every_call_succeeds():
    with FakeOpenAIServer(Faults(max_rps=20, latency=0.05)) as server:
        answers, limiter = _run(server.base_url, 120, concurrency=32, max_retries=6)
        assert [a.error for a in answers if a.error] == []
        # a rate was learned, not above the server's 20 a second (how much of it is held: ratelimit_bench)
        assert limiter.rate_cuts >= 1 and limiter.learned.rate <= 21
        assert server.counts["ok"] == 120
        rejected = server.counts["429-limit"]
        # Without adaptation every one of the 32 in flight hits the limit again on each retry: many more 429s.
        assert rejected < 120, rejected


def test_an_rpm_budget_under_the_providers_limit_gets_no_429():
    with FakeOpenAIServer(Faults(max_rps=20)) as server:
        answers, _ = _run(server.base_url, 40, concurrency=32, rpm=900)  # 15 a second, spread over each second
        assert [a.error for a in answers if a.error] == []
        assert server.counts["429-limit"] == 0 and server.counts["ok"] == 40


def test_a_request_answered_429_for_good_fails_after_max_throttled_requeues():
    # Every request is throttled: the client returns the 429 at once and the queue sends it again, max_throttled times.
    with FakeOpenAIServer(Faults(rate_429=1.0, retry_after_ms=5)) as server:
        answers, _ = _run(server.base_url, 2, concurrency=4, max_throttled=3)
        assert [a.error[:8] for a in answers] == ["HTTP 429", "HTTP 429"]
        assert server.counts["429"] == 2 * (3 + 1), server.counts
