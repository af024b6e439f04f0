"""The rate-limit area's decisions (issue 44, `make mutation AREA=ratelimit`): models/ratelimit.py (the token bucket,
parse_duration, the server's hints, says_rate_limit, AIMD, the learned rate, admit, limiter_for) and models/gate.py
(the priority gate), each pinned at its thresholds and boundaries without a server or a real clock: the module's
`time` and `asyncio.sleep` are replaced by a fake clock, so every test here runs in milliseconds (the real-time tests
of tests/models/test_models_ratelimit.py took 3-7 s each under every mutant)."""

from __future__ import annotations

import asyncio
import datetime as dt
import types

import pytest

from emocaustics.models import ratelimit
from emocaustics.models.base import ChatRequest, Sampling
from emocaustics.models.gate import PriorityGate
from emocaustics.models.ratelimit import (GROW_AFTER, MAX_PAUSE, PROBE_SLOWER, RATE_MARGIN, RATE_NEAR, RATE_PROBE,
                                          RATE_PROBE_FIRST, RATE_PROBE_NEAR, AdaptiveLimiter, TokenBucket,
                                          limiter_for, parse_duration, request_tokens, says_rate_limit, server_pause)

LIMIT_REACHED = {"x-ratelimit-remaining-requests": "0"}


class Clock:
    """The module's `time` (monotonic and wall clock) and, for `admit`, its `asyncio.sleep`: sleeping advances it."""

    def __init__(self, t: float = 100.0, wall: float = 1_800_000_000.0) -> None:
        self.t, self.wall, self.sleeps = t, wall, []

    def monotonic(self) -> float:
        return self.t

    def time(self) -> float:
        return self.wall

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        assert len(self.sleeps) < 100, "admit never lets the request in"
        self.t += seconds + 1e-9  # a hair more: a float clock at 100 s would not move by a wait of 1e-15 s


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(ratelimit, "time", types.SimpleNamespace(monotonic=c.monotonic, time=c.time))
    return c


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch, clock: Clock) -> Clock:
    monkeypatch.setattr(ratelimit, "asyncio", types.SimpleNamespace(sleep=clock.sleep,
                                                                    get_running_loop=asyncio.get_running_loop))
    return clock


def approx(x: float, abs: float = 1e-12) -> object:  # noqa: A002 (pytest.approx's name)
    return pytest.approx(x, rel=1e-9, abs=abs)


# ---- what a request counts against a tpm budget


def test_a_request_counts_its_prompt_bytes_over_4_plus_4_a_message_plus_max_tokens():
    msgs = ({"role": "user", "content": "héllo wörld!"}, {"role": "system"})  # 14 bytes (é, ö: 2 each); no content
    assert request_tokens(ChatRequest(messages=msgs, sampling=Sampling(max_tokens=100))) == 14 // 4 + 4 * 2 + 100
    assert request_tokens(ChatRequest(messages=msgs, sampling=Sampling(max_tokens=None))) == 11
    assert request_tokens(ChatRequest(messages=({"role": "user", "content": "x" * 7},),
                                      sampling=Sampling(max_tokens=0))) == 1 + 4


# ---- the token bucket


def test_a_bucket_holds_a_tenth_of_a_seconds_worth_at_least_1_and_starts_full(clock):
    b = TokenBucket(6000)  # 100 a second
    assert (b.rate, b.capacity, b.level, b.stamp) == (100.0, 10.0, 10.0, 100.0)
    small = TokenBucket(60)  # 1 a second: a tenth of it is below 1
    assert (small.rate, small.capacity, small.level) == (1.0, 1.0, 1.0)
    b.set_rate(600)  # lowered: the level is cut to the new capacity
    assert (b.rate, b.capacity, b.level) == (10.0, 1.0, 1.0)
    b.set_rate(12000)  # raised: the level is not filled
    assert (b.rate, b.capacity, b.level) == (200.0, 20.0, 1.0)


def test_a_bucket_gives_now_or_says_how_long_and_a_big_request_leaves_a_debt(clock):
    b = TokenBucket(6000)  # 100 a second, holds 10
    assert b.wait_for(4) == 0.0 and b.level == 6.0
    assert b.wait_for(7) == approx(0.01) and b.level == 6.0  # not taken
    clock.t += 0.01
    assert b.wait_for(7) == 0.0 and b.level == approx(0.0)
    assert b.wait_for(25) == approx(0.1)  # bigger than the bucket: waits for a full one ...
    clock.t += 0.1 + 1e-9
    assert b.wait_for(25) == 0.0 and b.level == approx(-15.0)  # ... and takes all 25: a debt
    clock.t += 0.05
    assert b.wait_for(1) == approx((1 + 10) / 100, abs=1e-9)  # refilled 5 of the 15
    clock.t += 1000
    assert b.wait_for(0) == 0.0 and b.level == 10.0 and b.stamp == clock.t  # a long idle fills it, never beyond


