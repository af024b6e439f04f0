"""A job resolved once: each expanded run becomes a frozen `Config` (task, validated options, the parsed model, its
folder, sample source, price, epochs, limits and the config it builds on), and every model the job calls (the judge
too) is parsed and priced once, before anything runs. Everything after this (pre-flight, dry run, cost, start,
solving, scoring) reads these fields: nothing downstream looks a model up again or parses a spec string."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from emocaustics.core.errors import UsageError
from emocaustics.core.task import Options, Task, builds_on, needs_model

if TYPE_CHECKING:
    from emocaustics.jobs.spec import JobSpec, SelectSpec
    from emocaustics.models.prices import Price
    from emocaustics.models.spec import LLMSpec
    from emocaustics.solve.plan import Limits


@dataclass(frozen=True)
class Config:
    """One expanded run of a job, resolved."""

    label: str
    task: Task
    options: Options
    model: str | None  # the job's model key (None: a calibration predictor, which asks no model)
    llm: LLMSpec | None  # that model parsed (`ModelSpec.parsed`); None without a model, or when its spec is malformed
    spec: str | None  # the model's spec as the job gives it (provenance, messages)
    kind: str  # calibration | engine-check (the smoke model) | model
    pred_dir: Path
    dataset: Any  # the task's validated `Dataset`
    select: SelectSpec | None  # applied to the loaded samples by `preflight.load_all`
    price: Price | None  # None: unknown (`preflight.check_budget`)
    batch: bool  # independent calls through a batch API
    epochs: int  # each sample solved this many times, then reduced by `reducer` (jobs/epochs.py)
    reducer: str
    limits: Limits | None  # per-sample limits; the time limit counts from the config's start (`Limits.started`)
    prior: Path | None = None  # the folder of the config this one builds on (`SideInputs.builds_on`), if the job has it


class Called(NamedTuple):
    """A model the job calls, resolved once: where the job names it (`models.NAME`, or `scoring.judge` for a judge
    given as a spec string, named by it), parsed (`ModelSpec.parsed`; a spec that does not parse: the UsageError that
    names it, which the pre-flight raises) and priced (models/prices.py, with the entry's `price:`; None: unknown)."""

    where: str
    name: str
    llm: LLMSpec | UsageError
    price: Price | None


@dataclass(frozen=True)
class Resolved:
    """A job resolved: its configs, those others build on first (`in_order`), and every model they or the judge call
    (the job's models by name, then a judge's spec string)."""

    job: JobSpec
    configs: list[Config]
    called: list[Called]
    judge: LLMSpec | UsageError | None  # `scoring.judge` as the model layer takes it (None: `none`)
    fields: dict[str, Any]  # what determines its results (`spec.result_fields`): run.json's `fields` and hash
    config_yaml: str  # the resolved spec (`spec.dump_job`): config.yaml, once the run folder is claimed
    run_order: list[Config]  # the configs in the order they run in (`in_order(..., to_run=True)`)


def resolve(job: JobSpec, run_dir: Path) -> Resolved:
    """The job resolved, its configs in the order they run in (`in_order`). A config another builds on (its
    predictions read as the other's input: EmoCaustics chains on sextuple windows) is solved in one epoch: of N, which
    one would it hand on? A UsageError naming both."""
    from emocaustics.jobs.spec import dump_job, result_fields

    runs = job.expand()  # once: the run folder's fields and config.yaml are made from the same expansion
    fields, config_yaml = result_fields(job, runs), dump_job(job, runs)
    sources = [(job.dataset_for(run), job.select_for(run)) for run in runs]  # each run's samples, as the job gives them
    called: dict[str, Called] = {}  # every model the job calls, resolved once (`_one` adds the configs')
    configs = [_one(run, source, job, run_dir, called) for run, source in zip(runs, sources)]
    candidates = [(c.task.name, c.options, c.model, c.label) for c in configs]
    by_label = {c.label: c for c in configs}
    out = []
    for c in configs:
        prior = by_label.get(builds_on(c.task, c.options, c.model, candidates))
        if prior is not None and prior.epochs > 1:
            raise UsageError(f"config {c.label} builds on config {prior.label}, which has epochs: {prior.epochs}; a "
                             "config others build on is solved once: give it epochs: 1 (the one building on it may "
                             "have more)")
        out.append(replace(c, prior=prior.pred_dir if prior is not None else None))
    judge = job.scoring.judge
    if judge != "none" and judge not in called:
        called[judge] = _called(job, judge)
    return Resolved(job, in_order(out), sorted(called.values(), key=lambda m: (m.where == "scoring.judge", m.name)),
                    called[judge].llm if judge in called else None, fields, config_yaml, in_order(out, to_run=True))


def in_order(configs: list[Config], *, to_run: bool = False) -> list[Config]:
    """Configs others build on first (`SideInputs.builds_on`: a config that reuses another config's predictions);
    `to_run` (the order they run in): then those that ask a model before the calibration ones, so that a job against a
    warm model reaches its first LLM call at once (the calibration rows' scoring would wait for the embedder's load
    first; warm_bench). The tables keep the job's order."""
    needed = {c.prior for c in configs if c.prior is not None}
    return sorted(configs, key=lambda c: (c.pred_dir not in needed, to_run and not needs_model(c.task, c.options)))


def _one(run: Any, source: tuple[dict[str, Any], SelectSpec | None], job: JobSpec, run_dir: Path,
         called: dict[str, Called]) -> Config:
    from emocaustics.scoring.reducers import reducers_of
    from emocaustics.solve.plan import Limits

    task, options = run.resolve()
    model = run.model if needs_model(task, options) else None
    entry = job.models[model] if model else None
    if model is not None and model not in called:
        called[model] = _called(job, model)
    got = called[model] if model is not None else None  # malformed: no llm here, and the pre-flight names it
    llm = got.llm if got is not None and not isinstance(got.llm, UsageError) else None
    kind = "calibration" if model is None else "engine-check" if llm is not None and llm.kind == "smoke" else "model"
    limits = Limits(tokens=run.token_limit, seconds=run.time_limit, config=run.config_time_limit)
    return Config(
        label=run.label, task=task, options=options, model=model, llm=llm, spec=entry.spec if entry else None,
        kind=kind, pred_dir=run_dir / "predictions" / run.label,
        dataset=task.Dataset.model_validate(source[0]), select=source[1],
        price=got.price if got is not None else None,
        batch=entry is not None and (entry.batch or (llm is not None and llm.batch.on)),
        epochs=run.epochs, reducer=run.reducer or reducers_of(task.Options)[1],
        limits=limits if limits.any else None)


def _called(job: JobSpec, name: str) -> Called:
    """A job model's entry (`ModelSpec.parsed`), or a spec string given where a model is named (the judge's), parsed
    and priced; a spec that does not parse gives the UsageError naming it, and no price."""
    from emocaustics.models.prices import price_for
    from emocaustics.models.spec import parse_llm_spec

    entry = job.models.get(name)
    where = f"models.{name}" if entry is not None else "scoring.judge"
    try:
        llm = entry.parsed() if entry is not None else parse_llm_spec(name)
    except UsageError as exc:
        return Called(where, name, exc, None)
    return Called(where, name, llm, price_for(llm, entry.price if entry is not None else None))
