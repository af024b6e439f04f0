"""A job resolved once: each expanded run becomes a frozen `Config` (task, validated options, the parsed model, its
folder, sample source, price, epochs, limits and the config it builds on) before anything runs. Everything after this
(pre-flight, dry run, solving, scoring, cost) reads these fields: nothing downstream looks a model up again or parses
a spec string."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
    price: Price | None  # None: unknown (jobs/cost.py)
    batch: bool  # independent calls through a batch API
    epochs: int  # each sample solved this many times, then reduced by `reducer` (jobs/epochs.py)
    reducer: str
    limits: Limits | None  # per-sample limits; the time limit counts from the config's start (`Limits.started`)
    prior: Path | None = None  # the folder of the config this one builds on (`SideInputs.builds_on`), if the job has it


def resolve(job: JobSpec, run_dir: Path) -> list[Config]:
    """Every config of the job, in the job's order. A config another builds on (its predictions read as the other's
    input: EmoCaustics chains on sextuple windows) is solved in one epoch: of N, which one would it hand on? A
    UsageError naming both."""
    runs = job.expand()
    configs = [_one(run, job, run_dir) for run in runs]
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
    return out


def _one(run: Any, job: JobSpec, run_dir: Path) -> Config:
    from emocaustics.models.prices import price_for
    from emocaustics.scoring.reducers import reducers_of
    from emocaustics.solve.plan import Limits

    task, options = run.resolve()
    model = run.model if needs_model(task, options) else None
    entry = job.models[model] if model else None
    got = _parsed(job, model) if entry is not None else None  # malformed: the pre-flight (or `checked`) names it
    llm = None if isinstance(got, UsageError) else got
    kind = "calibration" if model is None else "engine-check" if llm is not None and llm.kind == "smoke" else "model"
    limits = Limits(tokens=run.token_limit, seconds=run.time_limit, config=run.config_time_limit)
    return Config(
        label=run.label, task=task, options=options, model=model, llm=llm, spec=entry.spec if entry else None,
        kind=kind, pred_dir=run_dir / "predictions" / run.label,
        dataset=task.Dataset.model_validate(job.dataset_for(run)), select=job.select_for(run),
        price=price_for(llm, entry.price) if llm is not None and entry is not None else None,
        batch=entry is not None and (entry.batch or (llm is not None and llm.batch.on)),
        epochs=run.epochs, reducer=run.reducer or reducers_of(task.Options)[1],
        limits=limits if limits.any else None)


def models_called(job: JobSpec, configs: list[Config]) -> list[tuple[str, str, LLMSpec | UsageError]]:
    """(where, name, model) of every model the configs or the judge call: the job's models by name, then a judge given
    as a spec string (named by it); each model parsed (`ModelSpec.parsed`), or the UsageError that names its spec."""
    judge = job.scoring.judge
    names = sorted({c.model for c in configs if c.model} | ({judge} & set(job.models)))
    return [(f"models.{n}", n, _parsed(job, n)) for n in names] + (
        [("scoring.judge", judge, _parsed(job, judge))] if judge != "none" and judge not in job.models else [])


def judge_spec(job: JobSpec) -> LLMSpec | None:
    """The judge as the model layer takes it: a job model's entry, or the spec string `scoring.judge` names."""
    judge = None if job.scoring.judge == "none" else _parsed(job, job.scoring.judge)
    if isinstance(judge, UsageError):
        raise judge
    return judge


def _parsed(job: JobSpec, name: str) -> LLMSpec | UsageError:
    """A job model's entry (`ModelSpec.parsed`), or a spec string given where a model is named (the judge's); a spec
    that does not parse gives the UsageError naming it."""
    from emocaustics.models.spec import parse_llm_spec

    try:
        return job.models[name].parsed() if name in job.models else parse_llm_spec(name)
    except UsageError as exc:
        return exc
