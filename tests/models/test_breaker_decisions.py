"""The breaker area's decisions (issue 44, `make mutation AREA=breaker`), pinned fast and without Ray: when
models/breaker.py declares an endpoint dead (the connection-failure and 5xx counts and what resets them, the stall
deadline's arithmetic, the silence clock that pauses while nothing is in flight), the lines a user reads while it
waits, and how models/comeback.py waits for a restarted model service's replica.

Time is virtual: each test runs its coroutine on an event loop whose clock is a number that jumps to the next timer
when nothing else is ready (`_run`), and the modules' `time.monotonic` reads the same number (`clock` fixture), so a
30 s stall deadline is checked to the tick in milliseconds. Ray's named-actor lookup is a stand-in (`named_actor`).
"""

from __future__ import annotations

import asyncio
import io
import selectors
import sys
import time as _real_time
from collections.abc import Callable
from types import SimpleNamespace

import pytest

from emocaustics.core.errors import EndpointDown, ServiceGone
from emocaustics.models import breaker, comeback
from emocaustics.models.base import ChatRequest, Completion, ErrorKind, ModelBase
from emocaustics.models.breaker import BreakerLLM, answers_or_stop, default_stall
from emocaustics.models.gate import PriorityGate

T0 = 1000.0  # the virtual clock's start (not 0: a mutant's `now + x` for `now - x` must not coincide)
HANG = "hang"


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def monotonic(self) -> float:
        return self.now

    @property
    def t(self) -> float:
        """Seconds since the test began."""
        return self.now - T0


class _Selector(selectors.SelectSelector):
    """Never blocks: a wait for the next timer moves the virtual clock there instead."""

    def __init__(self, clock: Clock) -> None:
        super().__init__()
        self.clock, self.began = clock, _real_time.perf_counter()

    def select(self, timeout: float | None = None):
        if _real_time.perf_counter() - self.began > 5.0:
            raise RuntimeError("the loop spun for 5 s of real time without getting anywhere")
        ready = super().select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:
            raise RuntimeError("nothing left to wait for: every task waits forever")
        self.clock.now += timeout
        if self.clock.t > 10_000:
            raise RuntimeError("past 10,000 virtual seconds")
        return []


class _Loop(asyncio.SelectorEventLoop):
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        super().__init__(_Selector(clock))

    def time(self) -> float:
        return self.clock.now


def _run(clock: Clock, coro):
    """`asyncio.run(coro)` on a loop that keeps the virtual time."""
    with asyncio.Runner(loop_factory=lambda: _Loop(clock)) as runner:
        return runner.run(coro)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(breaker, "time", c)
    monkeypatch.setattr(comeback, "time", c)
    return c


def req(key: str, priority: int = 0) -> ChatRequest:
    return ChatRequest(messages=({"role": "user", "content": key},), priority=priority)


class Endpoint(ModelBase):
    """A remote client's stand-in: `plan[key]` is a list of steps, one per call of that request (the last one
    repeats): (seconds, error or None), or HANG (no answer until cancelled)."""

    name = "fake"

    def __init__(self, clock: Clock, plan: dict[str, list], **attrs) -> None:
        self.clock, self.plan, self.calls = clock, plan, 0
        self.sent: list[tuple[float, str]] = []  # (when, key) of every call
        self.closed = 0
        self.__dict__.update(attrs)

    async def generate(self, requests):
        (request,) = requests
        key = request.messages[0]["content"]
        self.calls += 1
        if self.calls > 50:
            raise RuntimeError("more than 50 calls: a request is sent again and again")
        steps = self.plan[key]
        step = steps[min(sum(1 for _, k in self.sent if k == key), len(steps) - 1)]
        self.sent.append((self.clock.t, key))
        if step == HANG:
            await asyncio.get_running_loop().create_future()
        seconds, error = step
        await asyncio.sleep(seconds)
        return [failure(error) if error else Completion("answer")]

    async def aclose(self) -> None:
        self.closed += 1


