"""Dollars per token: the shipped price table (`prices.json`, with the date its figures were read) and what a call
costs.

A model's price is, in this order: the job's `models.NAME.price` (any field it gives; the rest from the table), else
the table's entry for the endpoint's model name (exact, or the name with a date or `-latest` suffix:
`gpt-4o-2024-08-06` is priced as `gpt-4o`), else unknown. An unknown price is `None` everywhere, never 0: a cost
column shows it empty ("unknown"), and a job with `max_cost_usd` that would call an unpriced endpoint is a usage error
before anything starts. Local engines (`smoke`, `vllm:`) are not billed per token: unknown unless the job prices them.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

PER = 1_000_000  # prices are USD per 1M tokens
_SUFFIX = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$")


class PriceOverride(BaseModel):
    """A job's `price:` of a model: any of Price's fields; the missing ones come from the table (where it has the
    model), else input and output are required."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    input: float | None = Field(None, ge=0)
    output: float | None = Field(None, ge=0)
    cached_input: float | None = Field(None, ge=0)
    batch_input: float | None = Field(None, ge=0)
    batch_output: float | None = Field(None, ge=0)


class Price(PriceOverride):
    """USD per 1M tokens: the override's fields, input and output required. Cached input defaults to the input price,
    batch prices to half the live ones (the providers' batch discount)."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)

    def cost(self, prompt_tokens: int, generated_tokens: int, cached_tokens: int = 0, *, batch: bool = False) -> float:
        """USD of one call (or of summed token counts); `cached_tokens` are part of `prompt_tokens`."""
        fresh = max(0, prompt_tokens - cached_tokens)
        if batch:
            inp = self.input / 2 if self.batch_input is None else self.batch_input
            out = self.output / 2 if self.batch_output is None else self.batch_output
        else:
            inp, out = self.input, self.output
        cached = self.input if self.cached_input is None else self.cached_input
        return (fresh * inp + cached_tokens * cached + generated_tokens * out) / PER


@functools.lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    """The shipped table: {"as_of": DATE, "source": ..., "models": {name: Price fields}}."""
    return json.loads((Path(__file__).with_name("prices.json")).read_text(encoding="utf-8"))


def listed(name: str | None) -> Price | None:
    """The table's price of a model name (exact, or with a date / `-latest` suffix), else None."""
    if not name:
        return None
    models = table()["models"]
    for candidate in (name, _SUFFIX.sub("", name)):
        if candidate in models:
            return Price(**models[candidate])
    return None


def price_for(spec: Any, override: PriceOverride | None = None) -> Price | None:
    """A model's price (see the module docstring), of its `LLMSpec`: the endpoint's model name where its provider
    bills per call (`LLMSpec.priced`); None when unknown."""
    base = listed(spec.model if spec.priced else None)
    if override is None:
        return base
    given = override.model_dump(exclude_none=True)
    merged = {**(base.model_dump() if base is not None else {}), **given}
    if "input" not in merged or "output" not in merged:
        return None
    return Price(**merged)


def sample_cost(price: Price | None, stats: dict[str, Any]) -> float | None:
    """USD of one sample's recorded calls (its stats row: prompt_tokens, generated_tokens, cached_prompt_tokens and
    batch_* counts where recorded); None when the price is unknown and calls were made."""
    prompt, generated = int(stats.get("prompt_tokens", 0) or 0), int(stats.get("generated_tokens", 0) or 0)
    if price is None:
        return 0.0 if prompt == 0 and generated == 0 else None
    cached = int(stats.get("cached_prompt_tokens", 0) or 0)
    # Tokens of calls answered through a batch API (models/batch.py) are part of the totals, billed at batch prices.
    bp, bg = int(stats.get("batch_prompt_tokens", 0) or 0), int(stats.get("batch_generated_tokens", 0) or 0)
    return price.cost(prompt - bp, generated - bg, min(cached, prompt - bp)) + price.cost(bp, bg, batch=True)
