"""A job's dollars: each model's price (models/prices.py, with the job's `price:` overrides), the pre-flight check of
`max_cost_usd`, and the process-wide ledger a run spends against (models/budget.py, which raises the typed stop)."""

from __future__ import annotations

from typing import Any

from emocaustics.core.errors import UsageError
from emocaustics.jobs.spec import JobSpec
from emocaustics.models.prices import Price, price_for
from emocaustics.models.registry import is_remote


def _endpoints(job: JobSpec, configs: list[Any]) -> list[tuple[str, str, str, Price | None]]:
    """(where, name, spec, price) of every endpoint the configs (`jobs/configs.py`) or the judge call."""
    from emocaustics.jobs.configs import models_called

    prices = {c.model: c.price for c in configs if c.model}
    return [(where, name, spec, prices[name] if name in prices else
             price_for(spec, job.models[name].price if name in job.models else None))
            for where, name, spec in models_called(job, configs) if is_remote(spec)]


def check_budget(job: JobSpec, configs: list[Any]) -> None:
    """`max_cost_usd` needs a price for every endpoint the job calls: a usage error names the first without one."""
    if job.max_cost_usd is None:
        return
    from emocaustics.models.prices import table

    for where, _, spec, price in _endpoints(job, configs):
        if price is None:
            raise UsageError(f"{where}: max_cost_usd is set but {spec.split('?')[0]} has no known price (the shipped "
                             f"table of {table()['as_of']} does not list it): give its `price: {{input: USD, output: "
                             "USD}` per 1M tokens")  # not an f-string: one brace


def start_ledger(job: JobSpec, configs: list[Any]) -> None:
    """The run's ledger (models/budget.py): the limit, and the price of each endpoint by its endpoint name (after
    `check_budget`: a limit with an unpriced endpoint is a usage error)."""
    from emocaustics.models import budget

    check_budget(job, configs)
    from emocaustics.jobs.configs import judge_spec
    from emocaustics.models.spec import endpoint_name

    llms = {c.model: c.llm for c in configs if c.model}  # the judge, when it is no config's model: resolved here
    prices = {endpoint_name(llms[name] if name in llms else judge_spec(job)): p
              for _, name, _, p in _endpoints(job, configs) if p is not None}
    budget.activate(job.max_cost_usd, prices)