def _ask(b: BreakerLLM, clock: Clock, schedule: list[tuple[float, str]]):
    """Each (at, key): one request sent at that virtual second; returns each one's (end time, Completion or the
    exception it raised), in schedule order."""

    async def one(at: float, key: str):
        await asyncio.sleep(at - clock.t)
        try:
            result = (await b.generate([req(key)]))[0]
        except Exception as e:  # noqa: BLE001 - the stop is the answer under test
            result = e
        return clock.t, result

    async def go():
        return await asyncio.gather(*(one(at, key) for at, key in schedule))

    return _run(clock, go())


def _lines(clock: Clock) -> tuple[list[tuple[float, str]], Callable[[str], None]]:
    """The lines the breaker reports, each with when (virtual seconds), and the `report` that records them."""
    lines: list[tuple[float, str]] = []
    return lines, lambda line: lines.append((clock.t, line))


# ---- the defaults and the settings' edges


def test_the_default_stall_deadline_is_two_client_timeouts_and_never_below_30_s():
    assert default_stall(10) == 30.0
    assert default_stall(15) == 30.0
    assert default_stall(20) == 40.0
    assert default_stall(60) == 120.0


def test_defaults_of_a_breaker(clock):
    llm = Endpoint(clock, {})
    b = BreakerLLM(llm, "api.example")
    assert (b.limit, b.server_errors, b.concurrency, b.max_throttled) == (5, 10, 16, 20)
    assert b.llm is llm and b.endpoint == "api.example" and b.limiter is None
    assert b.stall == 120.0  # a client without a timeout: 60 s assumed, twice that
    assert b.report_every == 15.0
    assert b.report is breaker._print_line
    assert (b.consecutive, b.consecutive_5xx, b.reason, b.inflight) == (0, 0, "", 0)
    assert b.tripped is False
    assert b.down_reason() == "endpoint down: api.example: stopped calling it"


def test_settings_are_read_as_numbers_and_kept_at_least_one(clock):
    b = BreakerLLM(Endpoint(clock, {}), "e", limit=0, concurrency=0, server_errors=0, max_throttled=-1)
    assert (b.limit, b.server_errors, b.concurrency, b.max_throttled) == (1, 1, 1, 0)
    b = BreakerLLM(Endpoint(clock, {}), "e", limit="3", concurrency="4", server_errors="6", max_throttled="2",
                   stall="7.5")
    assert (b.limit, b.server_errors, b.concurrency, b.max_throttled, b.stall) == (3, 6, 4, 2, 7.5)
    assert b.report_every == 2.5  # a third of the stall deadline, under 15 s


def test_the_stall_deadline_follows_the_clients_timeout_unless_set(clock):
    assert BreakerLLM(Endpoint(clock, {}, timeout=25), "e").stall == 50.0
    assert BreakerLLM(Endpoint(clock, {}, timeout=5), "e").stall == 30.0
    assert BreakerLLM(Endpoint(clock, {}, timeout=25), "e", stall=0).stall == 50.0  # 0: not set
    assert BreakerLLM(Endpoint(clock, {}, timeout=25), "e", stall=9).stall == 9.0
    b = BreakerLLM(Endpoint(clock, {}), "e", stall=30)
    assert b.report_every == 10.0


def test_the_breaker_hears_the_client_it_is_given_or_the_model_it_wraps(clock):
    lines, report = _lines(clock)
    llm = Endpoint(clock, {}, on_response=None)
    b = BreakerLLM(llm, "e", report=report)
    assert llm.on_response == b._answered and b.report is report
    below = SimpleNamespace(on_response=None)
    llm = Endpoint(clock, {}, on_response=None)
    b = BreakerLLM(llm, "e", client=below)
    assert below.on_response == b._answered and llm.on_response is None


def test_any_response_is_a_sign_of_life_and_goes_to_the_rate_limit(clock):
    limiter = FakeLimiter()
    b = BreakerLLM(Endpoint(clock, {}), "e", limiter=limiter)
    clock.now += 7
    b._answered(429, {"retry-after": "2"})
    assert b.heard == T0 + 7 and limiter.answers == [(429, {"retry-after": "2"})]
    b = BreakerLLM(Endpoint(clock, {}), "e")  # no rate limit
    clock.now += 1
    b._answered(500)
    assert b.heard == T0 + 8


# ---- which failures count toward which limit, which reset it


