"""A job's dollars: each model's price (models/prices.py, with the job's `price:` overrides), the pre-flight check of
`max_cost_usd`, and the process-wide ledger a run spends against (models/budget.py, which raises the typed stop)."""

from __future__ import annotations

from typing import Any

from emocaustics.core.errors import UsageError
from emocaustics.jobs.spec import JobSpec
from emocaustics.models.prices import Price, price_for
from emocaustics.models.registry import is_remote
from emocaustics.models.spec import LLMSpec


def _endpoints(job: JobSpec, configs: list[Any]) -> list[tuple[str, LLMSpec, Price | None]]:
    """(where, model, price) of every endpoint the configs (`jobs/configs.py`) or the judge call (a spec that does not
    parse is left to the pre-flight, which names it)."""
    from emocaustics.jobs.configs import models_called

    prices = {c.model: c.price for c in configs if c.model}
    return [(where, llm, prices[name] if name in prices else
             price_for(llm, job.models[name].price if name in job.models else None))
            for where, name, llm in models_called(job, configs) if isinstance(llm, LLMSpec) and is_remote(llm)]


def check_budget(job: JobSpec, configs: list[Any]) -> None:
    """`max_cost_usd` needs a price for every endpoint the job calls: a usage error names the first without one."""
    if job.max_cost_usd is None:
        return
    from emocaustics.models.prices import table

    for where, llm, price in _endpoints(job, configs):
        if price is None:
            raise UsageError(f"{where}: max_cost_usd is set but {llm.identity} has no known price (the shipped "
                             f"table of {table()['as_of']} does not list it): give its `price: {{input: USD, output: "
                             "USD}` per 1M tokens")  # not an f-string: one brace


def start_ledger(job: JobSpec, configs: list[Any]) -> None:
    """The run's ledger (models/budget.py): the limit, and the price of each endpoint by its endpoint name (after
    `check_budget`: a limit with an unpriced endpoint is a usage error)."""
    from emocaustics.models import budget
    from emocaustics.models.spec import endpoint_name

    check_budget(job, configs)
    prices = {endpoint_name(llm): p for _, llm, p in _endpoints(job, configs) if p is not None}
    budget.activate(job.max_cost_usd, prices)
