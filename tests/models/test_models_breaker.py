"""The dead-endpoint breaker (models/breaker.py) in front of both remote clients, against the loopback stand-ins of
the OpenAI- and Anthropic-compatible APIs (tests/fakes):

- a server that accepts requests and never answers is declared dead once nothing came back for `stall_seconds`
  (far below the client's own timeout); the requests in flight end with the typed stop `EndpointDown`, later ones
  are never sent, and "waiting on ..." lines said what was waited for;
- the stall deadline holds when every request in flight times out together and is sent again (the silence clock
  pauses while nothing is in flight; it used to restart, and the deadline slipped to the connection-failure count);
- a server that answers 5xx to everything is declared dead after `max_server_errors` requests in a row;
- a rate-limited server answering 429 with retry-after for longer than the stall deadline is alive: every response
  counts as an answer, the client's retried ones included, and the request succeeds.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from emocaustics.core.errors import EndpointDown
from emocaustics.models.base import ChatRequest, Sampling
from emocaustics.models.breaker import BreakerLLM
from emocaustics.models.factory import make_llm
from emocaustics.models.spec import LLMSpec, parse_llm_spec
from fakes.anthropic_messages import AnthropicFaults, FakeAnthropicServer
from fakes.openai_chat import FakeOpenAIServer, Faults

KINDS = ["openai", "anthropic"]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")


def _server(kind: str, *, hang: bool = False, status: str | None = None, script: list[str] | None = None,
            retry_after: float = 0.02):
    if kind == "openai":
        faults = Faults(rate_hang=1.0 if hang else 0.0, hang_seconds=120,
                        rate_500=1.0 if status == "500" else 0.0, retry_after_ms=int(retry_after * 1000))
        return FakeOpenAIServer(faults, script=script)
    faults = AnthropicFaults(rate_hang=1.0 if hang else 0.0, hang_seconds=120,
                             rate_529=1.0 if status == "529" else 0.0, retry_after=retry_after)
    return FakeAnthropicServer(faults, script=script)


def _spec(kind: str, server, options: str) -> LLMSpec:
    head = f"openai:fake@{server.base_url}" if kind == "openai" else f"anthropic:claude-fake@{server.base_url}"
    return parse_llm_spec(f"{head}?{options}")


REQ = ChatRequest(messages=({"role": "user", "content": "hello"},), sampling=Sampling(max_tokens=8))


def _ask(llm: BreakerLLM, n: int, then: int = 0):
    """n requests together (one each, as samples ask), then `then` more once those ended: each one's Completion, or
    the exception it raised."""

    async def some(k: int):
        return [r if isinstance(r, BaseException) else r[0]
                for r in await asyncio.gather(*(llm.generate([REQ]) for _ in range(k)), return_exceptions=True)]

    async def go():
        try:
            return await some(n) + (await some(then) if then else [])
        finally:
            await llm.aclose()

    return asyncio.run(go())


def _stopped(answers) -> list[str]:
    """The messages of the answers that are the typed stop; every answer is either that or a Completion."""
    assert all(isinstance(a, EndpointDown) or hasattr(a, "error") for a in answers), answers
    return [str(a) for a in answers if isinstance(a, EndpointDown)]


@pytest.mark.parametrize("kind", KINDS)
def test_a_hanging_endpoint_is_declared_dead_at_its_stall_deadline(kind):
    with _server(kind, hang=True, script=["ok"]) as server:
        llm = make_llm(_spec(kind, server, "timeout=60&max_retries=0&concurrency=3&stall_seconds=1.5"))
        lines: list[str] = []
        llm.report = lines.append
        answers = _ask(llm, 4, then=5)
        seen = len(server.arrivals) if kind == "anthropic" else len(server.seen)
    down = _stopped(answers)
    assert [a.error for a in answers if not isinstance(a, EndpointDown)] == [None]  # the one answered first
    assert len(down) == 8 and all(e.startswith("endpoint down: ") and "gave no answer for" in e
                                  and "stall deadline 1.5 s" in e for e in down), down
    assert seen == 4  # the first four were sent; nothing after the endpoint was declared dead
    assert lines and all(line.startswith(f"waiting on {llm.endpoint}: ") and "requests in flight, no answer for "
                         in line for line in lines), lines


@pytest.mark.parametrize("kind,status", [("openai", "500"), ("anthropic", "529")])
def test_an_endpoint_answering_5xx_to_everything_is_declared_dead(kind, status):
    with _server(kind, status=status) as server:
        llm = make_llm(_spec(kind, server, "max_retries=1&concurrency=1&max_server_errors=3"))
        answers = _ask(llm, 6)
        sent = len(server.arrivals) if kind == "anthropic" else len(server.seen)
    errors = [a.error or "" for a in answers[:2]]
    assert all(e.startswith(f"HTTP {status}") for e in errors), errors  # the third was the last straw: it stops
    down = _stopped(answers[2:])
    assert len(down) == 4 and all(e.startswith("endpoint down: ") and f"HTTP {status}" in e for e in down), answers
    assert sent == 6  # three requests, each tried twice; none after


@pytest.mark.parametrize("kind", KINDS)
def test_an_endpoint_answering_429_past_the_stall_deadline_is_alive(kind):
    # Eight 429s with a 0.25 s retry-after: the request waits ~2 s for its answer, longer than the 1 s deadline.
    with _server(kind, script=["429"] * 8, retry_after=0.25) as server:
        llm = make_llm(_spec(kind, server, "max_retries=10&concurrency=1&stall_seconds=1"))
        answers = _ask(llm, 1)
    assert answers[0].error is None, answers[0].error
    assert not llm.tripped


@pytest.mark.parametrize("kind", KINDS)
def test_the_stall_deadline_holds_when_every_request_in_flight_times_out_together(kind):
    # Every attempt hangs; the client gives the four in flight up together after 0.5 s (no retry), and they are sent
    # again at once, as solvers re-ask. Nothing has come back since the start, so the endpoint is dead at its 2 s
    # deadline, not when the connection-failure count (40: ten rounds, 5 s) runs out. The bound is generous:
    # deadline + 50 %.
    with _server(kind, hang=True) as server:
        llm = make_llm(_spec(kind, server, "timeout=0.5&max_retries=0&concurrency=4&stall_seconds=2"
                                           "&max_connection_failures=40"))
        llm.report = lambda line: None

        async def go():
            t0 = time.monotonic()
            try:
                while True:  # a round: four requests in flight together, all ended before the next round
                    ends = await asyncio.gather(*(llm.generate([REQ]) for _ in range(4)), return_exceptions=True)
                    if any(isinstance(e, BaseException) for e in ends):
                        return time.monotonic() - t0, ends
                    assert all(e[0].error.startswith("timeout") for e in ends), ends
            finally:
                await llm.aclose()

        elapsed, ends = asyncio.run(go())
    assert all(isinstance(e, EndpointDown) and "stall deadline 2 s" in str(e) for e in ends), ends
    assert elapsed < 3.0, elapsed


@pytest.mark.parametrize("kind", KINDS)
def test_the_breaker_hears_the_client_under_the_budget_layer(kind):
    # With a job budget the budget layer sits between the breaker and the client: the client's responses must still
    # reach the breaker (its sign of life) and the rate limit (its 429s), not stop at the budget layer.
    from emocaustics.models import budget
    from emocaustics.models.budget import BudgetLLM
    from emocaustics.models.prices import Price
    from emocaustics.models.registry import endpoint_name

    spec = parse_llm_spec(f"{kind}:m@http://127.0.0.1:9/v1")
    budget.activate(1.0, {endpoint_name(spec): Price(input=1.0, output=1.0)})
    try:
        breaker = make_llm(spec)
    finally:
        budget._active = None
    assert isinstance(breaker, BreakerLLM) and isinstance(breaker.llm, BudgetLLM)
    assert breaker.llm.llm.on_response == breaker._answered