CONN = "connection error: refused"
TIMEOUT = "timeout after 60 s"
E500 = "HTTP 500 Internal Server Error"
# The kind each of these failures has, as its client sets it (the breaker reads the kind, never the text).
KINDS = {CONN: ErrorKind.CONNECTION, TIMEOUT: ErrorKind.TIMEOUT, E500: ErrorKind.SERVER,
         "HTTP 503 overloaded": ErrorKind.SERVER, "HTTP 529": ErrorKind.SERVER, "HTTP 429 slow down": ErrorKind.THROTTLED,
         "HTTP 429 too many": ErrorKind.THROTTLED, "HTTP 400 no": ErrorKind.BAD_REQUEST}


def failure(error: str | tuple[str, ErrorKind] | None) -> Completion:
    """A failed Completion: `error` with its kind from KINDS, or (text, kind); None: an answer."""
    text, kind = error if isinstance(error, tuple) else (error, KINDS.get(error or ""))
    return Completion("" if text is not None else "answer", error=text, kind=kind)


def _count(b: BreakerLLM, *errors: str | tuple[str, ErrorKind] | None) -> None:
    b._count([failure(e) for e in errors])


def test_connection_failures_in_a_row_trip_at_exactly_the_limit(clock):
    b = BreakerLLM(Endpoint(clock, {}), "api.example", limit=3)
    _count(b, CONN, TIMEOUT)
    assert not b.tripped and b.consecutive == 2
    _count(b, CONN)
    assert b.tripped and b.consecutive == 3
    assert b.reason == ("endpoint down: api.example failed 3 requests in a row with connection failures or timeouts, "
                        "each after its retries (last: connection error: refused; the model's max_connection_failures "
                        "sets how many); stopped calling it")
    assert b.down_reason() == b.reason


def test_server_errors_in_a_row_trip_at_exactly_their_limit_and_are_an_answer(clock):
    b = BreakerLLM(Endpoint(clock, {}), "api.example", limit=2, server_errors=3)
    clock.now += 4
    _count(b, E500, "HTTP 503 overloaded")
    assert not b.tripped and b.consecutive_5xx == 2 and b.consecutive == 0
    assert b.heard == T0 + 4  # the server answered
    _count(b, "HTTP 529")
    assert b.tripped
    assert b.reason == ("endpoint down: api.example failed 3 requests in a row with server errors (HTTP 5xx), each "
                        "after its retries (last: HTTP 529; the model's max_server_errors sets how many); stopped "
                        "calling it")


def test_an_answer_resets_both_counts_and_a_5xx_does_not_reset_the_connection_count(clock):
    b = BreakerLLM(Endpoint(clock, {}), "e", limit=3, server_errors=3)
    _count(b, CONN, CONN, E500, E500)
    clock.now += 2
    _count(b, None)  # an answer
    assert (b.consecutive, b.consecutive_5xx, b.heard, b.tripped) == (0, 0, T0 + 2, False)
    _count(b, CONN, CONN, E500, E500, "HTTP 429 slow down", CONN, CONN)  # a 429 is an answer too
    assert (b.consecutive, b.consecutive_5xx, b.tripped) == (2, 0, False)
    _count(b, E500, CONN)
    assert b.tripped and "failed 3 requests in a row with connection failures" in b.reason


def test_only_the_kinds_named_count_whatever_the_text_says(clock):
    b = BreakerLLM(Endpoint(clock, {}), "e", limit=1, server_errors=1)
    _count(b, ("HTTP 400 bad request", ErrorKind.BAD_REQUEST), ("HTTP 500: connection error", ErrorKind.AUTH),
           ("timeout", ErrorKind.CONTEXT_LENGTH), ("HTTP 503", ErrorKind.ANSWER), ("connection error", ErrorKind.OTHER),
           ("HTTP 502", ErrorKind.THROTTLED), ("", None))
    assert not b.tripped and (b.consecutive, b.consecutive_5xx) == (0, 0)
    _count(b, ("provider said no", ErrorKind.SERVER))
    assert b.tripped and "server errors (HTTP 5xx)" in b.reason and "(last: provider said no;" in b.reason
    b = BreakerLLM(Endpoint(clock, {}), "e", limit=2)
    _count(b, ("odd", ErrorKind.TIMEOUT), ("odder", ErrorKind.CONNECTION))
    assert b.tripped and "connection failures or timeouts" in b.reason