def test_a_bucket_gives_when_exactly_enough_is_there(clock):
    b = TokenBucket(6000)
    b.level = 3.0
    assert b.wait_for(3) == 0.0 and b.level == 0.0


# ---- parse_duration: the reset durations the providers send


@pytest.mark.parametrize("text,seconds", [
    ("1s", 1.0), ("20ms", 0.02), ("250ms", 0.25), ("6m0s", 360.0), ("1m30s", 90.0), ("1h2m3.5s", 3723.5),
    ("1.5s", 1.5), ("0.5m", 30.0), ("2h", 7200.0), ("3m", 180.0), ("1m500ms", 60.5), ("17ms", 0.017),
])
def test_parse_duration_reads_every_unit(text, seconds):
    assert parse_duration(text) == approx(seconds)


@pytest.mark.parametrize("text", ["", None, "soon", "10", "2026-01-01T00:00:05Z", "s", "1x"])
def test_parse_duration_without_a_number_and_unit_is_none(text):
    assert parse_duration(text) is None


# ---- what says "rate limit"


@pytest.mark.parametrize("name", ratelimit.LIMIT_REMAINING)
def test_each_remaining_header_at_0_says_a_rate_limit(name):
    assert says_rate_limit({name: "0"}) is True
    assert says_rate_limit({name: " 0 "}) is True
    assert says_rate_limit({"x-other": "5", name: "0"}) is True
    assert says_rate_limit({name: "1"}) is False
    assert says_rate_limit({name: "0.0"}) is False
    assert says_rate_limit({name: ""}) is False


def test_the_six_headers_are_openais_and_anthropics():
    assert ratelimit.LIMIT_REMAINING == (
        "x-ratelimit-remaining-requests", "x-ratelimit-remaining-tokens", "anthropic-ratelimit-requests-remaining",
        "anthropic-ratelimit-tokens-remaining", "anthropic-ratelimit-input-tokens-remaining",
        "anthropic-ratelimit-output-tokens-remaining")


def test_no_headers_or_no_remaining_header_says_no_rate_limit():
    assert says_rate_limit(None) is False
    assert says_rate_limit({}) is False
    assert says_rate_limit({"retry-after": "0", "x-ratelimit-remaining": "0"}) is False


# ---- the server's hints: how long to pause


def test_a_throttled_answer_pauses_for_its_retry_after():
    for status in (429, 503, 529):
        assert server_pause(status, {"retry-after-ms": "250"}) == 0.25
        assert server_pause(status, {"retry-after": "2"}) == 2.0
        # the server's wait wins over a remaining-0 header's reset
        assert server_pause(status, {"retry-after": "2", **LIMIT_REACHED, "x-ratelimit-reset-requests": "5s"}) == 2.0
    assert server_pause(200, {"retry-after": "2"}) is None  # only a throttled answer's Retry-After pauses
    assert server_pause(500, {"retry-after": "2"}) is None
    assert server_pause(429, None) is None
    assert server_pause(429, {}) is None


