"""A SIMULATED GPU vLLM engine: a stand-in for a GPU engine (this machine has no GPU), for the scale benchmark only.

What is simulated, and what is not:
- Real (hosted by `sim_cluster.py`): the Ray actors, the model pool (placement, affinity, retries), the per-dialogue
  extraction state machines (prompts, schemas, parsing, retries) running inside the actor exactly as next to a real
  engine, and every answer parsed by the real `jsonout.parse_answer` and the pipeline's pydantic records.
- Simulated: the GPU. `SimEngine` schedules requests the way vLLM's V1 scheduler does (continuous batching, at most
  `max_num_seqs` sequences, chunked prefill under a `max_num_batched_tokens` budget per step, KV-cache capacity,
  prefix-cache hits on shared 64-character prompt blocks of the same replica, the waiting queue by arrival or, under
  vLLM's `scheduling_policy="priority"`, by the request's priority) and charges each engine step a roofline
  time: max(bytes read / effective HBM bandwidth, FLOPs / effective compute) + a fixed per-step overhead. Answers are
  generated from the request's JSON schema (valid by construction, random content); token counts are derived from
  text lengths.
- Time is VIRTUAL: each replica's clock advances only when every coroutine of its process waits on an engine (the
  asyncio ready queue is empty; one `_Clockwork` task per process steps all of the process's engines), so simulated seconds do not depend on this machine's 2 cores; the real CPU time the
  pipeline spends is measured separately by the benchmark (orchestration overhead per call).

Figures (approximate, public; the presets below derive from them):
- NVIDIA H100 SXM5 80GB datasheet: 3.35 TB/s HBM3, 989 TFLOPS dense BF16. A100 SXM 80GB datasheet: 2.04 TB/s, 312 TFLOPS.
- Qwen2.5-7B-Instruct / Qwen2.5-72B-Instruct config.json (Hugging Face model cards): 7.6B params, 28 layers, hidden
  3584, 4 KV heads x 128; 72.7B params, 80 layers, hidden 8192, 8 KV heads x 128 (KV bytes/token = 2*layers*kv*128*2).
- Decode reaches ~77% of HBM bandwidth at batch 1: measured on an A100 40GB (vLLM, Llama-3.1-8B: ~75 tok/s x ~16 GB
  of weights = ~1.2 TB/s of that card's 1.555 TB/s datasheet; johnmusgrave.com "vLLM throughput-latency sweep on
  NVIDIA A100"). Against the A100 80GB's 2.04 TB/s the same run is ~59%. The presets apply 77% to the H100 80GB's
  3.35 TB/s datasheet: an assumption that the fraction carries over between cards, not a measurement on an H100
  (`ANCHORS` states each anchor with its hardware; scale_bench records them). Saturated vLLM serving of an 8B model on one H100 is ~12,500 output tok/s
  (morphllm.com "vLLM Benchmarks", collecting third-party figures); H100 ~2x A100 and data parallel beats tensor parallel
  when the model fits (Lambda "vLLM benchmark" report, LambdaLabsML/vllm-benchmark). The 7B preset gives ~150 tok/s at
  batch 1 and ~13-15k tok/s saturated, in line with those.
- vLLM engine defaults used: max_num_seqs 256, max_num_batched_tokens 8192 (chunked prefill), prefix caching on,
  gpu_memory_utilization 0.9 (vLLM engine-argument docs). Qwen2.5 tokenizer: ~1.4 Chinese characters per token and
  ~3.6 other characters per token (an assumption; no tokenizer can be downloaded here).
"""

from __future__ import annotations

import asyncio
from array import array
import heapq
import itertools
import random
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any


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
    scheduling_policy: str = "fcfs"  # vLLM's: "fcfs", or "priority" (waiting queue by (priority, arrival))

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


# Each calibration figure with the hardware it was measured on, and where the simulator applies it.
ANCHORS: dict[str, dict[str, str]] = {
    "mem_eff=0.77": {
        "measured_on": "NVIDIA A100 40GB (1.555 TB/s datasheet): vLLM, Llama-3.1-8B, batch 1, ~75 tok/s (johnmusgrave.com)",
        "applied_to": "H100 SXM5 80GB datasheet 3.35 TB/s (presets *@h100, *@4xh100) and A100 80GB 2.04 TB/s (*@a100)",
        "caveat": "a fraction assumed to carry over between cards; against the A100 80GB datasheet the same run is ~59%",
    },
    "saturated 8B on one H100 ~12,500 output tok/s": {
        "measured_on": "NVIDIA H100 (third-party figures collected by morphllm.com)",
        "applied_to": "a check of the qwen2.5-7b@h100 preset (~13-15k tok/s saturated), not an input",
        "caveat": "collected figures, settings not all stated",
    },
    "tp_eff=0.85, mfu=0.45, step_overhead_s": {
        "measured_on": "none: assumptions in line with Lambda's vLLM benchmark report (data vs tensor parallel)",
        "applied_to": "qwen2.5-72b@4xh100",
        "caveat": "not measured here",
    },
}
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
    hashes: array
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


async def _settle() -> None:
    """Yield until no other callback is ready: every coroutine of this process now waits (on an engine or on I/O)."""
    ready = getattr(asyncio.get_running_loop(), "_ready", None)
    for _ in range(100_000 if ready is not None else 50):
        await asyncio.sleep(0)
        if ready is not None and not ready:
            return