def test_answers_after_an_answer_in_one_batch_are_counted_too(clock):
    b = BreakerLLM(Endpoint(clock, {}), "e", limit=2)
    _count(b, None, CONN, CONN)
    assert b.tripped


def test_the_first_reason_stays(clock):
    b = BreakerLLM(Endpoint(clock, {}), "e")
    b._trip("first")
    b._trip("second")
    assert b.tripped is True and b.reason == "endpoint down: e first; stopped calling it"


# ---- requests through the breaker: the last straw, refused requests, the gate, the rate limit's requeue


class FakeLimiter:
    def __init__(self) -> None:
        self.gates: list = []
        self.admitted: list[str] = []
        self.answers: list = []

    def attach(self, gate) -> None:
        self.gates.append(gate)

    async def admit(self, request) -> None:
        self.admitted.append(request.messages[0]["content"])

    def answered(self, status, headers=None) -> None:
        self.answers.append((status, headers))


def test_a_failure_is_returned_until_the_last_straw_which_stops_and_later_requests_are_never_sent(clock):
    llm = Endpoint(clock, {"a": [(1, CONN)], "b": [(1, None)]})
    b = BreakerLLM(llm, "api.example", limit=2)
    ends = _ask(b, clock, [(0, "a"), (5, "a"), (10, "b")])
    assert ends[0][0] == 1 and isinstance(ends[0][1], Completion) and ends[0][1].error == CONN
    down = ("endpoint down: api.example failed 2 requests in a row with connection failures or timeouts, each after "
            "its retries (last: connection error: refused; the model's max_connection_failures sets how many); "
            "stopped calling it")
    assert ends[1][0] == 6 and type(ends[1][1]) is EndpointDown and str(ends[1][1]) == down
    assert ends[2][0] == 10 and type(ends[2][1]) is EndpointDown and str(ends[2][1]) == down
    assert llm.sent == [(0, "a"), (5, "a")]


def test_a_request_waits_for_a_free_slot_the_longest_chain_first(clock):
    llm = Endpoint(clock, {k: [(2, None)] for k in "abc"})
    b = BreakerLLM(llm, "e", concurrency=1)

    async def go():
        first = asyncio.ensure_future(b.generate([req("a")]))
        await asyncio.sleep(0.5)
        rest = [asyncio.ensure_future(b.generate([req("b", priority=5)]))]
        await asyncio.sleep(0)
        rest.append(asyncio.ensure_future(b.generate([req("c", priority=-1)])))
        return [r[0].text for r in await asyncio.gather(first, *rest)]

    assert _run(clock, go()) == ["answer"] * 3
    assert llm.sent == [(0, "a"), (2, "c"), (4, "b")]


def test_the_generate_of_several_requests_answers_each_in_order(clock):
    llm = Endpoint(clock, {"a": [(3, None)], "b": [(1, "HTTP 400 no")]})
    b = BreakerLLM(llm, "e")
    out = _run(clock, b.generate([req("a"), req("b")]))
    assert [(c.text, c.error) for c in out] == [("answer", None), ("", "HTTP 400 no")]
    assert clock.t == 3


def test_a_throttled_request_goes_back_through_the_rate_limit_up_to_max_throttled_times(clock):
    limiter = FakeLimiter()
    llm = Endpoint(clock, {"t": [(1, "HTTP 429 too many")], "ok": [(1, "HTTP 429 too many"), (1, None)]})
    b = BreakerLLM(llm, "e", limiter=limiter, max_throttled=2, concurrency=3, limit=1, server_errors=1)
    ends = _ask(b, clock, [(0, "t"), (10, "ok")])
    assert ends[0][0] == 3 and ends[0][1].error == "HTTP 429 too many"  # three tries, then its answer
    assert ends[1][0] == 12 and ends[1][1].error is None
    assert limiter.admitted == ["t", "t", "t", "ok", "ok"] and not b.tripped
    assert len(limiter.gates) == 1 and isinstance(limiter.gates[0], PriorityGate) and limiter.gates[0].limit == 3


def test_without_a_rate_limit_a_429_is_the_answer(clock):
    llm = Endpoint(clock, {"t": [(1, "HTTP 429 too many"), (1, None)]})
    b = BreakerLLM(llm, "e", max_throttled=5)
    ends = _ask(b, clock, [(0, "t")])
    assert ends[0][0] == 1 and ends[0][1].error == "HTTP 429 too many" and llm.sent == [(0, "t")]


