"""Model hosting and clients: one `LLM` interface over the vLLM engine in Ray actors, the smoke model and
OpenAI-compatible endpoints; embedders beside it.

- `factory.make_llm(spec, cache_dir=None, **opts)`: `smoke`, `vllm:PATH_OR_NAME?...`, `openai:MODEL@BASE_URL`.
- `pool.ModelPool` / `pool.get_pool(spec)`: replicas of one model as Ray actors (`vllm_actor.VLLMEngineActor`),
  loaded once per process/job; `generate`, `run(fn, items, affinity_key)`, `stats()`.
- `openai_chat.OpenAIChatLLM`, `cache.ResponseCache` / `cache.CachedLLM`, `smoke.build_smoke_model`,
  `local.RunFailure` (a failed item in `run()` results), `embedders.make_embedder`.

Names are imported lazily so that `import emocaustics.models` stays cheap (no ray, vllm or torch).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "make_llm": "factory",
    "parse_llm_spec": "spec",
    "LLMSpec": "spec",
    "ModelPool": "pool",
    "get_pool": "pool",
    "shutdown_pools": "pool",
    "OpenAIChatLLM": "openai_chat",
    "ResponseCache": "cache",
    "CachedLLM": "cache",
    "build_smoke_model": "smoke",
    "RunFailure": "local",
    "run_local": "local",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
