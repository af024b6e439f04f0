"""A SIMULATED GPU vLLM engine: a stand-in for a GPU engine (this machine has no GPU), for the scale benchmark only.

What is simulated, and what is not:
- Real: the Ray actor, the model pool (placement, affinity, retries), the per-dialogue extraction state machines
  (prompts, schemas, parsing, retries) running inside the actor exactly as next to a real engine, and every answer
  parsed by the real `jsonout.parse_answer` and the pipeline's pydantic records.
- Simulated: the GPU. `SimEngine` schedules requests the way vLLM's V1 scheduler does (continuous batching, at most
  `max_num_seqs` sequences, chunked prefill under a `max_num_batched_tokens` budget per step, KV-cache capacity,
  prefix-cache hits on shared 64-character prompt blocks of the same replica) and charges each engine step a roofline
  time: max(bytes read / effective HBM bandwidth, FLOPs / effective compute) + a fixed per-step overhead. Answers are
  generated from the request's JSON schema (valid by construction, random content); token counts are derived from
  text lengths.
- Time is VIRTUAL: the replica's clock advances only when every coroutine in the actor waits on the engine (the
  asyncio ready queue is empty), so simulated seconds do not depend on this machine's 2 cores; the real CPU time the
  pipeline spends is measured separately by the benchmark (orchestration overhead per call).

Figures (approximate, public; the presets below derive from them):
- NVIDIA H100 SXM5 80GB datasheet: 3.35 TB/s HBM3, 989 TFLOPS dense BF16. A100 SXM 80GB datasheet: 2.04 TB/s, 312 TFLOPS.
- Qwen2.5-7B-Instruct / Qwen2.5-72B-Instruct config.json (Hugging Face model cards): 7.6B params, 28 layers, hidden
  3584, 4 KV heads x 128; 72.7B params, 80 layers, hidden 8192, 8 KV heads x 128 (KV bytes/token = 2*layers*kv*128*2).
- Decode reaches ~77% of HBM bandwidth at batch 1 (vLLM, Llama-3.1-8B on A100: ~75 tok/s; johnmusgrave.com "vLLM
  throughput-latency sweep on NVIDIA A100"); saturated vLLM serving of an 8B model on one H100 is ~12,500 output tok/s
  (morphllm.com "vLLM Benchmarks", collecting third-party figures); H100 ~2x A100 and data parallel beats tensor parallel
  when the model fits (Lambda "vLLM benchmark" report, LambdaLabsML/vllm-benchmark). The 7B preset gives ~150 tok/s at
  batch 1 and ~13-15k tok/s saturated, in line with those.
- vLLM engine defaults used: max_num_seqs 256, max_num_batched_tokens 8192 (chunked prefill), prefix caching on,
  gpu_memory_utilization 0.9 (vLLM engine-argument docs). Qwen2.5 tokenizer: ~1.4 Chinese characters per token and
  ~3.6 other characters per token (an assumption; no tokenizer can be downloaded here).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import json
import os
import random
import time
import zlib
from collections import OrderedDict, deque
from dataclasses import dataclass, replace
from typing import Any

from emocaustics.models.base import ChatRequest, Completion
from emocaustics.models.jsonout import parse_answer
from emocaustics.models.vllm_actor import VLLMEngineActor

BLOCK_CHARS = 64  # prefix-cache granularity (vLLM uses 16-token blocks; ~same size in Chinese text)


@dataclass(frozen=True, slots=True)
class Hardware:
    """One replica: a model on `gpus` GPUs (tensor parallel) and the engine settings."""

    name: str
    params: float
    layers: int
    hidden: int
    kv_bytes_per_token: int
    gpus: int
    hbm_bytes_per_s: float  # per GPU
    flops: float  # per GPU, dense BF16
    mem_eff: float = 0.77  # achieved fraction of HBM bandwidth in decode
    mfu: float = 0.45  # achieved fraction of peak FLOPs in prefill-heavy steps
    tp_eff: float = 1.0  # tensor-parallel scaling (all-reduce cost)
    step_overhead_s: float = 0.0008  # scheduler, sampling, kernel launches per engine step
    max_num_seqs: int = 256
    max_batched_tokens: int = 8192
    kv_cache_tokens: int = 400_000
    max_model_len: int = 32768

    @property
    def weight_bytes(self) -> float:
        return self.params * 2  # BF16

    def step_seconds(self, tokens: int, kv_tokens_read: float, attn_pairs: float) -> float:
        """One engine step computing `tokens` tokens, reading `kv_tokens_read` cached tokens, `attn_pairs` q-k pairs."""
        bw = self.gpus * self.hbm_bytes_per_s * self.mem_eff * self.tp_eff
        fl = self.gpus * self.flops * self.mfu * self.tp_eff
        t_mem = (self.weight_bytes + kv_tokens_read * self.kv_bytes_per_token) / bw
        t_cmp = (2 * self.params * tokens + 4 * self.layers * self.hidden * attn_pairs) / fl
        return max(t_mem, t_cmp) + self.step_overhead_s


H100 = {"hbm_bytes_per_s": 3.35e12, "flops": 989e12}
A100 = {"hbm_bytes_per_s": 2.04e12, "flops": 312e12}
PRESETS: dict[str, Hardware] = {
    "qwen2.5-7b@h100": Hardware("Qwen2.5-7B-Instruct on 1x H100 80GB", 7.6e9, 28, 3584, 57_344, 1, **H100,
                                kv_cache_tokens=900_000),
    "qwen2.5-7b@a100": Hardware("Qwen2.5-7B-Instruct on 1x A100 80GB", 7.6e9, 28, 3584, 57_344, 1, **A100,
                                kv_cache_tokens=900_000),
    "qwen2.5-72b@4xh100": Hardware("Qwen2.5-72B-Instruct on 4x H100 80GB (TP=4)", 72.7e9, 80, 8192, 327_680, 4,
                                   **H100, tp_eff=0.85, step_overhead_s=0.0012, kv_cache_tokens=390_000),
}


def estimate_tokens(text: str) -> int:
    """Qwen-like token count from lengths: CJK characters (3 UTF-8 bytes) at ~1.4 per token, others at ~3.6."""
    chars = len(text)
    cjk = (len(text.encode("utf-8")) - chars) // 2
    return max(1, round(cjk / 1.4 + (chars - cjk) / 3.6))


# -- answers ------------------------------------------------------------------------------------------------------
_VOCAB = "我你他她们的了是在有不这个人说想觉得很好坏事情开心难过生气担心喜欢讨厌工作家里朋友孩子老师钱时间问题因为所以但是希望"
_TEXT = "".join(random.Random(7).choices(_VOCAB, k=1 << 16))  # strings are slices of it: cheap to make


class _Rng:
    """splitmix64: a deterministic stream per request, ~50x cheaper to seed than random.Random (whose seeding was a
    sizeable part of the simulator's CPU per call; the simulator's CPU is real wall time of the benchmark)."""

    __slots__ = ("s",)

    def __init__(self, seed: int) -> None:
        self.s = seed & 0xFFFFFFFFFFFFFFFF

    def random(self) -> float:
        self.s = (self.s + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        return ((z ^ (z >> 31)) >> 11) * (1.0 / (1 << 53))

    def randrange(self, n: int) -> int:
        return int(self.random() * n)

    def randint(self, a: int, b: int) -> int:
        return a + int(self.random() * (b - a + 1))

    def choice(self, seq: Any) -> Any:
        return seq[int(self.random() * len(seq))]


def _words(rng: _Rng, n: int) -> str:
    at = rng.randrange(len(_TEXT) - n)
    return _TEXT[at:at + n]


def fake_answer(schema: dict[str, Any] | None, rng: Any) -> Any:
    """A random value valid for the schema (enums, bounded strings, bounded lists), like guided decoding emits."""
    if schema is None:
        return _words(rng, rng.randint(8, 40))
    if "enum" in schema:
        return rng.choice(schema["enum"])
    t = schema.get("type")
    if t == "object":
        return {k: fake_answer(v, rng) for k, v in schema.get("properties", {}).items()}
    if t == "array":
        lo, hi = int(schema.get("minItems", 0)), int(schema.get("maxItems", 3))
        u = rng.random()  # 0, 1 or 2 items beyond the minimum with probabilities 0.25, 0.55, 0.2
        n = lo if lo >= hi else min(hi, lo + (0 if u < 0.25 else 1 if u < 0.8 else 2))
        return [fake_answer(schema["items"], rng) for _ in range(n)]
    if t == "string":
        top = int(schema.get("maxLength", 16))
        return _words(rng, rng.randint(max(1, top // 3), top))
    if t == "integer":
        return rng.randint(0, 3)
    if t == "number":
        return round(rng.random(), 3)
    if t == "boolean":
        return rng.random() < 0.5
    raise ValueError(f"sim engine: unsupported schema node {schema}")


def render_chat(messages: tuple[dict[str, str], ...]) -> str:
    """ChatML as Qwen's template writes it: what the prefix cache and the token count see."""
    return "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages) + "<|im_start|>assistant\n"