def test_answers_or_stop_answers_in_order_and_prefers_the_stop_to_another_exception():
    async def answer(text, after=0.0):
        await asyncio.sleep(after)
        return text

    async def fail(exc, after=0.0):
        await asyncio.sleep(after)
        raise exc

    assert _run(Clock(), answers_or_stop([answer("a", 2), answer("b")])) == ["a", "b"]
    with pytest.raises(EndpointDown, match="down"):
        _run(Clock(), answers_or_stop([fail(ValueError("boom")), fail(EndpointDown("down"), 2)]))
    with pytest.raises(ValueError, match="boom"):
        _run(Clock(), answers_or_stop([answer("a"), fail(ValueError("boom"))]))


# ---- the stall deadline, the silence clock and the "waiting on" lines


def test_a_silent_endpoint_is_dead_at_its_stall_deadline_and_says_so_meanwhile(clock):
    lines, report = _lines(clock)
    llm = Endpoint(clock, {"h": [HANG]})
    b = BreakerLLM(llm, "api.example", stall=30, report=report)
    ends = _ask(b, clock, [(0, "h"), (0, "h"), (31, "h")])
    down = ("endpoint down: api.example gave no answer for 30 s with 2 requests in flight (stall deadline 30 s: the "
            "model's stall_seconds); stopped calling it")
    assert [(t, type(e), str(e)) for t, e in ends] == [(30, EndpointDown, down)] * 2 + [(31, EndpointDown, down)]
    assert lines == [(10, "waiting on api.example: 2 requests in flight, no answer for 10 s (declared dead after 30 s)"),
                     (20, "waiting on api.example: 2 requests in flight, no answer for 20 s (declared dead after 30 s)")]
    assert llm.sent == [(0, "h"), (0, "h")]
    state = next(iter(b._loops.values()))
    assert not state.running and not state.abandoned  # nothing kept once the requests ended
    assert b.inflight == 0


def test_the_lines_come_every_third_of_a_short_deadline(clock):
    lines, report = _lines(clock)
    b = BreakerLLM(Endpoint(clock, {"h": [HANG]}), "e", stall=7, report=report)
    ends = _ask(b, clock, [(0, "h")])
    assert ends[0][0] == 7 and "gave no answer for 7 s with 1 requests in flight (stall deadline 7 s" in str(ends[0][1])
    assert lines == [(3, "waiting on e: 1 requests in flight, no answer for 3 s (declared dead after 7 s)"),
                     (6, "waiting on e: 1 requests in flight, no answer for 6 s (declared dead after 7 s)")]


def test_a_deadline_of_a_few_seconds_is_checked_every_half_second(clock):
    lines, report = _lines(clock)
    b = BreakerLLM(Endpoint(clock, {"h": [HANG]}), "e", stall=1.5, report=report)
    ends = _ask(b, clock, [(0, "h")])
    assert ends[0][0] == 1.5 and "gave no answer for 2 s with 1 requests in flight (stall deadline 1.5 s" in str(ends[0][1])
    assert [t for t, _ in lines] == [0.5, 1.0]


def test_a_response_heard_meanwhile_restarts_the_silence_and_its_lines(clock):
    lines, report = _lines(clock)
    llm = Endpoint(clock, {"h": [HANG]}, on_response=None)
    b = BreakerLLM(llm, "e", stall=30, report=report)

    async def go():
        calls = asyncio.ensure_future(b.generate([req("h")]))
        await asyncio.sleep(12.5)
        llm.on_response(429)  # a retried attempt was answered (the client reports it)
        try:
            await calls
        except EndpointDown as e:
            return clock.t, str(e)

    # checked every second: 30.5 s of silence at 43
    assert _run(clock, go()) == (43, "endpoint down: e gave no answer for 30 s with 1 requests in flight (stall "
                                       "deadline 30 s: the model's stall_seconds); stopped calling it")
    assert [(t, line.split(", ")[1]) for t, line in lines] == [
        (10, "no answer for 10 s (declared dead after 30 s)"), (23, "no answer for 10 s (declared dead after 30 s)"),
        (33, "no answer for 20 s (declared dead after 30 s)")]


