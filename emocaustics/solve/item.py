"""One sample through its task's solver, next to the engine: the function `solve.plan` ships to a replica (or runs in
the driver for an endpoint), and the layer in front of the model that counts what the sample cost.

A work item is the sample's JSON (`SideInputs.solver_view`) plus `side`: where its embeddings come
from (packed with the item, a ticket to the run's embedding board, or a lazy source in this process).
"""

from __future__ import annotations

import time
from typing import Any

from emocaustics.core.task import Options, Sample, Side, SolveFailed, Task
from emocaustics.models.base import Layer
from emocaustics.solve.side import EmbeddingFailed, Embeddings, unpack


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


def side_of(item: dict[str, Any]) -> Side:
    """The sample's side inputs as its solver sees them: where its embeddings come from (see the module docstring)."""
    raw = item.get("side") or {}
    emb = None
    if raw.get("emb") is not None:
        emb = Embeddings(unpack(raw["emb"]))
    elif raw.get("emb_board") is not None:
        from emocaustics.solve.embedboard import board_embeddings

        emb = board_embeddings(*raw["emb_board"])
    elif raw.get("emb_source") is not None:
        emb = raw["emb_source"]
    return Side(embeddings=emb)


async def solve_item(task: Task, options: Options, llm: Any, item: dict[str, Any],
                     log_prompts: bool | None = None) -> dict[str, Any]:
    """One sample through the task's solver: a result row with the prediction or the failure, and its cost; with
    `log_prompts` not None, its calls too (`row["log"]`, for the eval log; False: without prompt and answer text)."""
    from emocaustics.evallog.record import recording, replica_id

    sample = Sample.from_json(item)
    side = side_of(item)
    t0 = time.perf_counter()
    row: dict[str, Any] = {"id": sample.id, "ok": False}
    with recording(llm, bool(log_prompts)) as (recorded, rec):
        counted = CountingLLM(recorded if log_prompts is not None else llm)
        try:
            row["prediction"] = await (task.solver.solve(counted, sample, options) if task.side is None
                                       else task.side.solve_with(counted, sample, options, side))
            row["ok"] = True
        except SolveFailed as exc:
            row["step"], row["reason"] = exc.step, exc.reason
        except EmbeddingFailed as exc:  # the feed's failure, raised where the solver first awaited its rows
            row["step"], row["reason"] = "embedding", str(exc)
    row["stats"] = {**counted.counts, **side.stats, "seconds": round(time.perf_counter() - t0, 3)}
    if log_prompts is not None:
        row["log"], row["replica"] = rec.finished(), replica_id()
    return row


class Bound:
    """`solve_item` with its task and options bound: a picklable callable `(llm, item)` for `ModelPool.run`."""

    def __init__(self, task: Task, options: Options, log_prompts: bool | None = None) -> None:
        self.task, self.options, self.log_prompts = task, options, log_prompts
        self.__module__ = type(task).__module__  # so that a task defined in a test file travels by value

    async def __call__(self, llm: Any, item: dict[str, Any]) -> dict[str, Any]:
        return await solve_item(self.task, self.options, llm, item, self.log_prompts)
