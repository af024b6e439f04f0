"""The default solver plan of every task: each sample's `Task.solve` runs next to the engine, many in flight.

    samples without a prediction -> (up to `concurrency` at once) `ModelPool.run(solve_item, [sample])` inside the
    replica chosen by the task's affinity (samples sharing a prompt prefix share a replica, so its prefix cache hits)
    and weight -> prediction written the moment it finishes, or a failure row naming step and reason.

Backends without actors (OpenAI-/Anthropic-compatible endpoints, test doubles) run `solve_item` in this process.
Per-sample cost (calls, cache hits, tokens, seconds) is counted by a thin wrapper around the model and written to
`stats.jsonl` beside the predictions.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emocaustics.core import aio
from emocaustics.core.inflight import Slot, run_in_flight
from emocaustics.core.task import Failure, Options, Sample, SolveFailed, Task

log = logging.getLogger(__name__)


@dataclass
class CountingLLM:
    """Counts what one sample's solver asked of the model; everything else passes through."""

    llm: Any
    stats: dict[str, int] = field(default_factory=lambda: {"llm_calls": 0, "cache_hits": 0, "prompt_tokens": 0,
                                                           "generated_tokens": 0})

    async def generate(self, requests: list[Any]) -> list[Any]:
        completions = await self.llm.generate(requests)
        for c in completions:
            if getattr(c, "cached", False):
                self.stats["cache_hits"] += 1
            else:
                self.stats["llm_calls"] += 1
                self.stats["prompt_tokens"] += int(getattr(c, "prompt_tokens", 0) or 0)
                self.stats["generated_tokens"] += int(getattr(c, "generated_tokens", 0) or 0)
                if getattr(c, "batched", False):  # answered through a batch API: billed at its price (prices.py)
                    for key in ("batch_calls", "batch_prompt_tokens", "batch_generated_tokens"):
                        self.stats.setdefault(key, 0)
                    self.stats["batch_calls"] += 1
                    self.stats["batch_prompt_tokens"] += int(getattr(c, "prompt_tokens", 0) or 0)
                    self.stats["batch_generated_tokens"] += int(getattr(c, "generated_tokens", 0) or 0)
        return completions

    def __getattr__(self, name: str) -> Any:
        return getattr(self.llm, name)


async def solve_item(task: Task, options: Options, llm: Any, item: dict[str, Any],
                     log_prompts: bool | None = None) -> dict[str, Any]:
    """One sample through the task's solver: a result row with the prediction or the failure, and its cost; with
    `log_prompts` not None, its calls too (`row["log"]`, for the eval log; False: without prompt and answer text)."""
    from emocaustics.evallog.record import recording, replica_id

    sample = Sample.from_json(item)
    t0 = time.perf_counter()
    row: dict[str, Any] = {"id": sample.id, "ok": False}
    with recording(llm, bool(log_prompts)) as (recorded, rec):
        counted = CountingLLM(recorded if log_prompts is not None else llm)
        try:
            row["prediction"] = await task.solve(counted, sample, options)
            row["ok"] = True
        except SolveFailed as exc:
            row["step"], row["reason"] = exc.step, exc.reason
    row["stats"] = {**counted.stats, "seconds": round(time.perf_counter() - t0, 3)}
    if log_prompts is not None:
        row["log"], row["replica"] = rec.finished(), replica_id()
    return row


class _Bound:
    """`solve_item` with its task and options bound: a picklable callable `(llm, item)` for `ModelPool.run`."""

    def __init__(self, task: Task, options: Options, log_prompts: bool | None = None) -> None:
        self.task, self.options, self.log_prompts = task, options, log_prompts
        self.__module__ = type(task).__module__  # so that a task defined in a test file travels by value

    async def __call__(self, llm: Any, item: dict[str, Any]) -> dict[str, Any]:
        return await solve_item(self.task, self.options, llm, item, self.log_prompts)


async def asolve_samples(task: Task, samples: list[Sample], options: Options, llm: Any, out: Path, *,
                         concurrency: int = 256) -> list[dict[str, Any]]:
    from emocaustics.evallog import sink
    from emocaustics.models.local import RunFailure, run_item

    log = sink.current()  # the job's eval log of this config, if any (evallog/sink.py)
    fn = _Bound(task, options, None if log is None else log.prompts)
    run = getattr(llm, "run", None)

    async def one(sample: Sample, slot: Slot) -> dict[str, Any]:
        item = sample.to_json()
        if run is not None:
            res = (await run(fn, [item], lambda it: task.affinity(Sample.from_json(it), options),
                             weight_key=lambda it: task.weight(Sample.from_json(it), options)))[0]
        else:
            res = await run_item(llm, fn, item)
        await slot.release()  # solved: the log line and the files need no bound
        if isinstance(res, RunFailure):  # the solver itself crashed, or its replica died for good
            res = {"id": sample.id, "ok": False, "step": "runner", "reason": res.reason, "stats": {}}
        if log is not None:  # before the prediction: a sample with a prediction always has its log line
            written = log.emit(sample.id, res)
            if written is not None:  # the log's writer process chunks and stages it: the prediction waits for its line
                await asyncio.wrap_future(written)
        res.pop("log", None)  # written: not held for the whole config
        if res["ok"]:
            task.write_prediction(out, sample.id, res["prediction"])
        else:
            task.write_failure(out, sample.id, Failure(res["step"], res["reason"]))
            _warn_failed(task, sample.id, res["step"], res["reason"])
        with (out / "stats.jsonl").open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"id": sample.id, **res.get("stats", {})}) + "\n")
        return res

    return await run_in_flight(samples, one, limit=concurrency)


def _warn_failed(task: Task, sample_id: str, step: str, reason: str) -> None:
    """One line per sample that failed for good. The requests and re-asks before it stay silent (an answer the
    solver's fallback read is no failure); a dead endpoint is named once, when the job stops (jobs/runner.py)."""
    from emocaustics.models.breaker import ENDPOINT_DOWN

    if ENDPOINT_DOWN + ": " not in reason:
        log.warning("%s: sample %s failed at %s: %s", task.name, sample_id, step, reason[:300])


def solve_samples(task: Task, samples: list[Sample], options: Options, *, llm_spec: str, out: Path,
                  cache_dir: Path | None, concurrency: int = 256) -> list[dict[str, Any]]:
    """Solve the samples that have no prediction in `out` yet (failed ones are tried again)."""
    from emocaustics.models.pool import _pickle_by_value_if_local
    from emocaustics.models.factory import make_llm
    from emocaustics.models.spec import REMOTE_KINDS, parse_llm_spec

    out.mkdir(parents=True, exist_ok=True)
    done = {k for k, v in task.read_predictions(out).items() if not isinstance(v, Failure)}
    todo = [s for s in samples if s.id not in done]
    if not todo:
        return []
    if parse_llm_spec(llm_spec).kind not in REMOTE_KINDS:
        from emocaustics.models.pool import get_pool

        get_pool(llm_spec)  # the driver owns the replicas (see the EmoCaustics plan's note on actor lifetimes)
        _pickle_by_value_if_local(type(task))
    llm = make_llm(llm_spec, cache_dir=cache_dir)

    async def solve_and_close() -> list[dict[str, Any]]:
        try:
            return await asolve_samples(task, todo, options, llm, out, concurrency=concurrency)
        finally:  # an endpoint's HTTP session belongs to this loop: closed before the loop ends, not left to the GC
            close = getattr(llm, "aclose", None)
            if close is not None:
                await close()

    return aio.run(solve_and_close())
