"""The simulated GPU engine (`sim_engine.py`) inside real Ray actors and the real `ModelPool`: a stand-in for a
cluster of GPU replicas, for the scale benchmark only.

`SimEngineActor` is `VLLMEngineActor` with a `SimEngine` where vLLM would be: `run_one` (the per-dialogue state
machine next to the engine), the response cache and the usage counters are inherited unchanged.

`SimHost` is one Ray actor process hosting several simulated replicas. A replica process costs ~240 MiB here, and 64
of them did not fit this 24 GiB machine beside the driver; on a GPU cluster every replica is its own process (and
its own GPUs). The pool does not know: `SimHostPool` hands it one handle per replica, so placement, affinity, load
balancing and retries work per simulated replica exactly as with real actors. Replicas of one host share its event
loop and its CPU, never their virtual clocks.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import zlib
from dataclasses import replace
from functools import partial
from types import SimpleNamespace
from typing import Any

from benchmarks.sim_engine import PRESETS, SimEngine, SimStats, _Rng, estimate_tokens, fake_answer, render_chat
from emocaustics.models.base import ChatRequest, Completion
from emocaustics.models.jsonout import parse_answer
from emocaustics.models.pool import ModelPool
from emocaustics.models.vllm_actor import VLLMEngineActor

SLOTS_OPTION = "sim_replicas_per_process"  # engine option read by SimHost, not by the engine
# The vLLM engine arguments the simulator models, by its own names (`Hardware` fields; `prefix_cache` is SimEngine's)
VLLM_ARGS = {"max_num_batched_tokens": "max_batched_tokens", "max_num_seqs": "max_num_seqs",
             "scheduling_policy": "scheduling_policy", "max_model_len": "max_model_len",
             "enable_prefix_caching": "prefix_cache"}


class SimEngineActor(VLLMEngineActor):
    """Hosts a `SimEngine` where `VLLMEngineActor` hosts vLLM; `run_one`, caching and stats are inherited unchanged.

    `model` names a preset ("sim:qwen2.5-72b@4xh100"). The replica's engine arguments are a GPU replica's
    (`vllm_actor.engine_options`: the pipeline's defaults, e.g. priority scheduling and its prefill budget, then the
    spec's options); those the simulator models override the preset (`VLLM_ARGS`); the options may also name preset
    fields directly (e.g. max_batched_tokens).
    """

    def __init__(self, model: str, engine_opts: dict[str, Any], name: str, cache_id: str | None = None) -> None:
        from emocaustics.models.vllm_actor import engine_options

        super().__init__(model, engine_opts, name, cache_id)
        preset = model.removeprefix("sim:")
        if preset not in PRESETS:
            raise ValueError(f"unknown sim preset {preset!r}; known: {', '.join(PRESETS)}")
        opts = {VLLM_ARGS.get(k, k): v for k, v in engine_options(engine_opts, cpu=False).items()
                if k in VLLM_ARGS or k in engine_opts}  # the defaults the simulator does not model are left out
        self.prefix_cache = bool(opts.pop("prefix_cache", True))
        self.hw = replace(PRESETS[preset], **opts)
        self.arrived = 0  # items received by run_one since the last reset
        self.answer_cpu_s = 0.0

    async def start(self) -> dict[str, Any]:
        if self._engine is None:
            self._engine = SimEngine(self.hw, prefix_cache=self.prefix_cache)
            self._max_len = self.hw.max_model_len
            self.start_seconds = 0.0
        return {"instance": self.instance, "pid": os.getpid(), "start_seconds": self.start_seconds}

    async def reset(self, hold: bool = True) -> None:
        """A fresh engine (clock 0, empty caches, zero counters); held until `release` when `hold`."""
        if self._engine is not None:
            self._engine.close()
        self._engine = None
        await self.start()
        if hold:
            self._engine.hold()
        self.arrived, self.answer_cpu_s = 0, 0.0
        from emocaustics.models.usage import Usage

        self.usage = Usage()

    async def release(self) -> None:
        self._engine.release()

    async def sim_stats(self) -> dict[str, Any]:
        out = {f: getattr(self._engine.stats, f) for f in SimStats.__slots__} if self._engine else {}
        out.update(arrived=self.arrived, answer_cpu_s=self.answer_cpu_s, pid=os.getpid(), node=_node_id())
        return out

    async def run_one(self, fn: Any, item: Any, cache_path: str | None = None) -> Any:
        self.arrived += 1
        return await super().run_one(fn, item, cache_path)

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        if self._engine is None:
            await self.start()
        self._inflight += len(requests)
        try:
            answers = list(await asyncio.gather(*(self._one(r) for r in requests)))
        finally:
            self._inflight -= len(requests)
        self.usage.count(answers)
        return answers

    async def _one(self, request: ChatRequest) -> Completion:
        t0 = time.thread_time()
        text = render_chat(request.messages)
        n_prompt = estimate_tokens(text)
        if n_prompt + 1 > self.hw.max_model_len:
            return Completion(text="", prompt_tokens=n_prompt,
                              error=f"prompt too long: {n_prompt} tokens, max_model_len {self.hw.max_model_len}")
        max_tokens = min(request.sampling.max_tokens, self.hw.max_model_len - n_prompt)
        s = request.sampling
        rng = _Rng(zlib.crc32(request.messages[-1]["content"].encode()) * 1009 + (s.seed or 0))
        value = fake_answer(request.schema, rng)
        answer = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        n_out = estimate_tokens(answer) + 1  # + end of sequence
        cut = n_out > max_tokens
        if cut:  # cut at the budget, as the engine would: the pipeline then sees invalid JSON
            answer, n_out = answer[: max(1, len(answer) * max_tokens // n_out)], max_tokens
        self.answer_cpu_s += time.thread_time() - t0
        fut = self._engine.enqueue(text, n_prompt, n_out, request.priority)
        del text  # the engine keeps the prompt's block hashes; the text would double the memory of a deep queue
        try:
            _, cached = await fut
        except ValueError as exc:
            return Completion(text="", prompt_tokens=n_prompt, error=f"engine error: {exc}")
        parsed, repaired, error = parse_answer(answer, request.schema)
        if error and cut:
            error = f"answer cut at max_tokens={max_tokens}; {error}"
        self.usage.cached_prompt_tokens += cached
        return Completion(text=answer, parsed=parsed, error=error, prompt_tokens=n_prompt, generated_tokens=n_out,
                          repaired=repaired)


def _node_id() -> str:
    try:
        import ray

        return ray.get_runtime_context().get_node_id()
    except Exception:  # outside Ray (in-process tests)
        return "local"


class SimHost:
    """One Ray actor process hosting `engine_opts[SLOTS_OPTION]` simulated replicas; `call(slot, method, ...)` is
    `await replica.method(...)`."""

    def __init__(self, model: str, engine_opts: dict[str, Any], name: str, cache_id: str | None = None) -> None:
        opts = dict(engine_opts)
        slots = int(opts.pop(SLOTS_OPTION, 1))
        self.replicas = [SimEngineActor(model, opts, name, cache_id) for _ in range(slots)]

    async def call(self, slot: int, method: str, *args: Any) -> Any:
        return await getattr(self.replicas[slot], method)(*args)


def _slot_handle(host: Any, slot: int) -> Any:
    """What the pool sees as one replica: `handle.method.remote(*args)` calls `host.call.remote(slot, "method", *args)`."""

    class Handle:
        def __getattr__(self, method: str) -> Any:
            if method.startswith("_"):
                raise AttributeError(method)
            return SimpleNamespace(remote=partial(host.call.remote, slot, method))

    return Handle()


class SimHostPool(ModelPool):
    """A real `ModelPool` over `replicas` simulated replicas, `per_process` of them in each `SimHost` actor (the last
    host may leave slots unused: a smaller pool of the same name attaches to the first hosts' first slots)."""

    def __init__(self, model: str, *, replicas: int, per_process: int, actor_options: dict[str, Any] | None = None,
                 engine_opts: dict[str, Any] | None = None, **kw: Any) -> None:
        if per_process < 1:
            raise ValueError("per_process must be >= 1")
        self._hosts: list[Any] = []
        self._per_process = per_process
        opts = dict(actor_options or {})
        if "resources" in opts:  # a host asks for the resources of all of its replicas
            opts["resources"] = {k: v * per_process for k, v in opts["resources"].items()}
        super().__init__(model, replicas=replicas, actor_options=opts, actor_cls=SimHost,
                         engine_opts={**(engine_opts or {}), SLOTS_OPTION: per_process}, **kw)

    def _make_actor(self, index: int, max_restarts: int, cpus: float) -> Any:
        host, slot = divmod(index, self._per_process)
        if host == len(self._hosts):  # the host's own index decides its node (round robin under SPREAD)
            self._hosts.append(super()._make_actor(host, max_restarts, cpus))
        return _slot_handle(self._hosts[host], slot)

    @property
    def hosts(self) -> list[Any]:
        return list(self._hosts)

    def shutdown(self) -> None:
        import ray

        for h in self._hosts:
            try:
                ray.kill(h, no_restart=True)
            except Exception:  # already gone
                pass
        self._actors = []  # the slot handles died with their hosts
        super().shutdown()


def make_sim_pool(preset: str, replicas: int, *, name: str = "sim", per_process: int = 1,
                  actor_options: dict[str, Any] | None = None, engine_opts: dict[str, Any] | None = None) -> SimHostPool:
    """A real `ModelPool` whose replicas are simulated engines, `per_process` per Ray actor process (the classes
    travel by value: workers need not import `benchmarks`). Pools with the same preset/name/options attach to the
    same named host actors."""
    import sys

    from ray import cloudpickle

    for module in ("benchmarks.sim_engine", __name__):
        cloudpickle.register_pickle_by_value(sys.modules[module])
    return SimHostPool(f"sim:{preset}", replicas=replicas, per_process=per_process, name=name,
                       engine_opts=engine_opts, gpus_per_replica=0, actor_options=actor_options, retries=0)


__all__ = ["SimEngineActor", "SimHost", "SimHostPool", "make_sim_pool"]