def test_the_silence_clock_pauses_while_nothing_is_in_flight(clock):
    # Answered at 2 (heard); sent at 2, times out at 8 (6 s of silence); idle until 50; sent at 50 and never answered:
    # 4 more seconds of silence make the 10 s deadline, at 54 (not at 60, nor at 52 counting the idle time).
    lines, report = _lines(clock)
    llm = Endpoint(clock, {"ok": [(2, None)], "t": [(6, TIMEOUT)], "h": [HANG]})
    b = BreakerLLM(llm, "e", stall=10, limit=9, report=report)
    ends = _ask(b, clock, [(0, "ok"), (2, "t"), (50, "h")])
    assert [t for t, _ in ends] == [2, 8, 54]
    assert "gave no answer for 10 s with 1 requests in flight" in str(ends[2][1])
    assert [(t, line.split(", ")[1]) for t, line in lines] == [
        (6, "no answer for 4 s (declared dead after 10 s)"), (51, "no answer for 7 s (declared dead after 10 s)")]


def test_idle_time_before_the_first_request_is_not_silence(clock):
    b = BreakerLLM(Endpoint(clock, {"ok": [(3, None)], "h": [HANG]}), "e", stall=10, report=lambda line: None)
    ends = _ask(b, clock, [(100, "ok"), (200, "h")])
    assert [t for t, _ in ends] == [103, 210]


def test_in_flight_means_idle_since_is_unset(clock):
    b = BreakerLLM(Endpoint(clock, {"a": [(5, None)]}), "e")

    async def go():
        calls = asyncio.ensure_future(b.generate([req("a"), req("a")]))
        await asyncio.sleep(1)
        seen = (b.inflight, b.idle_since)
        await calls
        return seen

    assert _run(clock, go()) == (2, None)
    assert (b.inflight, b.idle_since) == (0, T0 + 5)


def test_a_loop_busy_for_more_than_a_tick_is_not_the_endpoints_silence(clock):
    # Two requests hang from 0 (stall 10, a check every second). At 3.25 the loop is busy for 1.75 s: the check due
    # at 4 comes at 5, exactly one tick late, which counts. At 6.25 it is busy for 3 s: the check due at 7 comes at
    # 9.25, 2.25 s late, which is taken off the silence; the deadline comes at 12.25, not at 10.
    b = BreakerLLM(Endpoint(clock, {"h": [HANG]}), "e", stall=10, report=lambda line: None)

    async def busy(at: float, seconds: float):
        await asyncio.sleep(at - clock.t)
        clock.now += seconds  # CPU-bound work: the loop reads nothing meanwhile

    async def go():
        calls = asyncio.gather(b.generate([req("h")]), b.generate([req("h")]), return_exceptions=True)
        await asyncio.gather(busy(3.25, 1.75), busy(6.25, 3.0))
        ends = await calls
        return clock.t, [str(e) for e in ends]

    t, ends = _run(clock, go())
    assert t == 12.25 and all("gave no answer for 10 s with 2 requests in flight" in e for e in ends), (t, ends)


def test_a_breaker_tripped_by_failures_abandons_the_requests_in_flight_without_another_line(clock):
    lines, report = _lines(clock)
    llm = Endpoint(clock, {"h": [HANG], "f": [(19.5, CONN)]})
    b = BreakerLLM(llm, "e", stall=30, limit=1, report=report)
    ends = _ask(b, clock, [(0, "h"), (0, "f")])
    assert [t for t, _ in ends] == [20, 19.5] and all(type(e) is EndpointDown for _, e in ends)
    assert all("failed 1 requests in a row with connection failures" in str(e) for _, e in ends)
    assert [t for t, _ in lines] == [10]


def test_the_watchdog_ends_when_nothing_is_in_flight_and_aclose_leaves_no_task_behind(clock):
    llm = Endpoint(clock, {"a": [(2.5, None)]})
    b = BreakerLLM(llm, "e")

    async def go():
        await b.generate([req("a")])
        others = asyncio.all_tasks() - {asyncio.current_task()}
        assert len(others) == 1  # the watchdog, until its next check
        await b.aclose()
        await asyncio.sleep(0)
        assert all(t.done() for t in others)
        assert b._loops.get(asyncio.get_running_loop()) is None
        await b.generate([req("a")])
        await asyncio.sleep(5)
        assert asyncio.all_tasks() == {asyncio.current_task()}  # this watchdog ended by itself
        await b.aclose()

    _run(clock, go())
    assert llm.closed == 2


