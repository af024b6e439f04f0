"""One sample through its task's solver, next to the engine: the function `solve.plan` ships to a replica (or runs in
the driver for an endpoint), and the layer in front of the model that counts what the sample cost.

A work item (`Item`) is the sample's solver view (`SideInputs.solver_view`) with its `Placement` (read once, pickled
once if it goes to a replica), `embeddings` as the task's feed gave them (`SideInputs.feed`: rows from the feed in this
process, or from the run's board inside a replica); `epoch`: which epoch of the sample this is (`epochs: N`; from the
second on, `EpochLLM` moves every request's seed, and so its cache key, by the epoch); `limits`: the sample's limits
(`LimitedLLM`). Back comes a `Row`, its cost counted here only (calls: `CountingLLM`; re-asks, bad answers: `AskCounts`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from emocaustics.core.task import Failure, Options, Placement, Sample, Side, SolveFailed, Task
from emocaustics.models.base import Layer


@dataclass(frozen=True)
class Item:
    """One sample as it travels to its solver (the module docstring)."""

    sample: Sample
    placement: Placement
    epoch: int = 1
    limits: dict[str, Any] | None = None
    embeddings: Any = None


@dataclass
class Row:
    """One sample's result, from its solver to the store and the scorer: its `prediction`, or its `failure`; `stats`
    its cost (its stats.jsonl row, less the id); `log` and `replica` its calls for the eval log."""

    id: str
    prediction: Any = None
    failure: Failure | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    log: Any = None
    replica: str | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None

    def to_json(self) -> dict[str, Any]:
        """The row as `asolve_samples` returns it and the eval log takes it (without prediction and calls)."""
        failed = {} if self.failure is None else {"step": self.failure.step, "reason": self.failure.reason}
        return {"id": self.id, "ok": self.ok, **failed, "stats": self.stats}


@dataclass(slots=True)
class AskCounts:
    """What the solver's asker sees and the model layer cannot (`solve.ask.Asker`): answers that did not parse, and
    re-asks; one per sample while its solver runs (`SAMPLE_COUNTS`; outside a sample an asker has its own)."""

    unparseable: int = 0
    retries: int = 0

    def to_json(self) -> dict[str, int]:
        return dataclasses.asdict(self)


SAMPLE_COUNTS: ContextVar[AskCounts | None] = ContextVar("emocaustics_ask_counts", default=None)


class CountingLLM(Layer):
    """A layer in front of the model one sample's solver calls: `counts` what the solver asked of it."""

    def __init__(self, llm: Any) -> None:
        super().__init__(llm)
        self.counts: dict[str, int] = {"llm_calls": 0, "cache_hits": 0, "prompt_tokens": 0, "generated_tokens": 0}

    async def generate(self, requests: list[Any]) -> list[Any]:
        completions = await self.llm.generate(requests)
        counts = self.counts
        for c in completions:
            if c.cached:
                counts["cache_hits"] += 1
                continue
            counts["llm_calls"] += 1
            counts["prompt_tokens"] += int(c.prompt_tokens or 0)
            counts["generated_tokens"] += int(c.generated_tokens or 0)
            if c.batched:  # answered through a batch API: billed at its price (prices.py)
                for key, n in (("batch_calls", 1), ("batch_prompt_tokens", c.prompt_tokens),
                               ("batch_generated_tokens", c.generated_tokens)):
                    counts[key] = counts.get(key, 0) + int(n or 0)
        return completions


# Epoch e of a sample asks with seed + (e - 1) * EPOCH_SEED_STRIDE: a seed the task's own seeds (self-consistency's
# seed + i, a retry's seed + 1000) do not reach, so that no two epochs share a request, or its cached answer.
EPOCH_SEED_STRIDE = 100_003


class EpochLLM(Layer):
    """Epoch `epoch` (from 2) of a sample: each request's seed moved by the epoch, so that the epochs are sampled apart
    and answered apart by the response cache (whose key holds the seed). A greedy request still gives one answer."""

    def __init__(self, llm: Any, epoch: int) -> None:
        super().__init__(llm)
        self.offset = (epoch - 1) * EPOCH_SEED_STRIDE

    async def generate(self, requests: list[Any]) -> list[Any]:
        # an unseeded request takes the top of its epoch's band, apart from a request seeded 0 (the solvers' seeds
        # stay under the stride), so that two requests apart in epoch 1 stay apart in every epoch
        moved = [dataclasses.replace(r, sampling=dataclasses.replace(r.sampling, seed=self.offset + (
            EPOCH_SEED_STRIDE - 1 if r.sampling.seed is None else r.sampling.seed))) for r in requests]
        return await self.llm.generate(moved)


