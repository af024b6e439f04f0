"""A job's dollars: the pre-flight check of `max_cost_usd` against each model's price (set where the job is resolved,
jobs/configs.py: models/prices.py with the job's `price:`), whose prices the run's ledger spends against (made in the
start phase: models/budget.py, which raises the typed stop)."""

from __future__ import annotations

from emocaustics.core.errors import UsageError
from emocaustics.jobs.configs import Resolved
from emocaustics.models.prices import Price, table
from emocaustics.models.spec import LLMSpec, endpoint_name


def check_budget(resolved: Resolved) -> dict[str, Price]:
    """The price of every remote endpoint the configs or the judge call (priced where the job was resolved:
    `jobs/configs.py`), by its endpoint name (a spec that does not parse is left to the pre-flight, which names it).
    `max_cost_usd` needs a price for each: a usage error names the first without one."""
    out = {}
    for where, _, llm, price in resolved.called:
        if not isinstance(llm, LLMSpec) or not llm.remote:
            continue
        if price is not None:
            out[endpoint_name(llm)] = price
        elif resolved.job.max_cost_usd is not None:
            raise UsageError(f"{where}: max_cost_usd is set but {llm.identity} has no known price (the shipped "
                             f"table of {table()['as_of']} does not list it): give its `price: {{input: USD, output: "
                             "USD}` per 1M tokens")  # not an f-string: one brace
    return out
