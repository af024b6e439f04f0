"""The Anthropic Messages client against the local stand-in (fakes/anthropic_messages.py): retries honouring
retry-after, 529 overloaded, 500, timeouts, dropped connections, the key, the concurrency limit, the fall-backs for
endpoints without structured output or sampling parameters -- and AER questions through it with faults injected,
none lost."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from emocaustics.core.errors import UsageError
from emocaustics.core.task import Failure, ScoreContext, SolveFailed, get_task, parse_options
from emocaustics.models.anthropic_chat import AnthropicChatLLM, to_messages
from emocaustics.models.base import ChatRequest, Sampling
from emocaustics.tasks.aer.solver import ANSWER_SCHEMAS
from fakes.anthropic_messages import AnthropicFaults, FakeAnthropicServer
from tasks.aer.aer_fixtures import question, standard_dataset, topic, write_dataset

SECRET = "sk-ant-test-SECRET-4242"
TASK = get_task("aer")


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)


def _req(text: str = "which caused it?", schema: bool = True, temperature: float = 0.0) -> ChatRequest:
    return ChatRequest(messages=({"role": "system", "content": "be brief"}, {"role": "user", "content": text}),
                       schema=ANSWER_SCHEMAS["zero-shot"] if schema else None,
                       sampling=Sampling(max_tokens=40, temperature=temperature))


def _run(llm: AnthropicChatLLM, requests: list[ChatRequest]):
    async def go():
        try:
            return await llm.generate(requests)
        finally:
            await llm.aclose()

    return asyncio.run(go())


def test_request_shape_and_answer(tmp_path: Path) -> None:
    with FakeAnthropicServer(expected_key=SECRET) as srv:
        llm = AnthropicChatLLM("claude-fake", srv.base_url, timeout=5)
        [c] = _run(llm, [_req()])
    assert c.error is None and c.parsed == {"answer": ["A"]} and c.prompt_tokens > 0 and c.generated_tokens > 0
    body = srv.bodies[0]
    assert body["system"] == "be brief" and body["messages"] == [{"role": "user", "content": "which caused it?"}]
    assert body["max_tokens"] == 40 and body["temperature"] == 0.0 and body["model"] == "claude-fake"
    assert body["output_config"]["format"]["type"] == "json_schema"
    assert srv.api_keys == [SECRET]  # the key reaches the server (and only the server: see the next test)
    assert llm.name == f"anthropic:claude-fake@{srv.base_url}"


def test_429_and_529_are_retried_honouring_retry_after() -> None:
    faults = AnthropicFaults(retry_after=0.3)
    with FakeAnthropicServer(faults, script=["429", "529", "ok"]) as srv:
        [c] = _run(AnthropicChatLLM("m", srv.base_url, timeout=5, max_retries=3), [_req()])
    assert c.error is None and [a.behaviour for a in srv.arrivals] == ["429", "529", "ok"]
    gaps = [b.at - a.at for a, b in zip(srv.arrivals, srv.arrivals[1:])]
    assert all(g >= 0.29 for g in gaps), gaps  # the client waited as told
    assert len({a.body_key for a in srv.arrivals}) == 1  # the same request each time


@pytest.mark.parametrize("behaviour, reason", [
    ("500", "HTTP 500 api_error: Internal server error"),
    ("529", "HTTP 529 overloaded_error: Overloaded"),
    ("429", "HTTP 429 rate_limit_error"),
    ("hang", "timeout: no answer within 0.3s"),
    ("drop", "connection error"),
])
def test_final_failures_are_completion_errors(behaviour: str, reason: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with FakeAnthropicServer(AnthropicFaults(hang_seconds=5), routes={"doomed": behaviour}) as srv:
        llm = AnthropicChatLLM("m", srv.base_url, timeout=0.3, max_retries=2)
        [c] = _run(llm, [_req("doomed question")])
    assert c.error is not None and reason in c.error and c.text == ""
    assert len(srv.arrivals_for("doomed")) == 3  # 1 + max_retries tries
    assert SECRET not in c.error and SECRET not in caplog.text  # the key never reaches an error or a log
    assert llm.usage.errors == 1


def test_invalid_json_is_asked_again_then_reported() -> None:
    with FakeAnthropicServer(script=["invalid", "ok"]) as srv:
        [c] = _run(AnthropicChatLLM("m", srv.base_url, timeout=5, json_retries=1), [_req()])
    assert c.error is None and c.parsed == {"answer": ["A"]}
    with FakeAnthropicServer(script=["cut", "cut"]) as srv:
        [c] = _run(AnthropicChatLLM("m", srv.base_url, timeout=5, json_retries=1), [_req()])
    assert c.error is not None and c.error.startswith("answer cut at max_tokens=40")


def test_missing_key_against_the_real_api_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(UsageError, match="set ANTHROPIC_API_KEY"):
        AnthropicChatLLM("claude-x")
    AnthropicChatLLM("claude-x", "http://127.0.0.1:9")  # a local stand-in needs none


def test_concurrency_limit() -> None:
    with FakeAnthropicServer(AnthropicFaults(latency=0.05)) as srv:
        out = _run(AnthropicChatLLM("m", srv.base_url, timeout=5, concurrency=3), [_req(f"q{i}") for i in range(15)])
    assert all(c.error is None for c in out) and 2 <= srv.max_inflight <= 3


def test_endpoint_without_structured_output_or_temperature() -> None:
    with FakeAnthropicServer(supports_output_config=False, supports_temperature=False) as srv:
        llm = AnthropicChatLLM("m", srv.base_url, timeout=5)
        out = _run(llm, [_req(), _req("second")])
    # both switched off for good after their first 400; the prose answer is not JSON (the solver reads its text)
    assert llm.json_mode == "plain" and llm.sampling == "omit"
    assert all("output_config" not in b and "temperature" not in b for b in srv.bodies[-2:])
    assert all(c.text.endswith("Answer: A") for c in out)


def test_message_conversion() -> None:
    system, turns = to_messages(({"role": "system", "content": "s1"}, {"role": "system", "content": "s2"},
                                 {"role": "user", "content": "u1"}, {"role": "user", "content": "u2"},
                                 {"role": "assistant", "content": "a1"}, {"role": "user", "content": "u3"}))
    assert system == "s1\n\ns2"
    assert turns == [{"role": "user", "content": "u1\n\nu2"}, {"role": "assistant", "content": "a1"},
                     {"role": "user", "content": "u3"}]
    assert to_messages(({"role": "assistant", "content": "a"},))[1][0]["role"] == "user"


async def _solve_all(llm, samples, options):
    async def one(_llm, s):
        try:
            return await TASK.solve(_llm, s, options)
        except SolveFailed as exc:
            return Failure(exc.step, exc.reason)

    try:
        return dict(zip([s.id for s in samples], await llm.run(one, samples)))
    finally:
        await llm.aclose()


@pytest.mark.parametrize("prompt", ["zero-shot", "cot"])
def test_aer_questions_through_faults_lose_none(tmp_path: Path, prompt: str) -> None:
    qs = [question(n, 1 + n % 3, "A") for n in range(1, 25)]
    root = write_dataset(tmp_path, {"sample": (qs, [topic(1), topic(2), topic(3)])})
    options = parse_options(TASK, {"method": "llm", "context": "full", "prompt": prompt})
    samples = TASK.prepare(TASK.load(TASK.Dataset(split="sample", data=str(root)), options).samples, options,
                           ScoreContext())
    doomed = samples[4].input["target_event"]  # every request of this question fails with 500
    # ~30% of requests fail at random (each request has 5 tries, each question 2 requests: ~6e-6 that a question
    # other than the doomed one fails); the script makes sure every kind of fault occurs
    faults = AnthropicFaults(rate_429=0.08, rate_500=0.06, rate_529=0.06, rate_hang=0.04, rate_drop=0.03,
                             rate_invalid=0.03, retry_after=0.01, retry_after_on_500=True, hang_seconds=5, seed=11)
    script = ["hang", "drop", "429", "529", "500", "invalid"]
    with FakeAnthropicServer(faults, routes={doomed: "500"}, script=script) as srv:
        llm = AnthropicChatLLM("m", srv.base_url, timeout=0.3, max_retries=4, concurrency=8)
        preds = asyncio.run(_solve_all(llm, samples, options))
    assert set(preds) == {s.id for s in samples}  # every question is an answer or a failure row
    failed = {k for k, v in preds.items() if isinstance(v, Failure)}
    assert failed == {samples[4].id}, {k: str(v) for k, v in preds.items() if isinstance(v, Failure)}
    assert "HTTP 500" in preds[samples[4].id].reason
    assert all(v["answer"] == ["A"] for k, v in preds.items() if k not in failed)
    counts = srv.counts
    assert counts["429"] and counts["529"] and counts["500"] and counts["hang"] and counts["drop"]
    scored = TASK.score(samples, preds, options, ScoreContext())
    assert scored.summary["total"] == 24 and scored.summary["exact_match"] == 23 and scored.summary["failed"] == 1


def test_prose_answers_from_an_unguided_endpoint_are_read(tmp_path: Path) -> None:
    root = standard_dataset(tmp_path)
    options = parse_options(TASK, {"method": "llm", "context": "none"})
    samples = TASK.prepare(TASK.load(TASK.Dataset(split="sample", data=str(root)), options).samples, options,
                           ScoreContext())
    with FakeAnthropicServer(supports_output_config=False, answer_text=lambda b: "It was B.\nAnswer: B") as srv:
        preds = asyncio.run(_solve_all(AnthropicChatLLM("m", srv.base_url, timeout=5), samples, options))
    assert all(not isinstance(p, Failure) and p["answer"] == ["B"] and p["parsed_from"] == "text"
               for p in preds.values())


def test_spec_takes_sampling_for_anthropic_only() -> None:
    from emocaustics.models.factory import make_llm
    from emocaustics.models.spec import parse_llm_spec

    spec = parse_llm_spec("anthropic:claude-x@http://127.0.0.1:9?sampling=omit&json_mode=plain")
    assert spec.client == {"sampling": "omit", "json_mode": "plain"}
    llm = make_llm(spec)
    assert llm.llm.sampling == "omit" and llm.llm.json_mode == "plain"  # the client, behind the breaker
    with pytest.raises(UsageError, match="unknown option 'sampling'"):
        parse_llm_spec("openai:m@http://127.0.0.1:9/v1?sampling=omit")
    with pytest.raises(ValueError, match="sampling must be auto, send or omit"):
        make_llm(parse_llm_spec("anthropic:claude-x@http://127.0.0.1:9?sampling=never"))
