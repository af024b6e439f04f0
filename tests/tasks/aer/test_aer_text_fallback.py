"""An AER answer that is prose ending in "Answer: B" is not JSON, yet the solver reads it (its strict text fallback).
Such an answer is no failure: nothing is printed for it -- neither the client's "request failed: invalid JSON ... not
repairable" nor anything else -- through the OpenAI- and the Anthropic-compatible clients (tests/fakes stand-ins).
A prose answer without an answer line is a real failure: the question fails, naming the raw output."""

from __future__ import annotations

import asyncio
import logging

import pytest

from emocaustics.core.task import SolveFailed
from emocaustics.models.factory import make_llm
from emocaustics.models.spec import parse_llm_spec
from emocaustics.tasks.aer.solver import ask_samples
from fakes.anthropic_messages import FakeAnthropicServer
from fakes.openai_chat import FakeOpenAIServer

PROSE = "The first candidate came well before the event, the second one directly before it.\nAnswer: B"
MESSAGES = ({"role": "system", "content": "Pick the direct causes."}, {"role": "user", "content": "Which caused it?"})


def _ask(spec: str):
    llm = make_llm(parse_llm_spec(spec))

    async def go():
        try:
            return await ask_samples(llm, MESSAGES, "zero-shot", samples=1, temperature=0.0, seed=0, affinity=None)
        finally:
            await llm.aclose()

    return asyncio.run(go())


def _servers(answer):
    openai = FakeOpenAIServer()
    openai.answer_text = answer
    anthropic = FakeAnthropicServer(answer_text=answer)
    return [(openai, lambda s: f"openai:fake@{s.base_url}"),
            (anthropic, lambda s: f"anthropic:claude-fake@{s.base_url}")]


@pytest.mark.parametrize("which", [0, 1], ids=["openai", "anthropic"])
def test_a_prose_answer_the_fallback_reads_prints_nothing(which, caplog):
    server, spec = _servers(lambda body: PROSE)[which]
    caplog.set_level(logging.DEBUG)
    with server:
        attempts = _ask(spec(server))
    assert [a.letters for a in attempts] == [["B"]] and attempts[0].how == "text"
    loud = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert loud == [], loud


@pytest.mark.parametrize("which", [0, 1], ids=["openai", "anthropic"])
def test_a_prose_answer_without_an_answer_line_is_a_failure(which):
    server, spec = _servers(lambda body: "I would rather not say.")[which]
    with server, pytest.raises(SolveFailed, match="I would rather not say"):
        _ask(spec(server))
