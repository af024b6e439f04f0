"""A job's batch configs, solved together before its config loop.

The loop in jobs/runner.py solves one config after the other. For a model with `batch: true` that would cost one
provider turnaround per config (each up to the provider's 24 h window): K configs, K turnarounds in a row. So the
configs whose calls can go through a batch API together -- same model, the shared solving plan (solve/plan.py), no
config they build on -- are solved first, all at once, through ONE LLM object per model: their requests share its
batches, and the whole grid waits for one turnaround. The loop then scores them as usual (it finds every sample
solved or failed, and does not solve a failed one again: the batch already asked its failed lines again live).

Configs that build on another config keep their turn in the loop.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Callable

from emocaustics.core import aio
from emocaustics.core.task import Failure, Loaded, ScoreContext
from emocaustics.jobs.spec import JobSpec


def is_batched(job: JobSpec, model: str, llm_spec: str) -> bool:
    """Does this config's model send its independent calls through a batch API?"""
    return bool(job.models[model].batch) or "batch=true" in llm_spec


def solve_together(job: JobSpec, configs: list[Any], loaded: dict[str, Loaded], ctx: ScoreContext,
                   cache_dir: Path, spec_of: Callable[[Any], str], has_prior: Callable[[Any], bool],
                   log_for: Callable[[str], Any]) -> dict[str, list]:
    """Solve the batch configs that can share batches (two or more of them), all at once. Returns each solved
    config's prepared samples by label; the other configs are left to the loop."""
    chosen = [c for c in configs
              if c.task.needs_model(c.options) and not has_prior(c)
              and is_batched(job, c.model, spec_of(c))]
    if len(chosen) < 2:
        return {}
    prepared = {c.label: c.task.prepare(loaded[c.label].samples, c.options, ctx) for c in chosen}
    by_spec: dict[str, list[Any]] = {}
    for c in chosen:
        by_spec.setdefault(spec_of(c), []).append(c)
    print(f"batch: {len(chosen)} configs solved together ({', '.join(c.label for c in chosen)})", flush=True)
    aio.run(_solve_all(by_spec, prepared, cache_dir, log_for, ctx.embedder_spec))
    return prepared


async def _solve_all(by_spec: dict[str, list[Any]], prepared: dict[str, list], cache_dir: Path,
                     log_for: Callable[[str], Any], embedder_spec: str | None) -> None:
    from emocaustics.evallog import sink
    from emocaustics.models.factory import make_llm
    from emocaustics.solve.plan import asolve_samples

    llms = {spec: make_llm(spec, cache_dir=cache_dir) for spec in by_spec}

    async def one(cfg: Any, llm: Any) -> None:
        cfg.pred_dir.mkdir(parents=True, exist_ok=True)
        found = cfg.task.read_predictions(cfg.pred_dir)
        todo = [s for s in prepared[cfg.label] if s.id not in found or isinstance(found[s.id], Failure)]
        # every sample in flight: their calls join the same batches (live calls keep the model's concurrency)
        with sink.active(log_for(cfg.label)):  # a context variable: this task's own, not its siblings'
            await asolve_samples(cfg.task, todo, cfg.options, llm, cfg.pred_dir, concurrency=max(1, len(todo)),
                                 embedder_spec=embedder_spec)

    try:
        await asyncio.gather(*(one(c, llms[spec]) for spec, cfgs in by_spec.items() for c in cfgs))
    finally:  # an endpoint's HTTP session belongs to this loop
        for llm in llms.values():
            close = getattr(llm, "aclose", None)
            if close is not None:
                await close()
