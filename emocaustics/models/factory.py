"""The LLM object for a model spec: a client of an endpoint (behind the dead-endpoint breaker) or the process's pool of
Ray-hosted replicas, optionally behind the response cache. Kept apart from `spec` (parsing only) so that the pool,
which parses specs, and this factory, which makes pools, do not import each other."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from emocaustics.models.spec import BREAKER_KEYS, REMOTE_KINDS, LLMSpec, endpoint_name, parse_llm_spec


def make_llm(spec: str | LLMSpec, *, cache_dir: Path | str | None = None, **opts: Any) -> Any:
    """An LLM for the spec, usable from asyncio code in the driver; `opts` override the spec's options.

    smoke/vllm: the process's shared `ModelPool` (Ray is started locally if it is not running yet).
    openai: an `OpenAIChatLLM`. With `cache_dir`, calls go through `<cache_dir>/responses.sqlite`.
    Every returned object has `name`, `generate`, `run(fn, items, affinity_key=None)` and `stats()`.
    """
    parsed = parse_llm_spec(spec) if isinstance(spec, str) else spec
    if opts:
        parsed = parsed.with_options(**opts)
    llm: Any
    if parsed.kind in REMOTE_KINDS:
        from emocaustics.models.breaker import DEFAULT_LIMIT, DEFAULT_SERVER_ERRORS, BreakerLLM

        client = {k: v for k, v in parsed.client.items() if k not in BREAKER_KEYS}
        breaker = parsed.client
        if parsed.kind == "openai":
            from emocaustics.models.openai_chat import OpenAIChatLLM

            llm = OpenAIChatLLM(parsed.model, parsed.base_url or "", name=parsed.canonical(), **client)
        else:
            from emocaustics.models.anthropic_chat import AnthropicChatLLM

            llm = AnthropicChatLLM(parsed.model, parsed.base_url, name=parsed.canonical(), **client)
        llm.retry_throttled = False  # a 429 goes back through the adaptive queue (models/ratelimit.py)
        from emocaustics.models.budget import guard

        # The job's max_cost_usd, checked as each call leaves the breaker's queue (models/budget.py).
        llm = guard(llm, endpoint_name(parsed))
        # A dead endpoint (connection failures, 5xx in a row, or silence past the stall deadline) is no longer
        # called: models/breaker.py. No stall deadline given: two client timeouts, at least 30 s.
        llm = BreakerLLM(llm, endpoint_name(parsed), int(breaker.get("max_connection_failures", DEFAULT_LIMIT)),
                         concurrency=int(client.get("concurrency", 16)),
                         server_errors=int(breaker.get("max_server_errors", DEFAULT_SERVER_ERRORS)),
                         stall=float(breaker["stall_seconds"]) if breaker.get("stall_seconds") else None,
                         limiter=_limiter(parsed, breaker))
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
