"""A job's dollars: each model's price (models/prices.py, with the job's `price:` overrides), the pre-flight check of
`max_cost_usd`, and the process-wide ledger a run spends against (models/budget.py, which raises the typed stop)."""

from __future__ import annotations

from typing import Any

from emocaustics.core.errors import UsageError
from emocaustics.jobs.spec import JobSpec
from emocaustics.models.prices import Price, price_for
from emocaustics.models.registry import is_remote


def model_price(job: JobSpec, name: str | None) -> Price | None:
    """The price of the job's model `name` (None: no model, or unknown)."""
    if name is None or name not in job.models:
        return None
    m = job.models[name]
    return price_for(m.spec, m.price)


def _endpoints(job: JobSpec, configs: list[Any]) -> list[tuple[str, str, Price | None]]:
    """(where, spec, price) of every endpoint the configs or the judge call."""
    out = []
    names = sorted({c.model for c in configs if c.model} | ({job.scoring.judge} & set(job.models)))
    for n in names:
        if is_remote(job.models[n].spec):
            out.append((f"models.{n}", job.models[n].spec, model_price(job, n)))
    judge = job.scoring.judge
    if judge not in job.models and is_remote(judge):
        out.append(("scoring.judge", judge, price_for(judge)))
    return out


def check_budget(job: JobSpec, configs: list[Any]) -> None:
    """`max_cost_usd` needs a price for every endpoint the job calls: a usage error names the first without one."""
    if job.max_cost_usd is None:
        return
    from emocaustics.models.prices import table

    for where, spec, price in _endpoints(job, configs):
        if price is None:
            raise UsageError(f"{where}: max_cost_usd is set but {spec.split('?')[0]} has no known price (the shipped "
                             f"table of {table()['as_of']} does not list it): give its `price: {{input: USD, output: "
                             "USD}}` per 1M tokens")


def start_ledger(job: JobSpec, configs: list[Any]) -> None:
    """The run's ledger (models/budget.py): the limit, and the price of each endpoint by its endpoint name (after
    `check_budget`: a limit with an unpriced endpoint is a usage error)."""
    from emocaustics.models import budget

    check_budget(job, configs)
    from emocaustics.models.spec import endpoint_name, parse_llm_spec

    prices = {endpoint_name(parse_llm_spec(spec)): p for _, spec, p in _endpoints(job, configs) if p is not None}
    budget.activate(job.max_cost_usd, prices)


def dollars(price: Price | None, prompt_tokens: int, generated_tokens: int) -> str:
    """A forecast or a total in dollars, or "unknown"."""
    return "unknown" if price is None else f"${price.cost(prompt_tokens, generated_tokens):,.4f}"