class _Clockwork:
    """The one task per event loop that advances its engines' virtual clocks. Several engines (simulated replicas)
    may share a process; each advances one engine step per round, and a round starts only when the process has
    settled, so that every answer of the last step has produced its follow-up requests before the next step."""

    _by_loop: dict[int, "_Clockwork"] = {}

    def __init__(self) -> None:
        self.engines: list[SimEngine] = []
        self.wake = asyncio.Event()
        self.task = asyncio.ensure_future(self._run())

    @classmethod
    def of_running_loop(cls) -> "_Clockwork":
        key = id(asyncio.get_running_loop())
        if key not in cls._by_loop:
            cls._by_loop[key] = cls()
        return cls._by_loop[key]

    def remove(self, engine: "SimEngine") -> None:
        if engine in self.engines:
            self.engines.remove(engine)
        if not self.engines:
            self.task.cancel()
            self._by_loop.pop(next((k for k, v in self._by_loop.items() if v is self), None), None)

    async def _run(self) -> None:
        while True:
            await _settle()
            runnable = [e for e in self.engines if e.runnable()]
            if not runnable:
                self.wake.clear()
                await self.wake.wait()
                continue
            for e in runnable:
                t0 = time.thread_time()
                e._advance()
                e.stats.cpu_s += time.thread_time() - t0


class SimEngine:
    """Continuous batching on a virtual clock (see the module docstring). `submit` returns (finish time, cached).

    The waiting queue is ordered like vLLM's: by arrival ("fcfs"), or by (priority, arrival) under "priority"."""

    def __init__(self, hw: Hardware, *, prefix_cache: bool = True) -> None:
        if hw.scheduling_policy not in ("fcfs", "priority"):
            raise ValueError(f"scheduling_policy must be 'fcfs' or 'priority', not {hw.scheduling_policy!r}")
        self.hw = hw
        self.now = 0.0
        self.stats = SimStats()
        self.prefix_cache = prefix_cache
        self._by_priority = hw.scheduling_policy == "priority"
        self._cache: OrderedDict[int, None] = OrderedDict()
        self._cache_cap = max(1, int(hw.kv_cache_tokens * 1.4 / BLOCK_CHARS))
        self._waiting: list[tuple[int, int, _Seq]] = []  # heap by (priority or 0, arrival)
        self._prefilling: list[_Seq] = []
        self._decoding: list[tuple[int, int, _Seq]] = []  # heap by last_step
        self._ctx = 0  # total context of decoding sequences (KV tokens read per decode step)
        self._kv = 0  # KV tokens reserved by admitted sequences
        self._step = 0
        self._ids = itertools.count()
        self._held = False
        self._clock: _Clockwork | None = None

    # control: a benchmark holds the clock while it dispatches, so that every replica starts at t=0 with its items
    def hold(self) -> None:
        self._held = True

    def release(self) -> None:
        self._held = False
        if self._clock is not None:
            self._clock.wake.set()

    def runnable(self) -> bool:
        return not self._held and bool(self._waiting or self._prefilling or self._decoding)

    async def submit(self, text: str, prompt_tokens: int, out_tokens: int, priority: int = 0) -> tuple[float, int]:
        fut = self.enqueue(text, prompt_tokens, out_tokens, priority)
        del text  # a queued request keeps its block hashes, not its text
        return await fut

    def enqueue(self, text: str, prompt_tokens: int, out_tokens: int, priority: int = 0) -> asyncio.Future:
        """Queue a request; the future resolves to (finish time, cached prompt tokens)."""
        if self._clock is None:
            self._clock = _Clockwork.of_running_loop()
            self._clock.engines.append(self)
        t0 = time.thread_time()
        hashes = array("q")  # 8 bytes per block: at 10x scale the queues hold ~10^7 of them
        if self.prefix_cache:
            h = 0
            for i in range(0, len(text) - BLOCK_CHARS + 1, BLOCK_CHARS):
                h = hash((h, text[i:i + BLOCK_CHARS]))
                hashes.append(h)
        fut = asyncio.get_running_loop().create_future()
        seq = _Seq(next(self._ids), prompt_tokens, out_tokens, len(text), hashes, fut)
        heapq.heappush(self._waiting, (priority if self._by_priority else 0, seq.id, seq))
        self._clock.wake.set()
        self.stats.cpu_s += time.thread_time() - t0
        return fut

    def close(self) -> None:
        if self._clock is not None:
            self._clock.remove(self)
            self._clock = None

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
        while self._waiting and self._waiting[0][2].prompt + self._waiting[0][2].out > hw.kv_cache_tokens:
            s = heapq.heappop(self._waiting)[2]  # can never fit: fail it alone, as vLLM rejects it
            s.fut.set_exception(ValueError(f"request needs {s.prompt + s.out} KV tokens, cache holds {hw.kv_cache_tokens}"))
        n_dec = len(self._decoding)
        can_admit = bool(self._waiting) and self._fits(self._waiting[0][2])
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
            elif self._waiting and self._fits(self._waiting[0][2]):
                s = heapq.heappop(self._waiting)[2]
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


__all__ = ["Hardware", "PRESETS", "SimEngine", "SimStats", "estimate_tokens", "fake_answer", "render_chat"]
