"""A job's dollars: each model's price (models/prices.py, with the job's `price:` overrides) and the pre-flight check
of `max_cost_usd`, whose prices the run's ledger spends against (made in the start phase: models/budget.py, which
raises the typed stop)."""

from __future__ import annotations

from emocaustics.core.errors import UsageError
from emocaustics.jobs.configs import Resolved
from emocaustics.models.prices import Price, price_for, table
from emocaustics.models.spec import LLMSpec, endpoint_name


def check_budget(resolved: Resolved) -> dict[str, Price]:
    """The price of every remote endpoint the configs (`jobs/configs.py`) or the judge call, by its endpoint name (a
    spec that does not parse is left to the pre-flight, which names it). `max_cost_usd` needs a price for each: a
    usage error names the first without one."""
    job = resolved.job
    by_model = {c.model: c.price for c in resolved.configs if c.model}
    out = {}
    for where, name, llm in resolved.called:
        if not isinstance(llm, LLMSpec) or not llm.remote:
            continue
        price = by_model[name] if name in by_model else price_for(llm, job.models[name].price
                                                                  if name in job.models else None)
        if price is not None:
            out[endpoint_name(llm)] = price
        elif job.max_cost_usd is not None:
            raise UsageError(f"{where}: max_cost_usd is set but {llm.identity} has no known price (the shipped "
                             f"table of {table()['as_of']} does not list it): give its `price: {{input: USD, output: "
                             "USD}` per 1M tokens")  # not an f-string: one brace
    return out
