"""The OpenAI-compatible path against a local fake endpoint (tests/fakes/openai_chat.py) that injects real faults."""

from __future__ import annotations

import asyncio
import logging

import pytest
from fakes.openai_chat import Faults, FakeOpenAIServer

from emocaustics.models.base import ChatRequest, Sampling
from emocaustics.models.openai_chat import OpenAIChatLLM
from emocaustics.models.factory import make_llm
from emocaustics.models.spec import parse_llm_spec

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 8}}, "required": ["answer"]}


def ask(llm, reqs: list[ChatRequest]):
    """generate() in a fresh event loop, closing the loop's HTTP client before the loop ends."""

    async def go():
        try:
            return await llm.generate(reqs)
        finally:
            await llm.aclose()

    return asyncio.run(go())


def requests(n: int, schema: dict | None = SCHEMA) -> list[ChatRequest]:
    return [
        ChatRequest(messages=({"role": "user", "content": f"第{i}句话"},), schema=schema, sampling=Sampling(max_tokens=32))
        for i in range(n)
    ]


def test_clean_endpoint_answers_with_schema_and_counts_tokens() -> None:
    with FakeOpenAIServer() as server:
        llm = OpenAIChatLLM("fake", server.base_url, timeout=2, max_retries=0)
        out = ask(llm, requests(5))
    assert [c.parsed for c in out] == [{"answer": f"第{i}句话"} for i in range(5)]
    assert all(c.ok and not c.repaired and c.generated_tokens > 0 and c.prompt_tokens > 0 for c in out)
    assert server.bodies[0]["response_format"]["json_schema"]["schema"] == SCHEMA


def test_faults_are_retried_and_final_failures_carry_their_reason() -> None:
    faults = Faults(rate_429=0.15, rate_500=0.15, rate_hang=0.05, rate_drop=0.1, hang_seconds=10, seed=7)
    with FakeOpenAIServer(faults) as server:
        llm = OpenAIChatLLM("fake", server.base_url, timeout=0.5, max_retries=3, concurrency=8)
        out = ask(llm, requests(60))
    assert len(out) == 60  # no request lost
    failed = [c for c in out if not c.ok]
    counts = server.counts
    assert counts["429"] and counts["500"] and counts["hang"] and counts["drop"]
    # Bounded retries: at most 1 + max_retries HTTP attempts per request.
    assert sum(counts.values()) <= 60 * 4
    # Most requests survive thanks to retries (each attempt fails with p=0.45; 4 attempts all failing: ~4%).
    assert len(failed) <= 10
    for c in out:
        if c.ok:
            assert c.parsed == {"answer": c.parsed["answer"]}
        else:
            assert c.error.startswith(("HTTP 429", "HTTP 500", "timeout", "connection error")), c.error
    assert server.max_inflight <= 8


def test_scripted_faults_exhaust_retries_with_named_reasons() -> None:
    script = ["429"] * 3 + ["500"] * 3 + ["drop"] * 3 + ["hang"] * 3
    with FakeOpenAIServer(Faults(hang_seconds=5), script=script) as server:
        llm = OpenAIChatLLM("fake", server.base_url, timeout=0.3, max_retries=2, concurrency=1)
        out = [ask(llm, requests(1))[0] for _ in range(4)]
    assert [c.error.split(":")[0] for c in out] == ["HTTP 429", "HTTP 500", "connection error", "timeout"]
    assert server.counts["ok"] == 0 and len(server.seen) == 12  # exactly 1 + max_retries attempts each


def test_invalid_json_is_asked_again_then_reported() -> None:
    with FakeOpenAIServer(script=["invalid", "ok", "invalid", "invalid"]) as server:
        llm = OpenAIChatLLM("fake", server.base_url, timeout=2, max_retries=0, json_retries=1, concurrency=1)
        first = ask(llm, requests(1))[0]
        second = ask(llm, requests(1))[0]
    assert first.ok and first.parsed == {"answer": "第0句话"}
    assert second.error and second.error.startswith("invalid JSON") and second.parsed is None
    assert server.seen == ["invalid", "ok", "invalid", "invalid"]


def test_answer_cut_at_max_tokens_is_asked_again_then_reported_never_repaired() -> None:
    """The fake cuts the JSON inside a string and says finish_reason "length"; json-repair could close it into a
    valid-looking object, which must not count: the client asks again, and reports the cut when it persists."""
    with FakeOpenAIServer(script=["truncated", "ok", "truncated", "truncated"]) as server:
        llm = OpenAIChatLLM("fake", server.base_url, timeout=2, max_retries=0, json_retries=1, concurrency=1)
        retried = ask(llm, requests(1))[0]
        cut = ask(llm, requests(1))[0]
    assert retried.ok and not retried.repaired and retried.parsed == {"answer": "第0句话"}
    assert not cut.ok and cut.parsed is None and not cut.repaired
    assert cut.error.startswith("answer cut at max_tokens="), cut.error
    assert server.seen == ["truncated", "ok", "truncated", "truncated"]
    assert llm.repaired == 0


def test_endpoint_without_json_schema_falls_back_to_plain_and_repair() -> None:
    with FakeOpenAIServer(supports_json_schema=False) as server:
        llm = OpenAIChatLLM("fake", server.base_url, timeout=2, max_retries=0, concurrency=1)
        out = ask(llm, requests(3))
    assert llm.json_mode == "plain"
    assert all(c.ok and c.repaired and c.parsed == {"answer": f"第{i}句话"} for i, c in enumerate(out))
    assert "response_format" not in server.bodies[-1]


def test_api_key_is_sent_but_never_logged(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    key = "sk-test-SECRET-4f9a8b7c6d"
    monkeypatch.setenv("EMOCAUSTICS_API_KEY", key)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    caplog.set_level(logging.DEBUG)  # openai, httpx and our own loggers at their most verbose
    with FakeOpenAIServer(Faults(rate_429=0.3, rate_500=0.3, seed=3), expected_key=key) as server:
        llm = make_llm(parse_llm_spec(f"openai:fake@{server.base_url}?max_retries=1&timeout=1"))
        out = ask(llm, requests(20))
        stats = asyncio.run(llm.stats())
    assert server.auth_headers and all(h == f"Bearer {key}" for h in server.auth_headers)
    assert any(not c.ok for c in out) and any(c.ok for c in out)  # failures were logged too
    assert caplog.records, "nothing was logged: the check would be vacuous"
    assert key not in caplog.text
    assert all(key not in (c.error or "") for c in out)
    assert key not in repr(llm.__dict__) and key not in str(stats)


def test_wrong_key_is_reported_as_401() -> None:
    with FakeOpenAIServer(expected_key="right") as server:
        llm = OpenAIChatLLM("fake", server.base_url, timeout=2, max_retries=0)
        out = ask(llm, requests(1))
    assert out[0].error and out[0].error.startswith("HTTP 401")


def test_run_executes_per_item_functions_locally() -> None:
    async def fn(llm, item):
        if item == 2:
            raise ValueError("bad item 2")
        (c,) = await llm.generate(requests(1))
        return (item, c.parsed["answer"])

    with FakeOpenAIServer() as server:
        llm = OpenAIChatLLM("fake", server.base_url, timeout=2, max_retries=0)
        out = asyncio.run(llm.run(fn, [0, 1, 2]))
    assert out[:2] == [(0, "第0句话"), (1, "第0句话")]
    assert not out[2] and "ValueError: bad item 2" in out[2].reason