def test_a_remaining_0_header_pauses_until_its_reset(clock):
    assert server_pause(200, {**LIMIT_REACHED, "x-ratelimit-reset-requests": "1m2.5s"}) == 62.5
    assert server_pause(429, {**LIMIT_REACHED, "x-ratelimit-reset-requests": "250ms"}) == 0.25  # no Retry-After
    assert server_pause(200, {"x-ratelimit-remaining-requests": " 0 ", "x-ratelimit-reset-requests": "2s"}) == 2.0
    assert server_pause(200, {"x-ratelimit-remaining-requests": "3", "x-ratelimit-reset-requests": "1s"}) is None
    assert server_pause(200, {"x-ratelimit-reset-requests": "1s"}) is None
    # the tokens header is no request limit: no pause
    assert server_pause(200, {"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "1s"}) is None
    # Anthropic: an RFC 3339 time, less the wall clock
    at = dt.datetime.fromtimestamp(clock.wall + 5, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    anthropic = {"anthropic-ratelimit-requests-remaining": "0", "anthropic-ratelimit-requests-reset": at}
    assert server_pause(200, anthropic) == approx(5.0)
    assert server_pause(200, {**anthropic, "anthropic-ratelimit-requests-remaining": "1"}) is None
    assert server_pause(200, {**anthropic, "anthropic-ratelimit-requests-reset": "later"}) is None
    assert server_pause(200, {"anthropic-ratelimit-requests-remaining": "0"}) is None  # no reset given
    assert server_pause(200, {**anthropic, "anthropic-ratelimit-requests-reset": "3s"}) == 3.0
    # OpenAI's pair is read first; an unreadable reset there falls through to Anthropic's
    assert server_pause(200, {**LIMIT_REACHED, "x-ratelimit-reset-requests": "1s", **anthropic}) == 1.0
    assert server_pause(200, {**LIMIT_REACHED, "x-ratelimit-reset-requests": "later", **anthropic}) == approx(5.0)


# ---- AIMD: halving once per window, growing back


def test_a_fresh_limiter(clock):
    lim = AdaptiveLimiter(16)
    assert (lim.ceiling, lim.limit, lim.lowest, lim.cuts, lim.rate_cuts) == (16, 16, 16, 0, 0)
    assert (lim.rpm, lim.tpm, lim.requests, lim.tokens, lim.learned, lim.paused_until) == (
        None, None, None, None, None, 0.0)
    assert AdaptiveLimiter(0).ceiling == 1 == AdaptiveLimiter(0).limit
    assert AdaptiveLimiter(3.7).ceiling == 3
    budgets = AdaptiveLimiter(4, rpm=600, tpm=6000)
    assert (budgets.rpm, budgets.tpm, budgets.requests.rate, budgets.tokens.rate) == (600, 6000, 10.0, 100.0)
    assert AdaptiveLimiter(4, rpm=0, tpm=0).requests is None


def test_a_throttled_answer_halves_once_per_window_of_answers(clock):
    lim = AdaptiveLimiter(16)
    lim.answered(429)
    assert (lim.limit, lim.cuts, lim.lowest) == (8, 1, 8)
    for _ in range(15):  # the answers of the 16 that were in flight at the cut (the one that cut included)
        lim.answered(429)
    assert (lim.limit, lim.cuts) == (8, 1)
    lim.answered(429)  # a window of the limit the cut was made from has passed
    assert (lim.limit, lim.cuts, lim.lowest) == (4, 2, 4)
    for _ in range(7):  # successes count in the window too
        lim.answered(200)
    lim.answered(503)
    assert (lim.limit, lim.cuts) == (2, 3)
    for _ in range(3):
        lim.answered(200)
    lim.answered(529)
    assert (lim.limit, lim.cuts) == (1, 4)
    lim.answered(529)
    lim.answered(529)
    assert (lim.limit, lim.cuts, lim.lowest) == (1, 5, 1)  # floor 1: a cut at 1 is still counted


def test_odd_limits_halve_down_and_other_errors_do_not_cut(clock):
    lim = AdaptiveLimiter(7)
    for status in (500, 404, 400, 502, None):
        lim.answered(status, {"retry-after": "5"})
    assert (lim.limit, lim.cuts, lim.paused_until) == (7, 0, 0.0)
    lim.answered(429)
    assert lim.limit == 3
    lim2 = AdaptiveLimiter(3)
    lim2.answered(429)
    assert lim2.limit == 1


def test_status_none_counts_for_nothing(clock):
    lim = AdaptiveLimiter(16)
    lim.answered(429)
    for _ in range(15):
        lim.answered(None)  # no answer at all (a connection error): not in the window
    lim.answered(429)
    assert lim.cuts == 1


def test_growth_needs_a_window_of_successes_at_least_grow_after(clock):
    lim = AdaptiveLimiter(64)
    lim.answered(429)
    assert lim.limit == 32
    for _ in range(31):  # a window of the limit (32 > GROW_AFTER)
        lim.answered(200)
    assert lim.limit == 32
    lim.answered(200)
    assert lim.limit == 33
    for _ in range(32):
        lim.answered(200)
    assert lim.limit == 33
    lim.answered(200)
    assert lim.limit == 34
    lim = AdaptiveLimiter(8)
    lim.answered(429)
    assert lim.limit == 4
    for _ in range(GROW_AFTER - 1):
        lim.answered(200)
    assert lim.limit == 4
    lim.answered(399)  # any status below 400 is a success
    assert lim.limit == 5


def test_growth_probes_the_limit_last_cut_slower_and_stops_at_the_ceiling(clock):
    lim = AdaptiveLimiter(8)
    lim.answered(429)  # cut from 8
    for limit in (4, 5, 6):  # 5, 6, 7 are below where the 429s came: a plain window
        assert lim.limit == limit
        for _ in range(GROW_AFTER):
            lim.answered(200)
    assert lim.limit == 7
    for _ in range(GROW_AFTER * PROBE_SLOWER - 1):  # 8 is the limit that was cut
        lim.answered(200)
    assert lim.limit == 7
    lim.answered(200)
    assert lim.limit == 8
    for _ in range(1000):
        lim.answered(200)
    assert lim.limit == 8 and lim.lowest == 4


def test_errors_between_successes_neither_count_nor_reset_them_but_a_429_does(clock):
    lim = AdaptiveLimiter(8)
    lim.answered(429)
    for _ in range(GROW_AFTER - 1):
        lim.answered(200)
    lim.answered(500)
    lim.answered(400)
    assert lim.limit == 4
    lim.answered(200)
    assert lim.limit == 5
    lim = AdaptiveLimiter(8)
    lim.answered(429)  # to 4; the next 8 answers are of requests sent before it
    for _ in range(6):
        lim.answered(200)
    lim.answered(429)  # within the window of the cut: no cut, but the run of successes starts again
    assert (lim.limit, lim.cuts) == (4, 1)
    for _ in range(GROW_AFTER - 1):
        lim.answered(200)
    assert lim.limit == 4
    lim.answered(200)
    assert lim.limit == 5
    for _ in range(GROW_AFTER - 1):
        lim.answered(200)
    lim.answered(429, LIMIT_REACHED)  # a rate-limit answer resets the run too (and cuts nothing)
    lim.answered(200)
    assert (lim.limit, lim.cuts) == (5, 1)


# ---- the server's pause


def test_a_hint_pauses_new_requests_up_to_60_seconds(clock):
    lim = AdaptiveLimiter(4)
    lim.answered(429, {"retry-after": "2"})
    assert lim.paused_until == 102.0
    clock.t = 100.5
    lim.answered(429, {"retry-after": "1"})  # a shorter pause does not shorten it
    assert lim.paused_until == 102.0
    lim.answered(429, {"retry-after": "3"})
    assert lim.paused_until == 103.5
    lim.answered(429, {"retry-after": str(MAX_PAUSE)})
    assert lim.paused_until == 100.5 + MAX_PAUSE
    clock.t = 200.0
    for wait in ("60.5", "0", "-1"):  # beyond MAX_PAUSE, or none: not trusted
        lim.answered(429, {"retry-after": wait})
        assert lim.paused_until == 160.5
    lim.answered(200, {**LIMIT_REACHED, "x-ratelimit-reset-requests": "1s"})  # a success can say it too
    assert lim.paused_until == 201.0


# ---- the learned rate


def _successes(lim: AdaptiveLimiter, clock: Clock, times: list[float]) -> None:
    for t in times:
        clock.t = t
        lim.answered(200)


def test_a_rate_limit_answer_before_any_success_learns_nothing_and_cuts_nothing(clock):
    lim = AdaptiveLimiter(8)
    lim.answered(429, {**LIMIT_REACHED, "retry-after": "1"})
    assert (lim.learned, lim.rate_cuts, lim.limit, lim.cuts, lim.paused_until) == (None, 0, 8, 0, 101.0)


def test_the_first_window_without_a_wait_measures_over_a_window(clock):
    lim = AdaptiveLimiter(8)
    _successes(lim, clock, [100.0, 100.1, 100.2, 100.3, 100.4])
    clock.t = 100.5
    lim.answered(429, LIMIT_REACHED)
    assert lim.learned.rate * 60 == 5 / 1.0 * 60 * RATE_MARGIN  # 285 a minute
    assert (lim.rate_cuts, lim.limit, lim.cuts, lim.learned.level) == (1, 8, 0, 1.0)
    lim.answered(429, LIMIT_REACHED)  # the same measure again: kept, not counted
    assert lim.rate_cuts == 1
    clock.t = 100.55
    lim.answered(200)
    lim.answered(429, LIMIT_REACHED)  # a higher measure of the same burst replaces it
    assert lim.learned.rate * 60 == approx(6 * 60 * RATE_MARGIN) and lim.rate_cuts == 2


def test_the_first_window_measures_over_its_span_and_the_servers_wait(clock):
    lim = AdaptiveLimiter(8)
    _successes(lim, clock, [100.0, 100.1, 100.2, 100.3, 100.4])
    clock.t = 100.5
    lim.answered(429, {**LIMIT_REACHED, "retry-after-ms": "250"})
    assert lim.learned.rate == approx(5 / (0.5 + 0.25) * RATE_MARGIN)
    assert lim.paused_until == 100.75
    lim.answered(429, {**LIMIT_REACHED, "retry-after-ms": "900"})  # lower: the higher measure is kept
    assert lim.learned.rate == approx(5 / 0.75 * RATE_MARGIN) and lim.rate_cuts == 1
    lim.answered(429, {**LIMIT_REACHED, "retry-after-ms": "240"})  # a little higher (1.4 %): taken
    assert lim.learned.rate == approx(5 / 0.74 * RATE_MARGIN) and lim.rate_cuts == 2
    lim.answered(429, {**LIMIT_REACHED, "retry-after-ms": "100"})  # higher: taken
    assert lim.learned.rate == approx(5 / 0.6 * RATE_MARGIN) and lim.rate_cuts == 3


def test_the_first_window_spans_at_least_a_tenth_of_a_second(clock):
    lim = AdaptiveLimiter(8)
    _successes(lim, clock, [100.0, 100.02])
    clock.t = 100.04
    lim.answered(429, {**LIMIT_REACHED, "retry-after-ms": "10"})
    assert lim.learned.rate == approx(2 / 0.1 * RATE_MARGIN)


def test_a_learned_rate_below_1_a_minute_is_not_learned(clock):
    lim = AdaptiveLimiter(8)
    _successes(lim, clock, [100.0])
    lim.answered(429, {**LIMIT_REACHED, "retry-after": "58"})  # 1 over 58 s: 0.98 a minute after the margin
    assert lim.learned is None and lim.rate_cuts == 0
    lim.answered(429, {**LIMIT_REACHED, "retry-after": "56.99999999999999"})  # exactly 1 a minute
    assert lim.learned.rate * 60 == 1.0 and lim.rate_cuts == 1
    lim = AdaptiveLimiter(8)
    _successes(lim, clock, [100.0])
    lim.answered(429, {**LIMIT_REACHED, "retry-after": "50"})
    assert lim.learned.rate * 60 == approx(60 / 50 * RATE_MARGIN)


def test_a_full_window_measures_the_last_second_once_per_window_of_answers(clock):
    lim = AdaptiveLimiter(4)
    _successes(lim, clock, [100.0, 100.25, 100.5, 100.75, 101.0])
    lim.answered(429, {**LIMIT_REACHED, "retry-after-ms": "500"})  # a second of successes: the wait is not counted
    assert lim.learned.rate == approx(5 * RATE_MARGIN)  # the success of exactly a second ago is in the window
    assert (lim.rate_cuts, lim._cut_rate, lim.limit, lim.cuts) == (1, 300.0, 4, 0)
    clock.t = 101.1
    lim.answered(200)
    lim.answered(200)
    lim.answered(429, LIMIT_REACHED)  # 3 answers since the measure: the window of 4 is not over
    assert lim.rate_cuts == 1 and lim.learned.rate == approx(5 * RATE_MARGIN)
    lim.answered(429, LIMIT_REACHED)  # the 4th: measured again, lower (100.0 has left the window) and set
    assert lim.rate_cuts == 2 and lim.learned.rate == approx(6 * RATE_MARGIN)
    clock.t = 103.0
    lim.answered(429, LIMIT_REACHED)  # nothing got through in the last second: nothing learned
    lim.answered(429, LIMIT_REACHED)
    lim.answered(429, LIMIT_REACHED)
    lim.answered(429, LIMIT_REACHED)
    assert lim.rate_cuts == 2 and lim.learned.rate == approx(6 * RATE_MARGIN)


def test_a_full_window_can_lower_the_rate(clock):
    lim = AdaptiveLimiter(1)
    _successes(lim, clock, [100.0 + i / 10 for i in range(11)])  # 100.0 .. 101.0
    lim.answered(429, LIMIT_REACHED)
    assert lim.learned.rate == approx(11 * RATE_MARGIN)
    _successes(lim, clock, [102.5])
    lim.answered(429, LIMIT_REACHED)
    assert lim.learned.rate == approx(1 * RATE_MARGIN) and lim.rate_cuts == 2 and lim._cut_rate == 60.0


def _learned_at_10_a_second(lim: AdaptiveLimiter, clock: Clock) -> None:
    _successes(lim, clock, [100.0 + i / 10 for i in range(11)])  # 100.0 .. 101.0
    clock.t = 101.05  # the last second holds 100.1 .. 101.0
    lim.answered(429, LIMIT_REACHED)
    assert lim._cut_rate == 600.0 and lim.learned.rate * 60 == approx(570.0)


def test_probing_once_a_second_fast_up_to_what_got_through_then_slow_within_the_band(clock):
    lim = AdaptiveLimiter(32)
    _learned_at_10_a_second(lim, clock)
    _successes(lim, clock, [102.0499])  # not yet a second since
    assert lim.learned.rate * 60 == approx(570.0)
    _successes(lim, clock, [102.05])  # a second: fast
    assert lim.learned.rate * 60 == approx(570.0 * RATE_PROBE)
    _successes(lim, clock, [102.5])  # within the second of the last probe: nothing
    assert lim.learned.rate * 60 == approx(570.0 * RATE_PROBE)
    _successes(lim, clock, [103.05])  # not past what got through in one step
    assert lim.learned.rate * 60 == 600.0
    _successes(lim, clock, [104.05])  # at it: slow
    assert lim.learned.rate * 60 == approx(600.0 * RATE_PROBE_NEAR)
    lim.learned.set_rate(600.0 / RATE_NEAR)  # the top of the band: still slow
    _successes(lim, clock, [105.05])
    assert lim.learned.rate * 60 == approx(600.0 / RATE_NEAR * RATE_PROBE_NEAR)
    _successes(lim, clock, [106.05])  # past it: the limit is not there, fast again
    assert lim.learned.rate * 60 == approx(600.0 / RATE_NEAR * RATE_PROBE_NEAR * RATE_PROBE)
    assert lim.rate_cuts == 1  # probing is no cut


def test_a_first_window_guess_is_probed_fastest(clock):
    lim = AdaptiveLimiter(8)
    _successes(lim, clock, [100.0, 100.1, 100.2, 100.3, 100.4])
    clock.t = 100.5
    lim.answered(429, LIMIT_REACHED)
    assert lim._cut_rate == 0.0
    _successes(lim, clock, [101.5])
    assert lim.learned.rate * 60 == approx(285.0 * RATE_PROBE_FIRST)
    _successes(lim, clock, [102.5])
    assert lim.learned.rate * 60 == approx(285.0 * RATE_PROBE_FIRST ** 2)


# ---- admit: the pause, the learned rate, rpm and tpm


def _req(max_tokens: int = 50) -> ChatRequest:
    return ChatRequest(messages=({"role": "user", "content": "hi"},), sampling=Sampling(max_tokens=max_tokens))


def test_admit_lets_in_at_once_without_a_pause_or_budget(sleeps):
    sleeps.t = 0.5  # early in the clock: a fresh limiter is not paused
    lim = AdaptiveLimiter(4)
    for _ in range(3):
        asyncio.run(lim.admit(_req()))
    assert sleeps.sleeps == []


def test_admit_waits_out_the_servers_pause(sleeps):
    lim = AdaptiveLimiter(4)
    lim.paused_until = 102.0
    asyncio.run(lim.admit(_req()))
    assert sleeps.sleeps == [2.0]
    asyncio.run(lim.admit(_req()))  # over
    assert sleeps.sleeps == [2.0]


def test_admit_paces_by_the_learned_rate_once_the_pause_is_over(sleeps):
    lim = AdaptiveLimiter(4)
    lim.learned = TokenBucket(600)  # 10 a second, holds 1
    lim.paused_until = 100.0  # ends just now
    asyncio.run(lim.admit(_req()))
    assert sleeps.sleeps == [] and lim.learned.level == 0.0
    asyncio.run(lim.admit(_req()))
    assert sleeps.sleeps == [approx(0.1)] and lim.learned.level == approx(0.0)


def test_admit_paces_by_rpm_and_gives_the_learned_slot_back_while_it_waits(sleeps):
    lim = AdaptiveLimiter(4, rpm=60000)  # 1000 a second, holds 100
    lim.paused_until = 100.0
    asyncio.run(lim.admit(_req()))
    assert sleeps.sleeps == [] and lim.requests.level == 99.0
    lim.requests.level = 0.99
    lim.learned = TokenBucket(600)  # holds 1
    asyncio.run(lim.admit(_req()))
    # one short wait for the rpm budget; the learned slot taken before it was given back (else: a second wait)
    assert sleeps.sleeps == [approx(1e-5)]
    assert lim.learned.level == approx(0.0) and lim.requests.level == approx(0.0, abs=1e-5)


def test_admit_paces_by_tpm_and_gives_the_request_slot_back_while_it_waits(sleeps):
    lim = AdaptiveLimiter(4, rpm=600, tpm=60000)  # rpm: 10 a second, holds 1; tpm: 1000 a second, holds 100
    lim.paused_until = 100.0
    asyncio.run(lim.admit(_req(50)))  # 54 tokens: 0 + 4 + 50
    assert sleeps.sleeps == [] and lim.tokens.level == 46.0 and lim.requests.level == 0.0
    lim.requests.level = 1.0
    asyncio.run(lim.admit(_req(50)))
    assert sleeps.sleeps == [approx(0.008)]  # 8 tokens short at 1000 a second; the rpm slot was given back meanwhile
    assert lim.tokens.level == approx(0.0, abs=1e-5) and lim.requests.level == approx(0.0)
    lim2 = AdaptiveLimiter(4, tpm=60000)
    asyncio.run(lim2.admit(_req(150)))  # bigger than the bucket: a full one, then a debt
    assert lim2.tokens.level == -54.0
    asyncio.run(lim2.admit(_req(10)))
    assert sleeps.sleeps[-1] == approx((14 + 54) / 1000)


def test_admit_does_not_take_a_learned_slot_while_paused(sleeps):
    lim = AdaptiveLimiter(4)
    lim.learned = TokenBucket(6000)  # full: 10 slots
    lim.paused_until = 100.5  # under a second of pause left
    asyncio.run(lim.admit(_req()))
    assert sleeps.sleeps == [0.5] and lim.learned.level == 9.0


def test_admit_takes_no_tokens_while_it_waits_for_the_rpm_budget(sleeps):
    lim = AdaptiveLimiter(4, rpm=600, tpm=60000)
    lim.requests.level = 0.0  # 0.1 s to the next request slot; tokens aplenty
    asyncio.run(lim.admit(_req(50)))
    assert sleeps.sleeps == [approx(0.1)] and lim.tokens.level == approx(46.0)


def test_a_slot_given_back_is_exactly_one(sleeps):
    lim = AdaptiveLimiter(4, rpm=60000)  # requests: 1000 a second
    lim.learned = TokenBucket(6000)  # 100 a second, holds 10
    lim.learned.level = 5.0
    lim.requests.level = 1 - 1e-2  # 10 us short
    asyncio.run(lim.admit(_req()))
    assert sleeps.sleeps == [approx(1e-5)]
    assert lim.learned.level == approx(4.0, abs=1e-2)  # 5, less 1 taken after the wait (the first one given back)
    lim = AdaptiveLimiter(4, rpm=6000, tpm=60000)  # requests: 100 a second, holds 10; tokens: 1000 a second
    lim.requests.level = 5.0
    lim.tokens.level = 54 - 1e-2  # 54 tokens wanted: 10 us short
    asyncio.run(lim.admit(_req(50)))
    assert sleeps.sleeps[-1] == approx(1e-5)
    assert lim.requests.level == approx(4.0, abs=1e-2)


def test_the_rate_is_measured_over_rate_window_seconds(clock, monkeypatch):
    monkeypatch.setattr(ratelimit, "RATE_WINDOW", 2.0)
    lim = AdaptiveLimiter(4)
    _successes(lim, clock, [100.0 + i / 2 for i in range(7)])  # 100.0 .. 103.0, two a second
    lim.answered(429, LIMIT_REACHED)  # the last 2 s hold 5 (101.0 .. 103.0)
    assert lim._cut_rate == 5 / 2.0 * 60 and lim.learned.rate == approx(2.5 * RATE_MARGIN)
    _successes(lim, clock, [104.5])  # 1.5 s on: no probe within a window of 2 s
    assert lim.learned.rate == approx(2.5 * RATE_MARGIN)
    _successes(lim, clock, [105.0])
    assert lim.learned.rate == approx(2.5 * RATE_MARGIN * RATE_PROBE)


# ---- limiter_for: one per endpoint and process


def test_one_limiter_per_endpoint_until_its_settings_change(monkeypatch):
    monkeypatch.setattr(ratelimit, "_limiters", {})
    a = limiter_for("http://a/v1", 4)
    assert limiter_for("http://a/v1", 4) is a and limiter_for("http://a/v1", 4.0) is a
    assert limiter_for("http://b/v1", 4) is not a
    b = limiter_for("http://a/v1", 4, rpm=60)
    assert b is not a and (b.ceiling, b.rpm, b.tpm) == (4, 60, None) and b.requests.rate == 1.0
    assert limiter_for("http://a/v1", 4, rpm=60) is b
    c = limiter_for("http://a/v1", 4, rpm=60, tpm=600)
    assert c is not b and c.tpm == 600 and limiter_for("http://a/v1", 4, rpm=60, tpm=600) is c
    d = limiter_for("http://a/v1", 8, rpm=60, tpm=600)
    assert d is not c and d.ceiling == 8
    z = limiter_for("http://z/v1", 0)
    assert z.ceiling == 1 and limiter_for("http://z/v1", 1) is z
    assert ratelimit._limiters == {"http://a/v1": d, "http://b/v1": ratelimit._limiters["http://b/v1"],
                                   "http://z/v1": z}


# ---- the limit reaches the gates (one per event loop)


def test_the_gates_follow_the_limit_in_their_own_loop_and_from_other_threads(clock):
    lim = AdaptiveLimiter(16)
    lim.answered(429)  # 8 before any gate

    async def go() -> list[int]:
        gate = PriorityGate(99)
        lim.attach(gate)
        seen = [gate.limit]
        lim.answered(429, {"retry-after": "0"})
        for _ in range(15):  # the window of the cut to 8 (16 answers)
            lim.answered(429)
        seen.append(gate.limit)  # in the gate's loop: at once
        for _ in range(8):
            await asyncio.to_thread(lim.answered, 429)  # another thread: handed to the gate's loop
        await asyncio.sleep(0)
        seen.append(gate.limit)
        return seen

    assert asyncio.run(go()) == [8, 4, 2]


def test_a_gate_of_a_closed_loop_is_left_alone(clock):
    lim = AdaptiveLimiter(16)
    held = []

    async def go() -> None:
        gate = PriorityGate(99)
        held.append(gate)
        lim.attach(gate)

    asyncio.run(go())
    lim.answered(429)  # its loop is closed: not called, no error
    assert (lim.limit, held[0].limit, lim.lowest) == (8, 16, 8)


def test_the_gates_follow_growth_and_a_new_gate_starts_at_the_limit(clock):
    lim = AdaptiveLimiter(4)
    lim.answered(429)

    async def go() -> tuple[int, int]:
        gate = PriorityGate(1)
        lim.attach(gate)
        for _ in range(GROW_AFTER):
            lim.answered(200)
        other = PriorityGate(1)
        lim.attach(other)
        return gate.limit, other.limit

    assert asyncio.run(go()) == (3, 3)
    assert lim.lowest == 2


# ---- the priority gate


def test_a_gate_has_at_least_one_slot_and_lets_in_up_to_its_limit_at_once():
    async def go() -> None:
        assert PriorityGate(0).limit == 1 and PriorityGate(2.9).limit == 2
        gate = PriorityGate(2)
        await gate.acquire()
        await gate.acquire()
        third = asyncio.ensure_future(gate.acquire())
        await asyncio.sleep(0)
        assert not third.done() and gate.waiting == 1
        gate.release()
        await asyncio.sleep(0)
        assert third.done() and gate.waiting == 0
        gate.release()
        gate.release()
        await asyncio.wait_for(gate.acquire(), 1)  # released slots are free again
        await asyncio.wait_for(gate.acquire(), 1)
        fourth = asyncio.ensure_future(gate.acquire())
        await asyncio.sleep(0)
        assert not fourth.done()
        fourth.cancel()

    asyncio.run(go())


def test_waiters_enter_by_priority_then_arrival_and_the_default_priority_is_0():
    async def go() -> list[str]:
        gate = PriorityGate(1)
        await gate.acquire()
        order: list[str] = []

        async def acquire(name: str, *priority: int) -> None:
            await gate.acquire(*priority)
            order.append(name)

        async def slot(name: str, *priority: int) -> None:
            async with gate.slot(*priority):
                order.append(name)

        tasks = [asyncio.ensure_future(c) for c in (
            acquire("default", ), acquire("zero", 0), acquire("chain-3", -3), slot("slot-default"), slot("slot-0", 0),
            slot("slot-chain-5", -5), acquire("late", 1))]
        await asyncio.sleep(0)
        assert gate.waiting == 7
        for _ in range(7):  # each release lets the next in (a slot's own release on leaving does too)
            gate.release()
            for _ in range(3):
                await asyncio.sleep(0)
        await asyncio.gather(*tasks)
        return order

    order = asyncio.run(go())
    assert order == ["slot-chain-5", "chain-3", "default", "zero", "slot-default", "slot-0", "late"]


def test_a_raised_limit_lets_waiters_in_at_once_and_a_lowered_one_waits_for_releases():
    async def go() -> None:
        gate = PriorityGate(1)
        await gate.acquire()
        waiters = [asyncio.ensure_future(gate.acquire()) for _ in range(4)]
        await asyncio.sleep(0)
        gate.set_limit(2)
        await asyncio.sleep(0)
        assert [w.done() for w in waiters] == [True, False, False, False]
        gate.set_limit(4)
        await asyncio.sleep(0)
        assert [w.done() for w in waiters] == [True, True, True, False] and gate.limit == 4
        gate.set_limit(0)  # lowered to 1 (at least one): 4 hold, 3 releases pay it back, the 4th hands on
        assert gate.limit == 1
        for n in range(3):
            gate.release()
            await asyncio.sleep(0)
            assert not waiters[3].done(), n
        gate.release()
        await asyncio.sleep(0)
        assert waiters[3].done()
        gate.release()
        await asyncio.wait_for(gate.acquire(), 1)  # the one slot, free again
        fresh = PriorityGate(1)
        fresh.set_limit(3)  # raised with nobody waiting: three free slots
        for _ in range(3):
            await asyncio.wait_for(fresh.acquire(), 1)
        late = asyncio.ensure_future(fresh.acquire())
        await asyncio.sleep(0)
        assert not late.done()
        late.cancel()

    asyncio.run(go())


def test_a_cancelled_waiter_never_takes_a_slot():
    async def go() -> None:
        gate = PriorityGate(1)
        await gate.acquire()
        doomed = asyncio.ensure_future(gate.acquire(-10))
        patient = asyncio.ensure_future(gate.acquire(0))
        await asyncio.sleep(0)
        doomed.cancel()
        await asyncio.sleep(0)
        assert doomed.cancelled() and gate.waiting == 1
        gate.release()  # skips the cancelled waiter: the patient one is let in
        await asyncio.sleep(0)
        assert patient.done()
        gate.release()
        await asyncio.wait_for(gate.acquire(), 1)

    asyncio.run(go())


def test_a_waiter_cancelled_just_as_its_turn_came_hands_the_slot_on():
    async def go() -> None:
        gate = PriorityGate(1)
        await gate.acquire()
        granted = asyncio.ensure_future(gate.acquire(-1))
        nxt = asyncio.ensure_future(gate.acquire(0))
        await asyncio.sleep(0)
        gate.release()  # grants `granted` ...
        granted.cancel()  # ... which is cancelled before it ran again: its slot goes to the next
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert granted.cancelled() and nxt.done() and not nxt.cancelled()
        gate.release()
        await asyncio.wait_for(gate.acquire(), 1)  # and nothing was lost
        other = asyncio.ensure_future(gate.acquire())
        await asyncio.sleep(0)
        assert not other.done()
        other.cancel()

    asyncio.run(go())


def test_a_granted_then_cancelled_waiter_with_nobody_behind_frees_the_slot():
    async def go() -> None:
        gate = PriorityGate(1)
        await gate.acquire()
        granted = asyncio.ensure_future(gate.acquire())
        await asyncio.sleep(0)
        gate.release()
        granted.cancel()
        with pytest.raises(asyncio.CancelledError):
            await granted
        await asyncio.wait_for(gate.acquire(), 1)
        assert gate._free == 0

    asyncio.run(go())


def test_a_slot_is_held_for_its_block_and_released_on_leaving():
    async def go() -> None:
        gate = PriorityGate(1)
        async with gate.slot(3) as held:
            assert held is None and gate._free == 0
            waiter = asyncio.ensure_future(gate.acquire())
            await asyncio.sleep(0)
            assert not waiter.done()
        await asyncio.sleep(0)
        assert waiter.done()
        s = gate.slot(-2)
        assert (s.gate, s.priority) == (gate, -2)
        assert gate.slot().priority == 0

    asyncio.run(go())