# -- the engine ---------------------------------------------------------------------------------------------------
@dataclass(slots=True)
class _Seq:
    id: int
    prompt: int
    out: int
    chars: int
    hashes: list[int]
    fut: asyncio.Future
    rem: int = 0  # prompt tokens still to prefill
    pos: int = 0  # prompt tokens already in the KV cache
    cached: int = 0
    last_step: int = 0  # the step producing its last token


@dataclass(slots=True)
class SimStats:
    requests: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    generated_tokens: int = 0
    steps: int = 0
    busy_s: float = 0.0  # simulated seconds with at least one sequence
    batch_x_s: float = 0.0  # sum of (sequences in the step x step seconds): mean batch = batch_x_s / busy_s
    max_batch: int = 0
    makespan_s: float = 0.0  # simulated time of the last completion
    cpu_s: float = 0.0  # real CPU seconds spent simulating (scheduler + answer generation)


class SimEngine:
    """Continuous batching on a virtual clock (see the module docstring). `submit` returns (finish time, cached)."""

    def __init__(self, hw: Hardware, *, prefix_cache: bool = True) -> None:
        self.hw = hw
        self.now = 0.0
        self.stats = SimStats()
        self.prefix_cache = prefix_cache
        self._cache: OrderedDict[int, None] = OrderedDict()
        self._cache_cap = max(1, int(hw.kv_cache_tokens * 1.4 / BLOCK_CHARS))
        self._waiting: deque[_Seq] = deque()
        self._prefilling: list[_Seq] = []
        self._decoding: list[tuple[int, int, _Seq]] = []  # heap by last_step
        self._ctx = 0  # total context of decoding sequences (KV tokens read per decode step)
        self._kv = 0  # KV tokens reserved by admitted sequences
        self._step = 0
        self._ids = itertools.count()
        self._wake = asyncio.Event()
        self._go = asyncio.Event()
        self._go.set()
        self._task: asyncio.Task | None = None

    # control: a benchmark holds the clock while it dispatches, so that every replica starts at t=0 with its items
    def hold(self) -> None:
        self._go.clear()

    def release(self) -> None:
        self._go.set()
        self._wake.set()

    async def submit(self, text: str, prompt_tokens: int, out_tokens: int) -> tuple[float, int]:
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())
        t0 = time.thread_time()
        hashes: list[int] = []
        if self.prefix_cache:
            h = 0
            for i in range(0, len(text) - BLOCK_CHARS + 1, BLOCK_CHARS):
                h = hash((h, text[i:i + BLOCK_CHARS]))
                hashes.append(h)
        fut = asyncio.get_running_loop().create_future()
        self._waiting.append(_Seq(next(self._ids), prompt_tokens, out_tokens, len(text), hashes, fut))
        self._wake.set()
        self.stats.cpu_s += time.thread_time() - t0
        return await fut

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _settle(self) -> None:
        """Yield until no other callback is ready: every coroutine of this process now waits (on us or on I/O)."""
        ready = getattr(asyncio.get_running_loop(), "_ready", None)
        for _ in range(100_000 if ready is not None else 50):
            await asyncio.sleep(0)
            if ready is not None and not ready:
                return

    async def _run(self) -> None:
        while True:
            await self._settle()
            if not self._go.is_set():
                await self._go.wait()
                continue
            if not (self._waiting or self._prefilling or self._decoding):
                self._wake.clear()
                await self._wake.wait()
                continue
            t0 = time.thread_time()
            self._advance()
            self.stats.cpu_s += time.thread_time() - t0

    def _fits(self, s: _Seq) -> bool:
        return len(self._prefilling) + len(self._decoding) < self.hw.max_num_seqs and self._kv + s.prompt + s.out <= self.hw.kv_cache_tokens

    def _admit(self, s: _Seq) -> None:
        hit = 0
        for h in s.hashes:  # the longest cached prefix, in whole blocks
            if h not in self._cache:
                break
            self._cache.move_to_end(h)
            hit += 1
        s.cached = min(s.prompt - 1, s.prompt * hit * BLOCK_CHARS // max(1, s.chars))
        s.pos, s.rem = s.cached, s.prompt - s.cached
        self._kv += s.prompt + s.out
        self._prefilling.append(s)

    def _advance(self) -> None:
        hw = self.hw
        while self._waiting and self._waiting[0].prompt + self._waiting[0].out > hw.kv_cache_tokens:
            s = self._waiting.popleft()  # can never fit: fail it alone, as vLLM rejects it
            s.fut.set_exception(ValueError(f"request needs {s.prompt + s.out} KV tokens, cache holds {hw.kv_cache_tokens}"))
        n_dec = len(self._decoding)
        can_admit = bool(self._waiting) and self._fits(self._waiting[0])
        if not self._prefilling and not can_admit:
            if not n_dec:
                return
            k = max(1, self._decoding[0][0] - self._step)  # pure decode: jump to the next finish
            dt = k * hw.step_seconds(n_dec, self._ctx + n_dec * (k - 1) / 2, self._ctx + n_dec * (k - 1) / 2)
            self._finish_steps(k, dt, n_dec, [])
            return
        budget = hw.max_batched_tokens - n_dec
        tokens, kv_read, pairs, done = n_dec, float(self._ctx), float(self._ctx), []
        i = 0
        while budget > 0:
            if i < len(self._prefilling):
                s = self._prefilling[i]
            elif self._waiting and self._fits(self._waiting[0]):
                s = self._waiting.popleft()
                self._admit(s)
            else:
                break
            i += 1
            chunk = min(s.rem, budget)
            budget -= chunk
            tokens += chunk
            kv_read += s.pos
            pairs += chunk * (s.pos + chunk / 2)
            s.pos += chunk
            s.rem -= chunk
            if s.rem == 0:
                done.append(s)
        dt = hw.step_seconds(tokens, kv_read, pairs)
        if done:
            finished = {id(s) for s in done}
            self._prefilling = [s for s in self._prefilling if id(s) not in finished]
        self._finish_steps(1, dt, n_dec, done)

    def _finish_steps(self, k: int, dt: float, n_dec: int, prefilled: list[_Seq]) -> None:
        st = self.stats
        batch = n_dec + len(self._prefilling) + len(prefilled)
        self.now += dt
        self._step += k
        self._ctx += n_dec * k
        st.steps += k
        st.busy_s += dt
        st.batch_x_s += batch * dt
        st.max_batch = max(st.max_batch, batch)
        for s in prefilled:  # the prefill step samples the first token
            if self.prefix_cache:
                for h in s.hashes:
                    self._cache[h] = None
                    self._cache.move_to_end(h)
                while len(self._cache) > self._cache_cap:
                    self._cache.popitem(last=False)
            s.last_step = self._step + s.out - 1
            self._ctx += s.prompt + 1
            heapq.heappush(self._decoding, (s.last_step, s.id, s))
        while self._decoding and self._decoding[0][0] <= self._step:
            s = heapq.heappop(self._decoding)[2]
            self._ctx -= s.prompt + s.out
            self._kv -= s.prompt + s.out
            st.requests += 1
            st.prompt_tokens += s.prompt
            st.cached_prompt_tokens += s.cached
            st.generated_tokens += s.out
            st.makespan_s = self.now
            if not s.fut.done():
                s.fut.set_result((self.now, s.cached))


# -- the Ray actor ------------------------------------------------------------------------------------------------
class SimEngineActor(VLLMEngineActor):
    """Hosts a `SimEngine` where `VLLMEngineActor` hosts vLLM; `run_one`, caching and stats are inherited unchanged.

    `model` names a preset ("sim:qwen2.5-72b@4xh100"); engine options override its fields (e.g. max_num_seqs).
    """

    def __init__(self, model: str, engine_opts: dict[str, Any], name: str, cache_id: str | None = None) -> None:
        super().__init__(model, engine_opts, name, cache_id)
        preset = model.removeprefix("sim:")
        if preset not in PRESETS:
            raise ValueError(f"unknown sim preset {preset!r}; known: {', '.join(PRESETS)}")
        self.hw = replace(PRESETS[preset], **{k: v for k, v in engine_opts.items() if k != "prefix_cache"})
        self.prefix_cache = bool(engine_opts.get("prefix_cache", True))
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
        try:
            _, cached = await self._engine.submit(text, n_prompt, n_out)
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


def make_sim_pool(preset: str, replicas: int, *, name: str = "sim", actor_options: dict[str, Any] | None = None,
                  engine_opts: dict[str, Any] | None = None) -> Any:
    """A real `ModelPool` whose replicas are `SimEngineActor`s (the class travels by value: workers need not import
    `benchmarks`). Pools with the same preset/name/options attach to the same named actors (first `replicas`)."""
    import sys

    from ray import cloudpickle

    from emocaustics.models.pool import ModelPool

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    return ModelPool(f"sim:{preset}", name=name, replicas=replicas, engine_opts=engine_opts, gpus_per_replica=0,
                     actor_cls=SimEngineActor, actor_options=actor_options, retries=0)


__all__ = ["Hardware", "PRESETS", "SimEngine", "SimEngineActor", "SimStats", "estimate_tokens", "fake_answer",
           "make_sim_pool", "render_chat"]
