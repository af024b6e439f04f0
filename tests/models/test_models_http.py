"""The JSON transport's retry policy (models/http.py), as the official SDK's: which answers are retried, how long it
waits, and what a final failure says. Pure rules; the exchanges against a real socket are in test_models_openai.py."""

from __future__ import annotations

import asyncio
import email.utils
import time

import pytest

from emocaustics.models.http import HTTPFailure, JSONPoster, error_message, proxy_for, retry_delay, should_retry


@pytest.mark.parametrize(("status", "headers", "retry"), [
    (408, {}, True), (409, {}, True), (429, {}, True), (500, {}, True), (503, {}, True), (529, {}, True),
    (400, {}, False), (401, {}, False), (404, {}, False), (422, {}, False),
    (500, {"x-should-retry": "false"}, False), (400, {"x-should-retry": "true"}, True),
])
def test_which_statuses_are_retried(status: int, headers: dict, retry: bool) -> None:
    assert should_retry(status, headers) is retry


def test_retry_after_headers_are_honoured_up_to_a_minute() -> None:
    assert retry_delay(0, {"retry-after-ms": "20"}) == pytest.approx(0.02)
    assert retry_delay(3, {"retry-after": "2"}) == 2.0
    when = email.utils.formatdate(time.time() + 5, usegmt=True)
    assert 3.5 < retry_delay(0, {"retry-after": when}) <= 5.0
    # beyond 60 s, zero or garbage: the backoff applies instead
    for headers in ({"retry-after": "120"}, {"retry-after": "0"}, {"retry-after-ms": "soon"}):
        assert 0.375 <= retry_delay(0, headers) <= 0.5


def test_backoff_doubles_with_jitter_and_is_capped() -> None:
    for retries, top in ((0, 0.5), (1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (10, 8.0)):
        waits = [retry_delay(retries) for _ in range(200)]
        assert all(0.75 * top <= w <= top for w in waits)
        assert max(waits) - min(waits) > 0.05 * top  # jittered, not in step


def test_error_message_prefers_the_servers_words() -> None:
    assert error_message({"error": {"message": "Rate limit reached", "type": "requests"}}, "") == "Rate limit reached"
    assert error_message({"error": "bad schema"}, "") == "bad schema"
    assert error_message(None, "  upstream timed out \n") == "upstream timed out"
    assert error_message(None, "") == "(empty body)"


def test_proxy_comes_from_the_environment_unless_bypassed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "internal.example")
    assert proxy_for("https://api.example.com/v1") == "http://proxy.example:3128"
    assert proxy_for("https://internal.example/v1") is None


def test_a_refused_connection_is_retried_then_named() -> None:
    async def go() -> HTTPFailure:
        poster = JSONPoster("http://127.0.0.1:9/v1", {}, timeout=1, max_retries=1, connections=2)
        try:
            with pytest.raises(HTTPFailure) as info:
                await poster.post("chat/completions", {"x": 1})
            return info.value
        finally:
            await poster.close()

    t0 = time.perf_counter()
    failure = asyncio.run(go())
    assert failure.kind == "connection" and failure.reason.startswith("connection error: ")
    assert time.perf_counter() - t0 >= 0.375  # one backoff wait before the single retry
