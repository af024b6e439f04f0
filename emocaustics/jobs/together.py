"""A job's model configs, solved on one plan before its configs are scored: every config that asks a model, all at
once (a lone config is a group of one).

Through ONE LLM object per model: their requests share its batches and its limits.
- a model with `batch: true`: one provider turnaround for every config's independent calls (one after the other, K
  configs took K turnarounds of up to the provider's 24 h window);
- a model in engines of this cluster (`smoke`, `vllm:`): one config's independent calls fill the engine's
  batches while another's `window` chain waits on its own answers (one after the other, the job lasted the sum of
  every config's own length);
- an endpoint billed per call: its configs side by side behind the model's one `concurrency` gate (models/breaker.py).
A config that builds on another one (`SideInputs.builds_on`) starts the moment that one has finished. Samples with a
prediction are not solved again (failed ones are: a batch already asked its failed lines again live; those over a
limit only with `--retry-limits`), and a config of N epochs solves only the epochs a stopped run left; each config's
progress line counts its samples as the plan writes them. Each sample's row comes back in memory as it is written
(`Solved`); a resume reads what earlier runs wrote (`epochs.found_per_epoch`, which `resume_line` reads too: this
is the one read back of a job). The loop in jobs/runner.py then scores the configs from those rows.

A typed stop (a dead endpoint, the budget, a service gone: core/errors.py `Stop`) in one config starts no further
sample in any; the samples in flight end (their answers kept), then the stop is raised.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from emocaustics.core import aio
from emocaustics.core.errors import Stop
from emocaustics.core.progress import Progress
from emocaustics.core.task import Failure, Loaded, ScoreContext, needs_model
from emocaustics.jobs.epochs import epoch_label, found_per_epoch, to_solve
from emocaustics.jobs.spec import JobSpec

if TYPE_CHECKING:
    from emocaustics.jobs.configs import Config


def solve_together(job: JobSpec, configs: list[Config], loaded: dict[str, Loaded], ctx: ScoreContext,
                   log_for: Callable[[str], Any], clock_for: Callable[[str], Any],
                   retry_limits: bool = False) -> dict[str, Solved]:
    """Solve every config that asks a model, all at once (each one's model, batch flag, limits and the config it
    builds on as the job was resolved: jobs/configs.py). Returns each one's prepared samples and rows by label (the
    configs without a model are not here). `clock_for(label)`: a clock (`stop()`) that times a config's own solving,
    from its start (after the config it builds on) to its end. A config builds only on another model config
    (`builds_on`). A config of N epochs solves its samples N times, one epoch after the other, each into its own
    folder (jobs/epochs.py); `retry_limits`: a resume solves the samples that failed over a limit again too."""
    chosen = [c for c in configs if needs_model(c.task, c.options)]
    if not chosen:
        return {}
    prepared, spent = {}, {}
    for c in chosen:  # a config's prepare counts in its wall time (AER's retrieval embeds the topics' documents)
        t0 = time.perf_counter()
        prepared[c.label] = c.task.solver.prepare(loaded[c.label].samples, c.options, ctx)
        spent[c.label] = time.perf_counter() - t0
    if len(chosen) > 1:
        print(f"solve: {len(chosen)} configs together ({', '.join(c.label for c in chosen)})", flush=True)
    solved = {c.label: Solved(prepared[c.label]) for c in chosen}

    def clock(label: str) -> Any:  # the config's clock, started its prepare's seconds ago
        started = clock_for(label)
        started.t0 -= spent[label]
        return started

    aio.run(_solve_all(job, chosen, solved, ctx.cache, log_for, ctx.embedder_spec, clock, retry_limits))
    return solved


@dataclass
class Solved:
    """A config's prepared samples, and per epoch its rows as its folder holds them: predictions (a Failure for a
    failed sample) and stats rows by sample id, in the samples' order. The rows this process solved come from
    memory (`asolve_samples`'s `keep`); a resume reads the rest from the folder (the one read back of a job)."""

    samples: list
    epochs: list[tuple[dict[str, Any], dict[str, dict[str, Any]]]] = field(default_factory=list)

    def epoch(self, e: int) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """Epoch `e`'s predictions (in the samples' order, then any id that is no sample's, then a Failure for each
        sample with nothing written: the rule `score TASK` shares, `core.predictions.pair`) and stats rows."""
        from emocaustics.core.predictions import pair

        predictions, stats = self.epochs[e - 1]
        found = {s.id: predictions[s.id] for s in self.samples if s.id in predictions} | predictions
        return pair(self.samples, found).predictions, stats


def solved_counts(solved: dict[str, Solved]) -> dict[str, int]:
    """run.json's `samples` and `failed_samples` of a run solved and not scored (`--no-score`), per sample and epoch:
    a sample with no prediction written failed, as the score verb counts it."""
    answered = [x.id in p and not isinstance(p[x.id], Failure) for s in solved.values() for p, _ in s.epochs
                for x in s.samples]
    return {"samples": len(answered), "failed_samples": answered.count(False)}


async def _solve_all(job: JobSpec, chosen: list[Config], solved: dict[str, Solved], cache_dir: Path,
                     log_for: Callable[[str], Any], embedder_spec: str | None,
                     clock_for: Callable[[str], Any], retry_limits: bool) -> None:
    from emocaustics.evallog import sink
    from emocaustics.models.factory import make_llm
    from emocaustics.solve.plan import asolve_samples, sample_stats

    # one LLM per model, its spec parsed where the job was resolved (`ModelSpec.parsed`)
    by_key = {c.llm.canonical(): c.llm for c in chosen}
    llms = {key: make_llm(spec, cache_dir=cache_dir) for key, spec in by_key.items()}
    finished = {c.pred_dir: asyncio.Event() for c in chosen}  # by folder: what a config names the one it builds on
    stopped: list[Stop] = []  # a typed stop in one config starts no further sample in any (solve/plan.py)

    async def one(cfg: Config) -> None:
        prior = cfg.prior
        if prior is not None:  # the config it builds on, solved beside it: its predictions first
            await finished[prior].wait()
        if stopped:  # the job is stopping: this config does not start (resume solves it)
            finished[cfg.pred_dir].set()
            return
        clock = clock_for(cfg.label)
        progress: Progress | None = None
        try:  # the clock is stopped and saved however this config ends (a sibling's error cancels it)
            epochs, samples = cfg.epochs, solved[cfg.label].samples
            todos = []  # per epoch: its folder and the samples it solves (a resume: those not done)
            for e, out, found in found_per_epoch(cfg):  # a resume: what earlier runs wrote (fresh: nothing)
                out.mkdir(parents=True, exist_ok=True)
                solved[cfg.label].epochs.append((found, sample_stats(out) if found else {}))
                todos.append((e, out, [s for s in samples if to_solve(found.get(s.id), retry_limits)]))
            # each config's own progress; configs side by side print plain lines even on a terminal (their live
            # lines would overwrite each other)
            total = len(samples) * epochs
            progress = Progress(f"solve {cfg.label}", total)
            progress.live = progress.live and len(chosen) == 1
            progress.done = total - sum(len(todo) for _, _, todo in todos)
            limits = cfg.limits.started() if cfg.limits is not None else None  # its time limit counts from here
            for e, out, todo in todos:
                predictions, stats = solved[cfg.label].epochs[e - 1]
                if not todo:
                    continue

                def keep(sid: str, value: Any, row: dict[str, Any], predictions=predictions, stats=stats) -> None:
                    predictions[sid], stats[sid] = value, row

                # batch: every sample in flight, so that their calls join the same batches (live calls keep the
                # model's concurrency); else the job's concurrency per config
                concurrency = max(1, len(todo)) if cfg.batch else job.concurrency
                # a context variable: this config's (and epoch's) own log, not its siblings'
                with sink.active(log_for(epoch_label(cfg.label, e, epochs))):
                    await asolve_samples(cfg.task, todo, cfg.options, llms[cfg.llm.canonical()], out,
                                         concurrency=concurrency, prior=prior, embedder_spec=embedder_spec,
                                         on_row=lambda row: progress.update(1, failed=0 if row.ok else 1),
                                         stopped=stopped, epoch=e, limits=limits, keep=keep)
        except Stop:  # not an error of this config: its siblings end their samples in flight (none starts), then
            pass  # the stop is raised below
        finally:
            if progress is not None:
                progress.close()
            clock.stop()
            finished[cfg.pred_dir].set()  # a config waiting on this one then sees the stop, or its predictions

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