def test_aclose_of_an_unused_breaker_closes_the_client(clock):
    llm = Endpoint(clock, {})
    _run(clock, BreakerLLM(llm, "e").aclose())
    assert llm.closed == 1


def test_a_caller_cancelled_as_its_request_is_abandoned_is_cancelled(clock):
    # The watchdog abandons the request at the deadline and, in that same moment, its caller is cancelled: the caller
    # gets its cancellation, not the stop.
    caller: list[asyncio.Task] = []

    class Hangs(Endpoint):
        async def generate(self, requests):
            try:
                await asyncio.get_running_loop().create_future()
            except asyncio.CancelledError:
                caller[0].cancel()
                raise

    b = BreakerLLM(Hangs(clock, {}), "e", stall=3, report=lambda line: None)

    async def go():
        caller.append(asyncio.ensure_future(b._one(req("h"))))
        try:
            await caller[0]
        except asyncio.CancelledError:
            return "cancelled", clock.t
        except EndpointDown:
            return "stopped", clock.t

    assert _run(clock, go()) == ("cancelled", 3)


# ---- the progress line


class _Out(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty, self.flushed = tty, []

    def isatty(self) -> bool:
        return self.tty

    def flush(self) -> None:
        self.flushed.append(self.getvalue())


@pytest.mark.parametrize("tty,expected", [(False, "waiting on e\n"), (True, "\r\x1b[Kwaiting on e\n")])
def test_the_line_clears_the_live_progress_line_on_a_terminal_only_and_is_flushed(monkeypatch, tty, expected):
    out = _Out(tty)
    monkeypatch.setattr(sys, "stdout", out)
    breaker._print_line("waiting on e")
    assert out.getvalue() == expected and out.flushed == [expected]


# ---- comeback: how long to wait for a stopped service


def test_the_service_wait_is_the_pools_setting_else_the_environment_else_600_s(monkeypatch):
    monkeypatch.delenv("EMOCAUSTICS_SERVICE_WAIT", raising=False)
    assert comeback.wait_seconds() == 600.0
    assert comeback.wait_seconds(5) == 5.0 and comeback.wait_seconds(0) == 0.0
    monkeypatch.setenv("EMOCAUSTICS_SERVICE_WAIT", "")
    assert comeback.wait_seconds() == 600.0
    monkeypatch.setenv("EMOCAUSTICS_SERVICE_WAIT", "12.5")
    assert comeback.wait_seconds() == 12.5 and comeback.wait_seconds(3) == 3.0
    monkeypatch.setenv("EMOCAUSTICS_SERVICE_WAIT", "soon")
    with pytest.raises(ValueError) as e:
        comeback.wait_seconds()
    assert str(e.value) == "EMOCAUSTICS_SERVICE_WAIT='soon': expected a number of seconds"


# ---- comeback: waiting for the replica


def actor(actor_id: str):
    return SimpleNamespace(_actor_id=SimpleNamespace(hex=lambda: actor_id), id=actor_id)


class Named:
    """Ray's named-actor lookup: `answers` one per poll (the last repeats); every name asked is recorded."""

    def __init__(self, clock: Clock, answers: list) -> None:
        self.clock, self.answers, self.asked = clock, answers, []

    def __call__(self, name: str):
        self.asked.append((self.clock.t, name))
        return self.answers[min(len(self.asked), len(self.answers)) - 1]


@pytest.fixture
def named(monkeypatch, clock):
    from emocaustics.models import replicas

    def install(*answers):
        lookup = Named(clock, list(answers))
        monkeypatch.setattr(replicas, "named_actor", lookup)
        return lookup

    return install


@pytest.fixture
def stderr(monkeypatch) -> _Out:
    """What comeback prints to stderr, and what of it was flushed (set when the test starts, under pytest's capture)."""
    out = _Out(False)

    def capture():
        monkeypatch.setattr(sys, "stderr", out)
        return out

    return capture


def _wait(waits, dead, seconds=30.0):
    return comeback.wait_for_replica(waits, model="m7", service="svc", name="svc-replica-0", dead=dead,
                                     seconds=seconds)


GONE_LINE = ("model m7: model service svc is gone (stopped or restarting); waiting up to 30 s for it to come back "
             "under svc-replica-0\n")
BACK_LINE = "model m7: model service svc is back; re-attached to svc-replica-0\n"


def test_the_same_actor_under_the_name_means_ray_restarts_it(clock, named, stderr):
    stderr = stderr()
    lookup = named(actor("dead1"))
    assert _run(clock, _wait({}, actor("dead1"))) is None
    assert lookup.asked == [(0, "svc-replica-0")] and stderr.getvalue() == ""


def test_another_actor_under_the_name_is_the_service_back(clock, named, stderr):
    stderr = stderr()
    lookup = named(actor("new2"))
    assert _run(clock, _wait({}, actor("dead1"))).id == "new2"
    assert lookup.asked == [(0, "svc-replica-0")] and stderr.getvalue() == ""


def test_a_service_gone_for_a_while_is_waited_for_and_both_ends_are_said(clock, named, stderr, capsys):
    stderr = stderr()
    lookup = named(None, None, None, actor("new2"))
    assert _run(clock, _wait({}, actor("dead1"))).id == "new2"
    assert [t for t, _ in lookup.asked] == [0, 0.5, 1.0, 1.5] and clock.t == 1.5
    assert stderr.flushed == [GONE_LINE, GONE_LINE + BACK_LINE] and capsys.readouterr().out == ""


def test_a_service_not_back_within_the_wait_stops_the_run_and_later_calls_fail_at_once(clock, named, stderr):
    stderr = stderr()
    lookup = named(None)
    waits: dict = {}
    with pytest.raises(ServiceGone) as e:
        _run(clock, _wait(waits, actor("dead1"), seconds=2))
    said = ("model service svc (model m7) went away during this job and did not come back within 2 s "
            "(EMOCAUSTICS_SERVICE_WAIT); start it again with `emocaustics serve` and continue the run with --resume")
    assert str(e.value) == said
    assert [t for t, _ in lookup.asked] == [0, 0.5, 1.0, 1.5, 2.0] and clock.t == 2
    assert stderr.flushed == [GONE_LINE.replace("30 s", "2 s")]

    async def again():
        return await _wait(waits, actor("dead1"), seconds=2)

    with pytest.raises(ServiceGone) as e:
        _run(clock, again())
    assert str(e.value) == said and clock.t == 2 and len(lookup.asked) == 5


def test_calls_in_flight_on_one_dead_replica_share_one_wait(clock, named, stderr):
    stderr = stderr()
    lookup = named(None, None, actor("new2"))
    waits: dict = {}

    async def go():
        first = asyncio.ensure_future(_wait(waits, actor("dead1")))
        await asyncio.sleep(0.25)
        return await asyncio.gather(first, _wait(waits, actor("dead1")))

    assert [a.id for a in _run(clock, go())] == ["new2", "new2"]
    assert [t for t, _ in lookup.asked] == [0, 0.5, 1.0] and stderr.flushed[-1].count("is gone") == 1


def test_a_finished_wait_is_not_kept_when_it_found_an_actor(clock, named, stderr):
    stderr = stderr()
    lookup = named(actor("dead1"), actor("new2"))
    waits: dict = {}

    async def go():
        first = await _wait(waits, actor("dead1"))
        await asyncio.sleep(1)
        return first, await _wait(waits, actor("dead1"))

    first, second = _run(clock, go())
    assert first is None and second.id == "new2" and len(lookup.asked) == 2


def test_a_wait_cancelled_with_its_loop_is_started_again_in_the_next(clock, named, stderr):
    stderr = stderr()
    lookup = named(None, None, None, None, actor("new2"))
    waits: dict = {}

    async def cut_short():
        try:
            await asyncio.wait_for(_wait(waits, actor("dead1")), 0.75)
        except TimeoutError:
            return "timed out"

    assert _run(clock, cut_short()) == "timed out"
    assert _run(clock, _wait(waits, actor("dead1"))).id == "new2"
    assert len(lookup.asked) == 5
