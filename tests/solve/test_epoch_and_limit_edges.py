"""Two seams issue 53 (item 17) found untested: a request that is already seeded (self-consistency's n seeds, a
re-ask's moved seed) sent through a later epoch, and a sample's token limit met exactly at its bound. Fast: a
recording stand-in model, no Ray, no engine."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from emocaustics.models.base import ChatRequest, Completion, Sampling
from emocaustics.models.cache import request_key
from emocaustics.solve.item import EpochLLM, LimitedLLM, LimitReached

MESSAGES = ({"role": "user", "content": "q"},)


class Recorder:
    """Answers every request with `tokens` generated tokens and keeps what it was sent."""

    def __init__(self, tokens: int = 1) -> None:
        self.sent: list[ChatRequest] = []
        self.tokens = tokens

    async def generate(self, requests):
        self.sent.extend(requests)
        return [Completion(text="a", generated_tokens=self.tokens) for _ in requests]

    async def aclose(self) -> None:
        pass


def _through(epoch: int, requests: list[ChatRequest]) -> list[ChatRequest]:
    model = Recorder()
    asyncio.run((EpochLLM(model, epoch) if epoch > 1 else model).generate(requests))
    return model.sent


def test_already_seeded_requests_are_apart_in_every_epoch_and_in_the_cache():
    # self-consistency's five seeds, a re-ask's moved seed (1000), an unseeded request
    requests = [ChatRequest(MESSAGES, sampling=Sampling(seed=s, temperature=0.7)) for s in (0, 1, 2, 3, 4, 1000, None)]
    sent = {e: _through(e, requests) for e in (1, 2, 3)}
    keys = {e: [request_key("openai:m@http://x/v1", r) for r in sent[e]] for e in sent}
    every = [k for e in keys for k in keys[e]]
    assert len(set(every)) == len(every)  # no epoch's request is answered by another's (or its sibling's) cache entry
    assert [r.sampling.seed for r in sent[1]] == [0, 1, 2, 3, 4, 1000, None]  # epoch 1 as the solver asked
    # within an epoch the seeds keep their order and spacing: the vote still draws n different answers
    seeds = [r.sampling.seed for r in sent[2]]
    assert seeds[:5] == sorted(seeds[:5]) and len(set(seeds[:5])) == 5
    # the rest of the request is untouched
    assert all(dataclasses.replace(a, sampling=b.sampling) == b for a, b in zip(sent[1], sent[3]))


@pytest.mark.parametrize("per_call,calls,limit,fails", [
    (25, 2, 50, False),  # exactly at the limit: within it
    (25, 3, 50, True),   # 75 > 50
    (51, 1, 50, True),   # one token over, in the first call
    (50, 1, 50, False),
])
def test_the_token_limit_is_met_exactly_at_its_bound(per_call, calls, limit, fails):
    limited = LimitedLLM(Recorder(tokens=per_call), tokens=limit)

    async def ask() -> None:
        for _ in range(calls):
            await limited.generate([ChatRequest(MESSAGES)])

    if fails:
        with pytest.raises(LimitReached) as got:
            asyncio.run(ask())
        assert str(got.value.reason if hasattr(got.value, "reason") else got.value).endswith(f"> {limit} tokens")
        assert limited.over is not None
    else:
        asyncio.run(ask())
        assert limited.generated == per_call * calls and limited.over is None
