"""The LLM object for a model spec: a client of an endpoint (behind the dead-endpoint breaker) or the process's pool of
Ray-hosted replicas, optionally behind the response cache. Kept apart from `spec` (parsing only) so that the pool,
which parses specs, and this factory, which makes pools, do not import each other."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from emocaustics.models.spec import BATCH_KEYS, BREAKER_KEYS, REMOTE_KINDS, LLMSpec, as_llm_spec, endpoint_name


def make_llm(spec: str | LLMSpec, *, cache_dir: Path | str | None = None, **opts: Any) -> Any:
    """An LLM for the spec, usable from asyncio code in the driver; `opts` override the spec's options.

    smoke/vllm/hf: the process's shared `ModelPool` (Ray is started locally if it is not running yet); `hf:` replicas
    are transformers models (models/hf_actor.py), the others vLLM engines.
    openai: an `OpenAIChatLLM`. With `cache_dir`, calls go through `<cache_dir>/responses.sqlite`.
    openai/anthropic with `batch=true`: a `BatchLLM` in front of the live path (models/batch.py); its batch ids are
    kept in `<cache_dir>/batches.jsonl` (without a cache_dir they are not kept: a killed run's batches are lost).
    Every returned object has `name`, `generate`, `run(fn, items, affinity_key=None)` and `stats()`.
    """
    parsed = as_llm_spec(spec)
    if opts:
        parsed = parsed.with_options(**opts)
    llm: Any
    if parsed.kind in REMOTE_KINDS:
        from emocaustics.models.breaker import DEFAULT_LIMIT, DEFAULT_SERVER_ERRORS, REQUEUE_LIMIT, BreakerLLM

        client = {k: v for k, v in parsed.client.items() if k not in BREAKER_KEYS + BATCH_KEYS}
        breaker = parsed.client
        if parsed.kind == "openai":
            from emocaustics.models.openai_chat import OpenAIChatLLM

            llm = OpenAIChatLLM(parsed.model, parsed.base_url or "", name=parsed.canonical(), **client)
        else:
            from emocaustics.models.anthropic_chat import AnthropicChatLLM

            llm = AnthropicChatLLM(parsed.model, parsed.base_url, name=parsed.canonical(), **client)
        llm.retry_throttled = False  # a 429 goes back through the adaptive queue (models/ratelimit.py)
        client_llm = llm
        from emocaustics.models.budget import guard

        # The job's max_cost_usd, checked as each call leaves the breaker's queue (models/budget.py).
        llm = guard(llm, endpoint_name(parsed))
        # A dead endpoint (connection failures, 5xx in a row, or silence past the stall deadline) is no longer
        # called: models/breaker.py. No stall deadline given: two client timeouts, at least 30 s.
        llm = BreakerLLM(llm, endpoint_name(parsed), int(breaker.get("max_connection_failures", DEFAULT_LIMIT)),
                         concurrency=int(client.get("concurrency", 16)),
                         server_errors=int(breaker.get("max_server_errors", DEFAULT_SERVER_ERRORS)),
                         stall=float(breaker["stall_seconds"]) if breaker.get("stall_seconds") else None,
                         limiter=_limiter(parsed, breaker),
                         max_throttled=int(breaker.get("max_throttled", REQUEUE_LIMIT)))
        if _true(breaker.get("batch")):
            return _batched(llm, client_llm, parsed, cache_dir)
    else:
        from emocaustics.core.cluster import connect
        from emocaustics.models.pool import get_pool

        connect()
        llm = get_pool(parsed)
    if cache_dir is not None:
        from emocaustics.models.cache import CachedLLM, ResponseCache

        llm = CachedLLM(llm, ResponseCache(Path(cache_dir) / "responses.sqlite"))
    return llm


def _limiter(parsed: LLMSpec, opts: dict[str, Any]) -> Any:
    """The endpoint's adaptive rate limit (models/ratelimit.py): AIMD under `concurrency`, `rpm`/`tpm` budgets."""
    from emocaustics.models.ratelimit import limiter_for

    rpm, tpm = opts.get("rpm"), opts.get("tpm")
    return limiter_for(endpoint_name(parsed), int(opts.get("concurrency", 16)),
                       rpm=float(rpm) if rpm else None, tpm=float(tpm) if tpm else None)


def _true(value: Any) -> bool:
    return value is True or str(value).lower() in ("1", "true", "yes")


def _batched(live: Any, client: Any, parsed: LLMSpec, cache_dir: Path | str | None) -> Any:
    """`batch=true`: the provider's batch API in front of the live path, the response cache in front of both (the
    batch writes its answers into that cache as each batch ends, also those no request of this run waits for)."""
    from emocaustics.models import batch as b
    from emocaustics.models.batch_api import batch_api_for
    from emocaustics.models.budget import active

    opts = parsed.client
    name = endpoint_name(parsed)
    ledger = active()
    price = ledger.prices.get(name) if ledger is not None and ledger.limit_usd is not None else None
    cache = store = None
    if cache_dir is not None:
        from emocaustics.models.cache import ResponseCache

        cache, store = ResponseCache(Path(cache_dir) / "responses.sqlite"), b.BatchStore(cache_dir)
    llm: Any = b.BatchLLM(live, batch_api_for(client), endpoint=name, store=store, cache=cache,
                          batch_size=int(opts["batch_size"]) if opts.get("batch_size") else None,
                          quiet=float(opts.get("batch_quiet", b.QUIET)), max_wait=float(opts.get("batch_max_wait",
                                                                                             b.MAX_WAIT)),
                          poll=float(opts.get("batch_poll", b.POLL)), ledger=ledger if price else None, price=price)
    if cache is not None:
        from emocaustics.models.cache import CachedLLM

        llm = CachedLLM(llm, cache)
    return llm
