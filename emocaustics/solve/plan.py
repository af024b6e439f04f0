"""The solving plan of every task: each sample's solver (`core/contract.py`) runs next to the engine, many in flight.

    samples without a prediction -> solver views (`SideInputs.solver_view`, with the prediction of the config this one
    builds on) -> started largest first (`Placement.size`), up to `concurrency` at once (and, in the driver, a bound on
    text units in flight) -> `ModelPool.run(solve_item, [item])` inside the replica chosen by the task's affinity
    (samples sharing a prompt prefix share a replica, so its prefix cache hits), weight and chain -> prediction
    written the moment it finishes (the task's `store`: its own file format), or a failure row naming
    step and reason.

A typed stop from the model (`core.errors.Stop`: a dead endpoint, the job's budget, a model service gone) is no
sample's failure: it goes up through the solver, no further sample starts, and once the samples in flight have ended
it is raised to the caller. They end at once: the stopped model refuses their next call (a dead endpoint's calls in
flight are abandoned), while an answer already on its way, paid for, is kept. A sample the stop reached is not
written, so `--resume` runs it (its earlier calls answered by the response cache).

Side texts (`SideInputs.side_texts`) are embedded beside the calls by the task's own feed (`SideInputs.feed`); what it
gives a sample (`Side.embeddings`) goes with it to its solver, here or in its replica. Backends without actors
(OpenAI-/Anthropic-compatible endpoints, test doubles) run `solve_item` in this process. Per-sample cost (calls,
cache hits, tokens, seconds, and the solver's own counts) is written to `stats.jsonl` beside the predictions; both go
back to the caller in memory (`keep`), as reading them back would give them (the store's `read_back`, `sample_stats`).

Why not `ray.data.llm`'s processor: it is built for one-shot prompts; EmoCaustics `window` makes 5-40 dependent calls
per dialogue, so each sample runs as an async loop next to a long-lived engine instead (see docs/architecture.md).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from emocaustics.core.errors import Stop
from emocaustics.core.inflight import Slot, run_in_flight
from emocaustics.core.task import Failure, Options, Sample, Task
from emocaustics.core.writes import append_line, writing
from emocaustics.solve.item import Bound, CountingLLM, Item, Row  # noqa: F401 (CountingLLM: importable from here too)

log = logging.getLogger(__name__)

# Text units in flight when samples run in this process (an endpoint), whatever the concurrency: the EmoCaustics
# dataset's 256 longest dialogues hold 21,949 utterances (86 each), so a run of the dataset itself is never held back,
# and ten times the data holds about as much as the dataset (before: 2.3 times as much, 51,060; memory_bench). Per
# slot (96 each) it held a job's default 64 dialogues in flight to the 32 longest (window run over the dataset: 1.28
# times its floor, 1.19 with this bound; a dialogue's few kB of answers are not what a job's concurrency is chosen for)
UNITS_IN_FLIGHT = 256 * 96


LIMIT_STEPS = ("token_limit", "time_limit")  # the failure steps of a sample over a limit (`--retry-limits`)


@dataclass(frozen=True)
class Limits:
    """A config's per-sample limits: `tokens` generated and `seconds` from its first call per sample, and the
    monotonic `deadline` its `config_time_limit` (`config`, seconds) sets for its samples (`solve/item.py`)."""

    tokens: int | None = None
    seconds: float | None = None
    config: float | None = None
    deadline: float | None = None

    @property
    def any(self) -> bool:
        return self.tokens is not None or self.seconds is not None or self.config is not None

    def started(self) -> Limits:
        """These limits as the config starts: its time limit counted from now."""
        return replace(self, deadline=None if self.config is None else time.monotonic() + self.config)

    def of_sample(self) -> dict[str, Any]:
        """What travels with a sample's item to `LimitedLLM`."""
        left = None if self.deadline is None else self.deadline - time.monotonic()
        return {"tokens": self.tokens, "seconds": self.seconds, "left": left, "config": self.config}

    def late(self) -> str | None:
        """The failure reason of a sample the config's time limit stops before it starts."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return f"config time_limit: {self.config:g} s reached before the sample started"
        return None


async def asolve_samples(task: Task, samples: Sequence[Sample], options: Options, llm: Any, out: Path, *,
                         concurrency: int = 256, prior: Path | None = None, embedder_spec: str | None = None,
                         marks: dict[str, float] | None = None,
                         on_row: Callable[[Row], None] | None = None,
                         stopped: list[Stop] | None = None, epoch: int = 1, limits: Limits | None = None,
                         keep: Callable[[str, Any, dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Solve `samples` (rows back in their order); `prior`: the folder of the config this one builds on;
    `samples` may be a lazy sequence (a streaming source that builds sample i when indexed): the plan reads each
    sample when it needs it and holds it only while it is in flight, so the samples of a run are never all held here;
    `embedder_spec`: the job's embedder, for tasks with side texts; `marks` gets phase times (startup_bench);
    `on_row` sees each row as it is written (progress); `stopped`: the typed stops of this run, shared by configs
    solved side by side (a stop in one starts no sample in any); `epoch`: which epoch of the samples this is
    (`solve/item.py`); `limits`: the config's per-sample limits (a sample over one is a failure row); `keep(sample id,
    prediction or Failure, stats row)` gets each written sample's row in memory, as the store and `sample_stats`
    would read it back (`read_back`), so that a job scores from memory."""
    from emocaustics.evallog import sink
    from emocaustics.models.base import as_model
    from emocaustics.models.local import RunFailure

    marks = marks if marks is not None else {}
    evlog = sink.current()  # the job's eval log of this config, if any (evallog/sink.py)
    fn = Bound(task, options, None if evlog is None else evlog.prompts)
    llm = as_model(llm)  # the whole model interface (models/base.py), whatever was handed in
    in_process = not llm.runs_remotely
    side = task.side  # the task's optional side inputs (`core.contract.SideInputs`)
    priors = side.read_prior(prior, samples) if side is not None and prior is not None else {}

    def view_of(sample: Sample) -> Sample:  # made when the sample starts: views are not all held at once
        p = priors.get(sample.id)
        return sample if side is None else side.solver_view(sample, options, None if isinstance(p, Failure) else p)

    texts = {s.id: t for s in samples if side is not None and not isinstance(priors.get(s.id), Failure)
             if (t := side.side_texts(view_of(s), options)) is not None}
    feed = await side.feed(texts, options, embedder_spec, in_process, marks) if side is not None and texts else None

    async def solve_one(sample: Sample) -> Row:
        view = view_of(sample)  # placed on what travels (the size, read on the sample, ordered the run)
        item = Item(view, task.solver.placement(view, options), epoch,
                    limits.of_sample() if limits is not None and limits.any else None,
                    feed.embeddings(view.id) if feed is not None and view.id in texts else None)  # rows awaited later
        res = (await llm.run(fn, [item], lambda it: it.placement.affinity, weight_key=lambda it: it.placement.weight,
                             chain_key=lambda it: it.placement.chain))[0]
        if isinstance(res, RunFailure):  # the solver itself crashed, or its replica died for good
            res = Row(view.id, failure=Failure("runner", res.reason))
        return res

    stops = stopped if stopped is not None else []

    async def one(sized: tuple[Sample, int], slot: Slot) -> dict[str, Any] | None:
        sample = sized[0]
        if stops:  # admitted while the run was stopping: not started
            return None
        p = priors.get(sample.id)
        late = limits.late() if limits is not None else None  # the config's time_limit passed: not started
        try:
            row = (Row(sample.id, failure=p) if isinstance(p, Failure)
                   else Row(sample.id, failure=Failure("time_limit", late)) if late else await solve_one(sample))
        except Stop as stop:  # not this sample's failure: it is not done, and no other sample starts
            stops.append(stop)
            return None
        await slot.release()  # solved: the log line and the files need no bound
        if evlog is not None:  # handed to the log's writer process, which catches up behind (never waited for here)
            evlog.emit(sample.id, {**row.to_json(), "replica": row.replica, "log": row.log})
        row.log = None  # written: not held for the whole config
        with writing(out):  # a task's own file that cannot be written (a full disk) stops the run: `WriteFailed`
            task.store.write_prediction(out, sample.id, row.failure or row.prediction)  # a Failure: a failure row
            if row.failure is not None:
                # one line per sample that failed for good: the re-asks before it stay silent (an answer the solver's
                # fallback read is no failure); a typed stop is no sample's failure and is named once by its caller
                log.warning("%s: sample %s failed at %s: %s", task.name, sample.id, row.failure.step,
                            row.failure.reason[:300])
            append_line(out / "stats.jsonl", json.dumps({"id": sample.id, **row.stats}))
        if keep is not None:
            keep(sample.id, task.store.read_back(sample.id, row.failure or row.prediction), row.stats)
        row.prediction = None  # kept (or not): not held for the whole config
        if on_row is not None:
            on_row(row)
        return row.to_json()

    # Largest first: the longest chain of dependent calls sets the run's length, and with more samples than
    # `concurrency` a long one must not wait behind short ones. Samples run in this process hold their answers until
    # they end, so their text units in flight are bounded too (core/inflight.py): ten times the data does not put ten
    # copies of the longest samples in memory at once. Not when the caller asked for every sample in flight (a batch
    # API collects them all into one batch). Each sample's size is read once (ints: a lazy source's samples are built
    # and dropped here), for the order and the bound; its view's placement, read as it starts, goes with it to the pool.
    sizes = [max(1, task.solver.placement(s, options).size) for s in samples]
    order = sorted(range(len(samples)), key=lambda i: -sizes[i])
    bounded = in_process and concurrency < len(samples)
    marks["first_submitted"] = time.time()
    try:
        started = ((samples[i], sizes[i]) for i in order if not stops)  # each built as it starts; none once stopped
        rows = await run_in_flight(started, one, limit=concurrency, weight=lambda sized: sized[1],
                                   budget=UNITS_IN_FLIGHT if bounded else None)
    finally:
        if feed is not None:
            await feed.close()
    if stops:
        raise stops[0]
    by_index = dict(zip(order, rows))
    return [by_index[i] for i in range(len(samples))]  # type: ignore[misc]



def sample_stats(out: Path) -> dict[str, dict[str, Any]]:
    """Per-sample cost figures the plan wrote to `out/stats.jsonl` (llm_calls, cache_hits, tokens, seconds)."""
    path = out / "stats.jsonl"
    stats: dict[str, dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                stats[str(row.pop("id"))] = row
    return stats
