"""A replica counts the requests it is answering (a model service's idle clock reads `inflight` and `last_request`:
models/services.py) and the usage of what it answered. In-process, with `_one` standing in for the engine."""

from __future__ import annotations

import asyncio

import pytest

from emocaustics.models.base import ChatRequest, Completion, Sampling
from emocaustics.models.vllm_actor import VLLMEngineActor


def test_requests_are_in_flight_while_answered_and_counted_after_even_when_one_raises():
    actor = VLLMEngineActor("m", {}, "vllm:m")
    actor._engine = object()  # an engine never reached: `_one` answers
    seen: list[int] = []

    async def one(request: ChatRequest) -> Completion:
        seen.append(actor._inflight)
        await asyncio.sleep(0)
        if request.sampling.max_tokens == 13:
            raise RuntimeError("boom")
        return Completion(text="ok", prompt_tokens=3, generated_tokens=1)

    actor._one = one  # type: ignore[method-assign]
    before = actor.last_request
    requests = [ChatRequest(messages=({"role": "user", "content": "hi"},), sampling=Sampling(max_tokens=8))] * 3
    done = asyncio.run(actor.generate(requests))
    assert [c.text for c in done] == ["ok"] * 3 and seen == [3, 3, 3] and actor._inflight == 0
    assert actor.last_request >= before
    stats = asyncio.run(actor.stats())
    assert stats["inflight"] == 0 and stats["prompt_tokens"] == 9
    bad = ChatRequest(messages=({"role": "user", "content": "hi"},), sampling=Sampling(max_tokens=13))
    with pytest.raises(RuntimeError, match="boom"):
        asyncio.run(actor.generate([bad]))
    assert actor._inflight == 0  # a failed batch is no longer in flight
