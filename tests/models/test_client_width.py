"""A remote model's `concurrency` reaches its client: the client's gate and connection pool are as wide as the job
asked (issue 55's race found every OpenAI-compatible run held at the client's default of 16 calls in flight)."""

from __future__ import annotations

import pytest

from emocaustics.jobs.modelentry import ModelSpec
from emocaustics.models.factory import make_llm
from emocaustics.models.spec import parse_llm_spec


def client_of(llm):
    while not hasattr(llm, "concurrency") or type(llm).__name__ == "BreakerLLM":
        llm = getattr(llm, "client", None) or llm.llm
    return llm


@pytest.mark.parametrize("spec, width", [
    ("openai:m@http://127.0.0.1:9/v1?concurrency=64", 64),
    ("openai:m@http://127.0.0.1:9/v1?concurrency=3", 3),
    ("openai:m@http://127.0.0.1:9/v1", 16),  # the client's own default where none is given
    ("anthropic:claude-x?concurrency=40", 40),
    ("anthropic:claude-x", 8),
])
def test_the_spec_concurrency_is_the_clients(spec, width, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    assert client_of(make_llm(parse_llm_spec(spec))).concurrency == width


def test_a_job_entry_concurrency_is_the_clients():
    entry = ModelSpec(spec="openai:m@http://127.0.0.1:9/v1", concurrency=96)
    assert client_of(make_llm(entry.parsed())).concurrency == 96
