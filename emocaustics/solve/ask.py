"""Asking a model for typed answers, for every task: batching, retries, failure reasons and per-sample accounting.

Every extraction step goes through `ask_many`: it sends one batch of chat requests, parses each answer into its
pydantic record, re-asks the ones that failed (with a new seed, so that a deterministic answer that did not parse is
not simply repeated — and not served again from the response cache), and raises `StepFailed` naming the step and the
last reason when an answer is still bad after the retries. Nothing is skipped silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from emocaustics.core.answers import check_answer_schema
from emocaustics.evallog.record import note
from emocaustics.solve.item import SAMPLE_COUNTS, AskCounts
from emocaustics.solve.schema import Unparseable, token_budget, validate_answer
from emocaustics.core.task import SolveFailed
from emocaustics.models.base import LLM, ChatRequest, ErrorKind, Sampling

M = TypeVar("M", bound=BaseModel)


# A step that gave up: the core's SolveFailed (the runner turns it into a failure row naming step and reason).
StepFailed = SolveFailed


class ContextExceeded(StepFailed):
    """The prompt is longer than the model's context (a Completion of kind `ErrorKind.CONTEXT_LENGTH`, set by the
    client that saw it); never retried, reported for the dialogue instead of truncating it."""


@dataclass(frozen=True, slots=True)
class Ask(Generic[M]):
    step: str  # where in the method, for failure reasons: "pass1 window 3 (items 15-19)"
    user: str
    model: type[M]
    schema: dict[str, Any]
    priority: int = 0  # see ChatRequest.priority: minus the dependent calls that follow this one in sequence
    # Messages before the user turn (system prompt, few-shot turns); None: the Asker's own `system`. Shared prefixes
    # go first so that the engine's prefix cache serves them.
    prefix: tuple[dict[str, str], ...] | None = None
    sampling: Sampling | None = None  # None: greedy on the first attempt, seeded sampling on retries
    # A step of a dependent chain (a window whose answer the next window's prompt shows, a merge of a chain's
    # answers): sent live under `batch: true` (ChatRequest.live); re-asks are always live.
    live: bool = False


@dataclass(slots=True)
class Asker:
    """The model plus the run's settings. `stats`: the running sample's re-asks and unparseable answers (its calls,
    cache hits and tokens are counted by the layer in front of the model: `solve.item.CountingLLM`)."""

    llm: LLM
    system: str | None = None  # the task's system prompt (None: no system message)
    affinity: str | None = None
    retries: int = 2
    max_tokens_cap: int = 4096
    stats: AskCounts = field(default_factory=lambda: SAMPLE_COUNTS.get() or AskCounts())  # the sample's
    retry_reasons: list[str] = field(default_factory=list)  # why answers were re-asked (first few kept)

    def _request(self, ask: Ask[Any], attempt: int, budget: int) -> ChatRequest:
        # attempt 0 is greedy; a retry samples with another seed so that it can come out differently
        if ask.sampling is not None:
            base = ask.sampling
            sampling = Sampling(max_tokens=min(base.max_tokens, budget), temperature=base.temperature if attempt == 0
                                else max(base.temperature, 0.7), top_p=base.top_p,
                                seed=(base.seed or 0) + 1000 * attempt)
        else:
            sampling = Sampling(max_tokens=budget, temperature=0.0 if attempt == 0 else 0.7, seed=attempt)
        prefix = ask.prefix if ask.prefix is not None else (
            ({"role": "system", "content": self.system},) if self.system else ())
        return ChatRequest(messages=(*prefix, {"role": "user", "content": ask.user}), schema=ask.schema,
                           sampling=sampling, affinity=self.affinity, priority=ask.priority,
                           live=ask.live or attempt > 0)

    async def ask_many(self, asks: list[Ask[M]]) -> list[M]:
        results: list[M | None] = [None] * len(asks)
        reasons: list[str] = [""] * len(asks)
        pending = list(range(len(asks)))
        budgets: dict[int, int] = {}  # by schema object: a step's asks share one schema, walk it once
        for a in asks:
            if id(a.schema) not in budgets:
                check_answer_schema(a.schema, a.model.__name__)  # a task that did not declare answer_models
                budgets[id(a.schema)] = min(token_budget(a.schema), self.max_tokens_cap)
        for attempt in range(self.retries + 1):
            if not pending:
                break
            if attempt:
                self.stats.retries += len(pending)
            requests = [self._request(asks[i], attempt, budgets[id(asks[i].schema)]) for i in pending]
            completions = await self.llm.generate(requests)
            if len(completions) != len(pending):
                raise StepFailed(asks[pending[0]].step, f"backend returned {len(completions)} answers for {len(pending)} requests")
            still: list[int] = []
            for i, c, request in zip(pending, completions, requests):
                note(request, step=asks[i].step, attempt=attempt)  # the eval log's record of this call
                if c.error is not None:
                    if c.kind is ErrorKind.CONTEXT_LENGTH:
                        raise ContextExceeded(asks[i].step, f"prompt exceeds the model's context: {c.error}")
                    reasons[i] = f"model error: {c.error}"
                    still.append(i)
                    continue
                try:
                    results[i] = validate_answer(asks[i].model, c.parsed, c.text)
                except Unparseable as exc:
                    self.stats.unparseable += 1
                    reasons[i] = f"unparseable answer: {exc}"
                    note(request, step=asks[i].step, attempt=attempt, parse_error=str(exc))
                    still.append(i)
            for i in still:
                if len(self.retry_reasons) < 10:
                    self.retry_reasons.append(f"{asks[i].step}: {reasons[i]}")
            pending = still
        if pending:
            i = pending[0]
            more = f" (and {len(pending) - 1} more in this step)" if len(pending) > 1 else ""
            raise StepFailed(asks[i].step, f"{reasons[i]} after {self.retries + 1} attempts{more}")
        return [r for r in results if r is not None]

    async def ask(self, ask: Ask[M]) -> M:
        return (await self.ask_many([ask]))[0]
