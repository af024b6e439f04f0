"""A sample's limits on its calls (`solve/item.py`'s `LimitedLLM`, issue 53's mutation area `limits`): which limit a
call is bounded by, when a timeout is a limit's and when the model's own, the failure each names, and that a sample
over a limit stays over. Fast: a stand-in clock for the messages' figures, real waits of a few hundredths of a
second where `asyncio.wait_for` must time out; no Ray, no engine."""

from __future__ import annotations

import asyncio

import pytest

from emocaustics.models.base import ChatRequest, Completion
from emocaustics.solve import item
from emocaustics.solve.item import LimitedLLM, LimitReached

REQUEST = [ChatRequest(({"role": "user", "content": "q"},))]


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    """`item`'s own `time` only: asyncio keeps the real clock, so `wait_for` still times out in real seconds."""
    c = Clock(100.0)
    monkeypatch.setattr(item, "time", c)
    return c


class Model:
    """Each call moves the clock by `step`, then answers `tokens` generated tokens, or hangs (`hang`), or raises
    the model's own `TimeoutError` (`own_timeout`)."""

    def __init__(self, clock: Clock, step: float = 0.0, tokens: int | None = 1, hang: bool = False,
                 own_timeout: bool = False) -> None:
        self.clock, self.step, self.tokens, self.hang, self.own_timeout = clock, step, tokens, hang, own_timeout
        self.calls = 0

    async def generate(self, requests):
        self.calls += 1
        self.clock.now += self.step
        if self.own_timeout:
            raise TimeoutError("the client's own timeout")
        if self.hang:
            await asyncio.Event().wait()
        return [Completion(text="a", generated_tokens=self.tokens) for _ in requests]


def _call(limited: LimitedLLM):
    return asyncio.run(limited.generate(REQUEST))


def _reached(limited: LimitedLLM) -> LimitReached:
    with pytest.raises(LimitReached) as got:
        _call(limited)
    return got.value


def test_the_sample_time_limit_names_the_time_from_its_first_call(clock):
    model = Model(clock, step=3.0, hang=True)
    limited = LimitedLLM(model, seconds=0.05)
    got = _reached(limited)
    assert (got.step, got.reason) == ("time_limit", "3.0 > 0.05 s from the sample's first call")
    assert limited.over is got and limited.first == 100.0


def test_the_time_limit_counts_from_the_first_call_not_from_the_layers_making(clock):
    model = Model(clock, step=1.0)
    limited = LimitedLLM(model, seconds=5)
    clock.now = 200.0
    assert len(_call(limited)) == 1 and limited.first == 200.0  # 1 s of 5: within
    clock.now = 210.0  # 10 s after the first call: over before the second is sent
    got = _reached(limited)
    assert got.reason == "10.0 > 5 s from the sample's first call" and model.calls == 1
    assert limited.first == 200.0  # the second call does not move the start


def test_a_sample_whose_first_call_starts_at_clock_zero(clock):
    clock.now = 0.0
    limited = LimitedLLM(Model(clock, step=2.5, hang=True), seconds=0.05)
    assert _reached(limited).reason == "2.5 > 0.05 s from the sample's first call"


def test_the_config_time_limit_names_the_config(clock):
    model = Model(clock, step=1.0, hang=True)
    limited = LimitedLLM(model, left=0.05, config=7)
    assert limited.deadline == pytest.approx(100.05)
    got = _reached(limited)
    assert (got.step, got.reason) == ("time_limit", "config time_limit: 7 s reached while the sample ran")


def test_a_config_deadline_already_past_sends_nothing(clock):
    model = Model(clock)
    for left in (0.0, -3.0):
        limited = LimitedLLM(model, left=left, config=2.5)
        assert _reached(limited).reason == "config time_limit: 2.5 s reached while the sample ran"
    assert model.calls == 0


@pytest.mark.parametrize("seconds, left, which", [(0.05, 0.5, "sample"), (0.5, 0.05, "config")])
def test_the_nearer_limit_bounds_the_call(clock, seconds, left, which):
    limited = LimitedLLM(Model(clock, step=1.0, hang=True), seconds=seconds, left=left, config=9)
    assert limited._left() == (pytest.approx(left), "config")  # before the first call: only the config's
    limited.first = clock.now
    assert limited._left() == (pytest.approx(min(seconds, left)), which)
    limited.first = None
    got = _reached(limited)
    assert got.reason.startswith("config") == (which == "config")


def test_no_limit_no_bound(clock):
    limited = LimitedLLM(Model(clock))
    assert limited._left() == (None, "")
    limited.first = 100.0
    assert limited._left() == (None, "")  # a first call without `seconds` sets no bound


@pytest.mark.parametrize("limits", [{}, {"seconds": 10.0}, {"left": 10.0, "config": 10}, {"seconds": 0.5},
                                    {"left": 0.5, "config": 1}])  # under a second left: still the model's
def test_the_models_own_timeout_is_not_a_limit(clock, limits):
    model = Model(clock, own_timeout=True)
    limited = LimitedLLM(model, **limits)
    with pytest.raises(TimeoutError) as got:
        _call(limited)
    assert not isinstance(got.value, LimitReached) and str(got.value) == "the client's own timeout"
    assert limited.over is None
    model.own_timeout = False
    assert len(_call(limited)) == 1  # the next call goes through


def test_over_a_limit_every_further_call_raises_the_same_failure_unsent(clock):
    model = Model(clock, tokens=3)
    limited = LimitedLLM(model, tokens=2)
    first = _reached(limited)
    assert (first.step, first.reason) == ("token_limit", "3 > 2 tokens")
    assert _reached(limited) is first and model.calls == 1


def test_tokens_are_summed_over_calls_and_answers_without_a_count_add_none(clock):
    model = Model(clock, tokens=None)
    limited = LimitedLLM(model, tokens=4)
    for _ in range(3):
        _call(limited)
    assert limited.generated == 0 and limited.over is None
    model.tokens = 2
    asyncio.run(limited.generate(REQUEST * 2))
    assert limited.generated == 4 and limited.over is None  # 4 of 4: within
    model.tokens = 1
    assert _reached(limited).reason == "5 > 4 tokens"
