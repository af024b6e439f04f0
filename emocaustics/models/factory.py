"""The model of a spec: the provider's bare model (models/registry.py) with the layers in front of it, composed here
and only here, each with the same `LLM` interface (models/base.py):

    response cache (models/cache.py)             -- answers a repeated request; unless the run's cache is off
      batch (models/batch.py)                    -- `batch=true`: independent calls through the provider's batch API
        breaker + rate limit (models/breaker.py)  -- a remote provider: stop calling a dead endpoint; requeue a 429
          budget (models/budget.py)               -- a remote provider under the job's max_cost_usd, when priced
            the provider's model                  -- a client of an endpoint, or the process's pool of replicas

Kept apart from `spec` (parsing only) so that the pool, which parses specs, and this factory, which makes pools, do not
import each other."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from emocaustics.models.base import LLM, as_model
from emocaustics.models.cacheplace import CacheChoice, as_choice
from emocaustics.models.registry import Provider, endpoint_name, provider
from emocaustics.models.spec import OLLAMA_DEFAULT_HOST, LLMSpec


def make_llm(parsed: LLMSpec, *, cache_dir: CacheChoice | Path | str | None = None) -> LLM:
    """The model for the spec (parsed where it was given: a job, a command line), usable from asyncio code in the
    driver.

    A local provider (smoke/vllm) gives the process's shared `ModelPool` (Ray is started locally if it is not
    running yet); a remote one its client behind the budget, breaker and rate-limit layers. With `cache_dir` (a
    folder, or a run's `CacheChoice`: models/cacheplace.py), calls go through `<cache_dir>/responses.sqlite`, read-only
    if the choice says so; `batch=true` keeps its batch ids in `<cache_dir>/batches.jsonl` (without a cache_dir they
    are not kept: a killed run's batches are lost)."""
    prov = provider(parsed.kind)
    llm = as_model(prov.model(parsed))
    choice = as_choice(cache_dir)
    cache = choice.open() if choice is not None else None
    folder = choice.folder if choice is not None else None
    if parsed.remote:  # the provider's facts, kept on the spec where it was parsed
        llm = _endpoint(llm, parsed, prov, folder, cache)
    if cache is not None:
        from emocaustics.models.cache import CachedLLM

        llm = CachedLLM(llm, cache)
    return llm


def _endpoint(client: LLM, parsed: LLMSpec, prov: Provider, cache_dir: Path | str | None, cache: Any) -> LLM:
    """A remote provider's client behind its budget, breaker and rate limit (and batch API with `batch=true`)."""
    from emocaustics.models.breaker import BreakerLLM
    from emocaustics.models.budget import guard
    from emocaustics.models.ratelimit import limiter_for

    lim = parsed.limits
    name = endpoint_name(parsed)
    client.retry_throttled = False  # type: ignore[attr-defined]  # a 429 goes back through the adaptive queue
    # The job's max_cost_usd, checked as each call leaves the breaker's queue (models/budget.py).
    llm = guard(client, name) if parsed.priced else client
    # A dead endpoint (connection failures, 5xx in a row, or silence past the stall deadline) is no longer called:
    # models/breaker.py. No stall deadline given: two of the client's timeouts (its own default), at least 30 s.
    # Its adaptive rate limit (models/ratelimit.py): AIMD under `concurrency`, `rpm`/`tpm` budgets.
    limiter = limiter_for(name, lim.concurrency, rpm=lim.rpm, tpm=lim.tpm)
    llm = BreakerLLM(llm, name, lim.max_connection_failures, concurrency=lim.concurrency,
                     server_errors=lim.max_server_errors, stall=lim.stall_seconds,
                     limiter=limiter, max_throttled=lim.max_throttled, client=client)
    if prov.batch and parsed.batch.on:
        return _batched(llm, client, parsed, cache_dir, cache)
    return llm


def _batched(live: LLM, client: LLM, parsed: LLMSpec, cache_dir: Path | str | None, cache: Any) -> LLM:
    """`batch=true`: the provider's batch API in front of the live path; the response cache (put in front by
    `make_llm`) is also the batch's, which writes the answers of each batch into it as it ends, also those no request
    of this run waits for."""
    from emocaustics.models import batch as b
    from emocaustics.models.batch_api import batch_api_for
    from emocaustics.models.budget import active

    opts = parsed.batch
    name = endpoint_name(parsed)
    ledger = active()
    price = ledger.prices.get(name) if ledger is not None and ledger.limit_usd is not None else None
    store = b.BatchStore(cache_dir) if cache_dir is not None else None
    return b.BatchLLM(live, batch_api_for(client), endpoint=name, store=store, cache=cache,
                      batch_size=opts.size, quiet=opts.quiet, max_wait=opts.max_wait, poll=opts.poll,
                      ledger=ledger if price else None, price=price)


# -- the built-in providers' models (models/registry.py names them) ------------------------------------------------
def _chat(spec: LLMSpec, module: str, cls: str, base_url: str | None) -> LLM:
    """The client class `cls` of `models.<module>` for `spec`, with the spec's options that the client takes (not the
    breaker's, rate limit's or batch's: those are `spec.limits` and `spec.batch`)."""
    import importlib

    client = getattr(importlib.import_module(f"emocaustics.models.{module}"), cls)
    # The client's own gate and connection pool are as wide as the breaker's `concurrency` where it is given (its
    # own default where not): a narrower client would hold every run to its default, whatever the job asked
    width = spec.limits.model_dump(include={"concurrency"}, exclude_unset=True)
    return client(spec.model, base_url, name=spec.canonical(), **width, **spec.client)


def openai_client(spec: LLMSpec) -> LLM:
    return _chat(spec, "openai_chat", "OpenAIChatLLM", spec.base_url or "")


def anthropic_client(spec: LLMSpec) -> LLM:
    return _chat(spec, "anthropic_chat", "AnthropicChatLLM", spec.base_url)


def litellm_client(spec: LLMSpec) -> LLM:
    return _chat(spec, "litellm_chat", "LiteLLMChat", spec.base_url)


def ollama_client(spec: LLMSpec) -> LLM:
    """`ollama:MODEL` is written out as an `openai:` spec at the edges (spec.expand_shorthand); this serves one that
    was not: Ollama's OpenAI-compatible API at the given base URL, else at Ollama's default address."""
    return _chat(spec, "openai_chat", "OpenAIChatLLM", spec.base_url or f"http://{OLLAMA_DEFAULT_HOST}/v1")


def join_ray(address: str | None = None, *, num_cpus: int | None = None) -> bool:
    """The one place a process joins or starts Ray (`core.cluster.connect`), lazily: when a Ray-hosted model (`pool`),
    a model service (`models.services`) or a Ray Data fan-out (`scoring.fanout`) first needs it, with the settings the
    job or command gave (`core.cluster.configure`). Returns whether this call connected."""
    from emocaustics.core.cluster import connect

    return connect(address=address, num_cpus=num_cpus)


def pool(spec: LLMSpec) -> LLM:
    """The process's one pool of Ray-hosted replicas of a smoke/vllm spec (Ray joined here if not yet: call it
    from the main thread, where `ray.init` installs its signal handlers)."""
    from emocaustics.models.pool import get_pool

    join_ray()
    return get_pool(spec)
