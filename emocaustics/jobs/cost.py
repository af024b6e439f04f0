"""A job's dollars: each model's price (models/prices.py, with the job's `price:` overrides), the pre-flight check of
`max_cost_usd`, and the process-wide ledger a run spends against (models/budget.py, which raises the typed stop)."""

from __future__ import annotations

from typing import Any

from emocaustics.core.errors import UsageError
from emocaustics.jobs.spec import JobSpec
from emocaustics.models.prices import Price, price_for
from emocaustics.models.registry import is_remote


def _endpoints(job: JobSpec, configs: list[Any]) -> list[tuple[str, str, Price | None, Any]]:
    """(where, spec, price, parsed spec) of every endpoint the configs (`jobs/configs.py`) or the judge call; the
    judge's parsed spec is None here (`start_ledger` resolves it)."""
    models = {c.model: (c.spec, c.price, c.llm) for c in reversed(configs) if c.model}
    judge = job.scoring.judge
    if judge in job.models and judge not in models:
        models[judge] = (job.models[judge].spec, price_for(job.models[judge].spec, job.models[judge].price), None)
    out = [(f"models.{n}", spec, price, llm) for n, (spec, price, llm) in sorted(models.items()) if is_remote(spec)]
    if judge not in job.models and is_remote(judge):
        out.append(("scoring.judge", judge, price_for(judge), None))
    return out


def check_budget(job: JobSpec, configs: list[Any]) -> None:
    """`max_cost_usd` needs a price for every endpoint the job calls: a usage error names the first without one."""
    if job.max_cost_usd is None:
        return
    from emocaustics.models.prices import table

    for where, spec, price, _ in _endpoints(job, configs):
        if price is None:
            raise UsageError(f"{where}: max_cost_usd is set but {spec.split('?')[0]} has no known price (the shipped "
                             f"table of {table()['as_of']} does not list it): give its `price: {{input: USD, output: "
                             "USD}}` per 1M tokens")


def start_ledger(job: JobSpec, configs: list[Any]) -> None:
    """The run's ledger (models/budget.py): the limit, and the price of each endpoint by its endpoint name (after
    `check_budget`: a limit with an unpriced endpoint is a usage error)."""
    from emocaustics.models import budget

    check_budget(job, configs)
    from emocaustics.jobs.configs import judge_spec
    from emocaustics.models.spec import endpoint_name

    prices = {endpoint_name(llm or judge_spec(job)): p for _, _, p, llm in _endpoints(job, configs) if p is not None}
    budget.activate(job.max_cost_usd, prices)
