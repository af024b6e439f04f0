"""A job's model configs, solved together before its config loop.

The loop in jobs/runner.py scores one config after the other. Solving them one after the other as well cost twice:
- a model with `batch: true`: one provider turnaround per config (each up to the provider's 24 h window): K configs,
  K turnarounds in a row;
- a model in engines of this cluster (`smoke`, `vllm:`, `hf:`): each config's samples alone in the engine's batches,
  so the job lasted the sum of every config's own length. A `window` config's dependent calls leave a CPU engine's
  batches half empty for most of its run, and the other configs' independent calls can fill them.
So the configs that ask such a model (through the shared solving plan, solve/plan.py) are solved first, all at once,
through ONE LLM object per model: their requests share its batches. A config that builds on another one
(`Task.builds_on`) starts the moment that one has finished. The loop then scores them as usual: it finds every sample
solved or failed, and does not solve a failed one again (a batch already asked its failed lines again live).

Endpoints without `batch` (a hosted API, billed per call) keep their turn in the loop, and configs that build on a
config left to the loop stay there too. A typed stop (a dead endpoint, the budget: core/errors.py `Stop`) in one
config starts no further sample in any; the samples in flight end (their answers kept), then the stop is raised.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Callable

from emocaustics.core import aio
from emocaustics.core.errors import Stop
from emocaustics.core.progress import Progress
from emocaustics.core.task import Failure, Loaded, ScoreContext
from emocaustics.jobs.spec import JobSpec


def is_batched(job: JobSpec, model: str, llm_spec: str) -> bool:
    """Does this config's model send its independent calls through a batch API?"""
    return bool(job.models[model].batch) or "batch=true" in llm_spec


def solve_together(job: JobSpec, configs: list[Any], loaded: dict[str, Loaded], ctx: ScoreContext,
                   cache_dir: Path, spec_of: Callable[[Any], str], prior_of: Callable[[Any], Path | None],
                   log_for: Callable[[str], Any], clock_for: Callable[[str], Any] | None = None) -> dict[str, list]:
    """Solve the configs that can share their model's batches (two or more of them), all at once. Returns each
    solved config's prepared samples by label; the other configs are left to the loop. `clock_for(label)`: a clock
    (`stop()`) that times a config's own solving, from its start (after the config it builds on) to its end."""
    from emocaustics.models.registry import is_remote

    def shares(c: Any) -> bool:
        return is_batched(job, c.model, spec_of(c)) or not is_remote(spec_of(c))

    chosen = [c for c in configs if c.task.needs_model(c.options) and shares(c)]
    by_dir = {c.pred_dir: c for c in chosen}
    while True:  # a config whose prior is left to the loop is left there too (and so are the configs on it)
        kept = [c for c in chosen if (p := prior_of(c)) is None or p in by_dir]
        if len(kept) == len(chosen):
            break
        chosen, by_dir = kept, {c.pred_dir: c for c in kept}
    if len(chosen) < 2:
        return {}
    prepared = {c.label: c.task.prepare(loaded[c.label].samples, c.options, ctx) for c in chosen}
    specs = {c.label: spec_of(c) for c in chosen}
    _start_local(chosen, specs)
    print(f"solve: {len(chosen)} configs together ({', '.join(c.label for c in chosen)})", flush=True)
    aio.run(_solve_all(job, chosen, prepared, specs, {c.label: prior_of(c) for c in chosen}, by_dir, cache_dir,
                       log_for, ctx.embedder_spec, clock_for))
    return prepared


def _start_local(chosen: list[Any], specs: dict[str, str]) -> None:
    """The pools of the local models, in this (main) thread as the plan's `solve_samples` does: `ray.init` installs
    signal handlers, and the driver owns the replicas. The job has started them already; this finds them."""
    from emocaustics.models.registry import is_remote

    local = [c for c in chosen if not is_remote(specs[c.label])]
    if not local:
        return
    from emocaustics.core.cluster import connect
    from emocaustics.models.pool import _pickle_by_value_if_local, get_pool

    connect()
    for c in local:
        get_pool(specs[c.label])
        _pickle_by_value_if_local(type(c.task))


async def _solve_all(job: JobSpec, chosen: list[Any], prepared: dict[str, list], specs: dict[str, str],
                     priors: dict[str, Path | None], by_dir: dict[Path, Any], cache_dir: Path,
                     log_for: Callable[[str], Any], embedder_spec: str | None,
                     clock_for: Callable[[str], Any] | None) -> None:
    from emocaustics.evallog import sink
    from emocaustics.models.factory import make_llm
    from emocaustics.solve.plan import asolve_samples

    llms = {spec: make_llm(spec, cache_dir=cache_dir) for spec in set(specs.values())}
    finished = {c.label: asyncio.Event() for c in chosen}
    stopped: list[Stop] = []  # a typed stop in one config starts no further sample in any (solve/plan.py)

    async def one(cfg: Any) -> None:
        prior = priors[cfg.label]
        if prior is not None:  # the config it builds on, solved beside it: its predictions first
            await finished[by_dir[prior].label].wait()
        if stopped:  # the job is stopping: this config does not start (resume solves it)
            finished[cfg.label].set()
            return
        clock = clock_for(cfg.label) if clock_for is not None else None
        try:  # the clock is stopped and saved however this config ends (a sibling's error cancels it)
            cfg.pred_dir.mkdir(parents=True, exist_ok=True)
            found = cfg.task.read_predictions(cfg.pred_dir)
            todo = [s for s in prepared[cfg.label] if s.id not in found or isinstance(found[s.id], Failure)]
            # each config's own progress, as plain lines even on a terminal: live lines of configs side by side would
            # overwrite each other
            progress = Progress(f"solve {cfg.label}", len(prepared[cfg.label]))
            progress.live = False
            progress.done = len(prepared[cfg.label]) - len(todo)
            batched = is_batched(job, cfg.model, specs[cfg.label])
            # batch: every sample in flight, so that their calls join the same batches (live calls keep the model's
            # concurrency); an engine: the job's concurrency per config, as in the loop
            concurrency = max(1, len(todo)) if batched else job.concurrency
            with sink.active(log_for(cfg.label)):  # a context variable: this task's own, not its siblings'
                await asolve_samples(cfg.task, todo, cfg.options, llms[specs[cfg.label]], cfg.pred_dir,
                                     concurrency=concurrency, prior=prior, embedder_spec=embedder_spec,
                                     on_row=lambda row: progress.update(1, failed=0 if row.get("ok") else 1),
                                     stopped=stopped)
            progress.close()
        except Stop:  # not an error of this config: its siblings end their samples in flight (none starts), then
            pass  # the stop is raised below
        finally:
            if clock is not None:
                clock.stop()
            finished[cfg.label].set()  # a config waiting on this one then sees the stop, or its predictions

    try:
        async with asyncio.TaskGroup() as group:  # one config's error stops its siblings
            for cfg in chosen:
                group.create_task(one(cfg))
    except BaseExceptionGroup as errors:  # the first error as itself, as the loop raises
        raise errors.exceptions[0] from None
    finally:
        for llm in llms.values():  # an endpoint's HTTP session belongs to this loop
            await llm.aclose()
    if stopped:
        raise stopped[0]
