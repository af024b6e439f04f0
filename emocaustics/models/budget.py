"""A job's dollar budget (`max_cost_usd`), checked before every call to a priced endpoint.

Each request first reserves what it may cost at most: its prompt counted generously (UTF-8 bytes / 2 per message plus
overhead, at or above the tokens a BPE tokenizer makes of English or CJK text) and `max_tokens` of answer, at the
model's price. A request whose reservation would take spent + reserved past the limit is not sent: it raises
`BudgetReached` (core/errors.py: a typed stop), and so does every later one. When an answer comes, its reservation
is replaced by what the endpoint reported it used. So the budget is never crossed by calls in flight, and a stop
leaves at most one reservation's worth unspent.

The ledger is process-wide (`activate`), counts the calls of this invocation only (the response cache answers a
resumed run's earlier calls for free), and is consulted by `BudgetLLM`, which `models.factory.make_llm` puts around
an endpoint's client, behind the dead-endpoint breaker's queue (a request reserves only once it is about to be
sent) and inside the response cache (cache hits cost nothing). The stop goes up through the solving plan, where no
further sample starts and those in flight end (an answer already paid for is kept; a sample the stop reached is not
written as failed: it is simply not done); the job runner prints it once, with the limit, what was spent and the
command that continues, and exits with status 6.
"""

from __future__ import annotations

import threading
from typing import Any

from emocaustics.core.errors import BudgetReached
from emocaustics.models.base import ChatRequest, Completion, Layer
from emocaustics.models.prices import Price

BUDGET_REACHED = "cost budget reached"
MESSAGE_OVERHEAD = 8  # tokens of a chat message's role and separators, generously


def reserve_tokens(request: ChatRequest) -> int:
    """An upper estimate of a request's prompt tokens (see the module docstring)."""
    return sum(len(m.get("content", "").encode("utf-8")) // 2 + MESSAGE_OVERHEAD for m in request.messages)


class Ledger:
    """Spent and reserved dollars of this process against `limit_usd`, and the price of each priced model."""

    def __init__(self, limit_usd: float | None, prices: dict[str, Price] | None = None) -> None:
        self.limit_usd = limit_usd
        self.prices = dict(prices or {})  # by model name as `make_llm` names the endpoint (its canonical spec)
        self.spent = 0.0
        self.reserved = 0.0
        self.stopped = False
        self._lock = threading.Lock()

    def reserve(self, usd: float) -> bool:
        with self._lock:
            if self.limit_usd is not None and (self.stopped or self.spent + self.reserved + usd > self.limit_usd):
                self.stopped = True
                return False
            self.reserved += usd
            return True

    def settle(self, reserved: float, actual: float) -> None:
        with self._lock:
            self.reserved = max(0.0, self.reserved - reserved)
            self.spent += actual

    def stop(self) -> BudgetReached:
        """The typed stop a refused reservation raises: the limit, and what this run spent."""
        return BudgetReached(f"{BUDGET_REACHED}: max_cost_usd {self.limit_usd:g} (spent {self.spent:.4f} USD in this "
                             f"run, {self.reserved:.4f} USD in flight); the next call could cross it")


_active: Ledger | None = None


def activate(limit_usd: float | None, prices: dict[str, Price]) -> Ledger:
    """Make a fresh ledger the process's (a job run calls this once before its first config)."""
    global _active
    _active = Ledger(limit_usd, prices)
    return _active


def active() -> Ledger | None:
    return _active


class BudgetLLM(Layer):
    """A layer in front of a remote provider's client: each request reserves its cost before it is sent (see the
    module docstring)."""

    def __init__(self, llm: Any, ledger: Ledger, price: Price) -> None:
        super().__init__(llm)
        self.ledger, self.price = ledger, price

    async def _one(self, request: ChatRequest) -> Completion:
        hold = self.price.cost(reserve_tokens(request), int(request.sampling.max_tokens or 0))
        if not self.ledger.reserve(hold):
            raise self.ledger.stop()
        actual = 0.0
        try:
            answer = (await self.llm.generate([request]))[0]
            actual = self.price.cost(answer.prompt_tokens, answer.generated_tokens)
            return answer
        finally:
            self.ledger.settle(hold, actual)

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        from emocaustics.models.breaker import answers_or_stop

        return await answers_or_stop([self._one(r) for r in requests])


def guard(llm: Any, name: str) -> Any:
    """`llm` behind the active ledger's budget when a limit is set and the model `name` is priced, else as it is."""
    ledger = _active
    if ledger is None or ledger.limit_usd is None or name not in ledger.prices:
        return llm
    return BudgetLLM(llm, ledger, ledger.prices[name])
