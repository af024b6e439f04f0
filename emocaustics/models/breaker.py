"""A circuit breaker in front of a remote endpoint: after N connection failures in a row, stop calling it.

A dead endpoint otherwise costs every sample the client's full retry schedule (~40 s per dialogue) and a 400-sample
job grinds for hours. After `limit` consecutive requests that end in a connection error or a timeout (each already
retried by the client), every further request fails at once with a reason that starts with `ENDPOINT_DOWN` and
names the endpoint; any answer in between resets the count. The job runner sees that reason in the failure rows
(in any process, Ray workers included) and stops the job with exit status 4; finished samples are kept and
`--resume` continues.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from emocaustics.models.base import ChatRequest, Completion
from emocaustics.models.gate import PriorityGate

ENDPOINT_DOWN = "endpoint down"
DEFAULT_LIMIT = 5
# Completion errors (see openai_chat._reason / anthropic_chat._reason) that mean "nobody answered".
CONNECTION_ERRORS = ("connection error", "timeout")


class BreakerLLM:
    """Wraps a remote LLM (`OpenAIChatLLM`, `AnthropicChatLLM`); everything but `generate` and `run` passes through."""

    runs_remotely = False

    def __init__(self, llm: Any, endpoint: str, limit: int = DEFAULT_LIMIT, concurrency: int = 16) -> None:
        self.llm = llm
        self.endpoint = endpoint
        self.limit = max(1, int(limit))
        self.concurrency = max(1, int(concurrency))
        self.consecutive = 0
        self.last_error = ""
        self.tripped = False
        self._lock = threading.Lock()
        # Requests wait here, not inside the client, so that a request queued when the breaker trips is never sent.
        self._gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, PriorityGate] = (
            weakref.WeakKeyDictionary())

    def __getattr__(self, name: str) -> Any:
        return getattr(self.llm, name)

    def down_reason(self) -> str:
        return (f"{ENDPOINT_DOWN}: {self.endpoint} failed {self.consecutive} requests in a row "
                f"(last: {self.last_error}); stopped calling it")

    def _count(self, answers: list[Completion]) -> None:
        with self._lock:
            for c in answers:
                if c.error and c.error.startswith(CONNECTION_ERRORS):
                    self.consecutive += 1
                    self.last_error = c.error
                    if self.consecutive >= self.limit:
                        self.tripped = True
                elif not (c.error and c.error.startswith(ENDPOINT_DOWN)):
                    self.consecutive = 0

    def _gate(self) -> PriorityGate:
        loop = asyncio.get_running_loop()
        if loop not in self._gates:
            self._gates[loop] = PriorityGate(self.concurrency)
        return self._gates[loop]

    async def _one(self, request: ChatRequest) -> Completion:
        async with self._gate().slot(request.priority):  # the longest dependent chain first (models/gate.py)
            if self.tripped:
                return Completion(text="", error=self.down_reason())
            answer = (await self.llm.generate([request]))[0]
        self._count([answer])
        return answer

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        return list(await asyncio.gather(*(self._one(r) for r in requests)))

    async def run(self, fn: Callable[[Any, Any], Awaitable[Any]], items: list[Any],
                  affinity_key: Callable[[Any], str] | None = None, *,
                  weight_key: Callable[[Any], int] | None = None) -> list[Any]:
        from emocaustics.models.local import run_local

        return await run_local(self, fn, items)


def endpoint_down(reasons: list[str]) -> str | None:
    """The first failure reason that says an endpoint was given up on, if any (reasons may carry a step prefix)."""
    return next((r[r.index(ENDPOINT_DOWN):] for r in reasons if ENDPOINT_DOWN + ": " in r), None)
