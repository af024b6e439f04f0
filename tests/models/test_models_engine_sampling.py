"""Seeded sampling on the real vLLM CPU engine: self-consistency (`samples > 1`) must not kill the replica.

Seeded requests at temperature > 0 whose prompt is prefilled in chunks used to kill the CPU engine core (vLLM
rewinds the request's generator with a CUDA-only call: models/vllm_cpu_worker.py), and with it every AER question
asked with `samples: 3`.
"""

from __future__ import annotations

import asyncio

import pytest

from emocaustics.models.base import ChatRequest, Sampling
from emocaustics.tasks.aer.solver import ANSWER_BUDGETS, ANSWER_SCHEMAS, ask_samples

pytestmark = pytest.mark.engine

SYSTEM = {"role": "system", "content": "You answer multiple-choice questions about causes of events."}


async def _prefill_batch(llm, _item):
    """Runs inside the replica actor: the most prompt tokens one engine step takes."""
    return int(llm._actor._engine.vllm_config.scheduler_config.max_num_batched_tokens)


def _long_question(tokens_over: int) -> str:
    line = "Document {i}: the council delayed the vote, the workers went on strike, and prices rose. "
    text = "".join(line.format(i=i) for i in range(max(1, tokens_over // 80)))  # ~100 tokens a line
    return f"{text}\nTarget event: the strike.\nA. the delay\nB. the prices\nC. the weather\nD. the vote\n"


def test_self_consistency_samples_answer_without_killing_the_replica(smoke_pool) -> None:
    before = asyncio.run(smoke_pool.stats())
    (batch,) = asyncio.run(smoke_pool.run(_prefill_batch, [0]))
    messages = (SYSTEM, {"role": "user", "content": _long_question(2 * batch)})
    attempts = asyncio.run(ask_samples(smoke_pool, messages, "zero-shot", samples=3, temperature=0.7, seed=11,
                                       affinity="sc-test"))
    assert len(attempts) == 3
    assert all(a.letters for a in attempts), [a.reason for a in attempts]
    after = asyncio.run(smoke_pool.stats())
    assert after["engine_starts"] == before["engine_starts"], "the replica's engine died and was restarted"
    assert after["retried"] == before["retried"]

    # A seed gives the same answer however the prompt was prefilled: asked alone now, the prompt comes from the
    # prefix cache in one step, where above it was prefilled in chunks beside two other requests.
    schema = ANSWER_SCHEMAS["zero-shot"]
    (again,) = asyncio.run(smoke_pool.generate([ChatRequest(
        messages=messages, schema=schema, affinity="sc-test",
        sampling=Sampling(max_tokens=ANSWER_BUDGETS["zero-shot"], temperature=0.7, seed=11))]))
    assert again.ok, again.error
    assert again.text == attempts[0].raw
    # the attempts' prompt (the same messages) really was longer than one step's prefill: the case that used to kill
    # the engine core (an attempt keeps no token count: the cost is counted in the model layer)
    assert again.prompt_tokens > batch, (again.prompt_tokens, batch)