class LimitReached(SolveFailed):
    """A sample over one of its limits (`step` token_limit or time_limit): it ends as a failure row."""


class LimitedLLM(Layer):
    """The sample's limits, on every call its solver makes: `tokens` generated over its calls (cached answers too:
    a resumed sample meets its limit where the first attempt did), `seconds` from its first call, `left` seconds
    until its config's `config_time_limit` (`config` s). Once over, every further call raises `LimitReached`, and
    `over` keeps it, so that a solver that catches its own failures still ends as the limit's failure row."""

    def __init__(self, llm: Any, tokens: int | None = None, seconds: float | None = None,
                 left: float | None = None, config: float | None = None) -> None:
        super().__init__(llm)
        self.tokens, self.seconds, self.config = tokens, seconds, config
        self.deadline = None if left is None else time.monotonic() + left
        self.first: float | None = None
        self.generated = 0
        self.over: LimitReached | None = None

    def _left(self) -> tuple[float | None, str]:
        """Seconds this call may take, and which limit sets them (`sample` or `config`)."""
        now = time.monotonic()
        bounds = []
        if self.seconds is not None and self.first is not None:
            bounds.append((self.first + self.seconds - now, "sample"))
        if self.deadline is not None:
            bounds.append((self.deadline - now, "config"))
        return min(bounds) if bounds else (None, "")

    def _reached(self, which: str) -> LimitReached:
        if which == "config":
            return LimitReached("time_limit", f"config time_limit: {self.config:g} s reached while the sample ran")
        took = time.monotonic() - (self.first or 0.0)
        return LimitReached("time_limit", f"{took:.1f} > {self.seconds:g} s from the sample's first call")

    async def generate(self, requests: list[Any]) -> list[Any]:
        if self.over is not None:
            raise self.over
        if self.first is None:
            self.first = time.monotonic()
        left, which = self._left()
        try:
            if left is not None and left <= 0:
                raise TimeoutError
            completions = await (self.llm.generate(requests) if left is None
                                 else asyncio.wait_for(self.llm.generate(requests), left))
        except TimeoutError:
            still, _ = self._left()
            if left is None or (still is not None and still > 0):  # the model's own timeout, not a limit's
                raise
            self.over = self._reached(which)
            raise self.over from None
        self.generated += sum(int(c.generated_tokens or 0) for c in completions)
        if self.tokens is not None and self.generated > self.tokens:
            self.over = LimitReached("token_limit", f"{self.generated} > {self.tokens} tokens")
            raise self.over
        return completions


async def solve_item(task: Task, options: Options, llm: Any, item: Item, log_prompts: bool | None = None) -> Row:
    """One sample through the task's solver: its `Row`, with the prediction or the failure, and its cost; with
    `log_prompts` not None, its calls too (`row.log`, for the eval log; False: without prompt and answer text)."""
    from emocaustics.evallog.record import recording, replica_id

    sample = item.sample
    side = Side(embeddings=item.embeddings)  # its side inputs (the module docstring)
    t0 = time.perf_counter()
    row = Row(sample.id)
    counts = AskCounts()
    token = SAMPLE_COUNTS.set(counts)
    with recording(llm, bool(log_prompts)) as (recorded, rec):
        base = recorded if log_prompts is not None else llm
        if item.epoch > 1:
            base = EpochLLM(base, item.epoch)
        limited = LimitedLLM(base, **item.limits) if item.limits else None
        counted = CountingLLM(limited or base)
        try:
            # side inputs are the 4th argument of a task that has them: a task without need not declare it
            row.prediction = await task.solver.solve(counted, sample, options, *(() if task.side is None else (side,)))
        except SolveFailed as exc:
            row.failure = Failure(exc.step, exc.reason)
        finally:
            SAMPLE_COUNTS.reset(token)
        if limited is not None and limited.over is not None:  # over a limit, whatever the solver made of it
            row.prediction, row.failure = None, Failure(limited.over.step, limited.over.reason)
    row.stats = {**counted.counts, **counts.to_json(), **side.stats, "seconds": round(time.perf_counter() - t0, 3)}
    if log_prompts is not None:
        row.log, row.replica = rec.finished(), replica_id()
    return row


class Bound:
    """`solve_item` with its task and options bound: a picklable callable `(llm, item)` for `ModelPool.run`."""

    def __init__(self, task: Task, options: Options, log_prompts: bool | None = None) -> None:
        self.task, self.options, self.log_prompts = task, options, log_prompts
        self.__module__ = type(task).__module__  # so that a task defined in a test file travels by value

    async def __call__(self, llm: Any, item: Item) -> Row:
        return await solve_item(self.task, self.options, llm, item, self.log_prompts)
