"""The real vLLM CPU engine in a Ray actor, serving the smoke model (one engine for the whole session)."""

from __future__ import annotations

import asyncio
import os

import pytest

from emocaustics.models.base import ChatRequest, ErrorKind, Sampling
from emocaustics.models.cache import CachedLLM, ResponseCache
from emocaustics.models.local import RunFailure
from emocaustics.models.pool import get_pool
from emocaustics.models.factory import make_llm
from emocaustics.models.spec import parse_llm_spec

pytestmark = pytest.mark.engine

LABEL = ["positive", "negative", "neutral", "ambiguous", "doubt"]
SEXTUPLE = {
    "type": "object",
    "properties": {
        "target": {"type": "string", "maxLength": 12},
        "aspect": {"type": "string", "maxLength": 12},
        "opinion": {"type": "string", "maxLength": 12},
        "sentiment": {"enum": LABEL},
        "rationale": {"type": "string", "maxLength": 16},
    },
    "required": ["target", "aspect", "opinion", "sentiment", "rationale"],
    "additionalProperties": False,
}


def chat(text: str, schema: dict | None = None, max_tokens: int = 96, affinity: str | None = None) -> ChatRequest:
    return ChatRequest(
        messages=({"role": "system", "content": "你是情感分析助手。"}, {"role": "user", "content": text}),
        schema=schema,
        sampling=Sampling(max_tokens=max_tokens),
        affinity=affinity,
    )


def test_engine_answers_plain_chat_requests(smoke_pool) -> None:
    out = asyncio.run(smoke_pool.generate([chat(f"第{i}句：今天开会又推迟了。", max_tokens=16) for i in range(8)]))
    assert len(out) == 8
    for c in out:
        assert c.ok, c.error
        assert c.prompt_tokens > 10 and 0 < c.generated_tokens <= 16
        assert c.parsed is None  # no schema, nothing parsed


def test_schema_guided_answers_all_parse(smoke_pool) -> None:
    reqs = [chat(f"分析第{i}句话的情感：小明说他很生气。", SEXTUPLE, affinity=f"d{i % 5}") for i in range(50)]
    out = asyncio.run(smoke_pool.generate(reqs))
    bad = [c for c in out if not c.ok or c.repaired]
    assert not bad, bad[:3]
    for c in out:
        assert set(c.parsed) == set(SEXTUPLE["properties"])
        assert c.parsed["sentiment"] in LABEL
        assert all(len(c.parsed[k]) <= SEXTUPLE["properties"][k]["maxLength"] for k in ("target", "aspect", "opinion"))


def test_prompt_over_the_context_is_reported_not_truncated(smoke_pool) -> None:
    long = chat("很长的对话。" * 40000, max_tokens=8)
    ok, too_long = asyncio.run(smoke_pool.generate([chat("短", max_tokens=4), long]))
    assert ok.ok
    assert too_long.error and too_long.error.startswith("prompt too long") and "max_model_len" in too_long.error
    assert too_long.kind is ErrorKind.CONTEXT_LENGTH  # what the solvers decide on


async def _scheduling_policy(llm, _item):
    """Runs inside the replica actor: the policy the engine was built with."""
    return str(llm._actor._engine.vllm_config.scheduler_config.policy)


async def _priorities_reaching_the_engine(llm, priority):
    """Runs inside the replica actor: sends three requests at `priority` through the replica's own `generate` while a
    recording wrapper around vLLM's `AsyncLLM.generate` notes the `priority` each engine request carried."""
    engine = llm._actor._engine
    original, seen = engine.generate, []

    def recording(*args, **kwargs):
        seen.append(kwargs.get("priority", "not passed"))
        return original(*args, **kwargs)

    engine.generate = recording
    try:
        reqs = [chat(f"第{i}句：他们又吵起来了。", SEXTUPLE) for i in range(3)]
        out = await llm.generate([ChatRequest(messages=r.messages, schema=r.schema, sampling=r.sampling,
                                              priority=priority) for r in reqs])
    finally:
        del engine.generate  # the class's method again
    return {"seen": seen, "texts": [c.text for c in out], "ok": all(c.ok for c in out)}


def test_priorities_reach_a_priority_scheduled_engine_and_do_not_change_answers(smoke_pool) -> None:
    """The replica runs vLLM's priority scheduling by default (window chains' next calls go first): each request's
    priority reaches vLLM's `generate` unchanged, and it orders the queue only (same greedy answer at any priority)."""
    (policy,) = asyncio.run(smoke_pool.run(_scheduling_policy, [None]))
    assert "priority" in policy.lower()
    # one at a time: two wrappers in one actor at once would record each other's requests
    (urgent,) = asyncio.run(smoke_pool.run(_priorities_reaching_the_engine, [-5]))
    (plain,) = asyncio.run(smoke_pool.run(_priorities_reaching_the_engine, [0]))
    assert urgent["seen"] == [-5, -5, -5], urgent["seen"]
    assert plain["seen"] == [0, 0, 0], plain["seen"]
    assert urgent["ok"] and plain["ok"]
    assert urgent["texts"] == plain["texts"]


async def _next_to_engine(llm, item):
    """Runs inside the replica actor: two dependent calls, like a window step and its follow-up."""
    (first,) = await llm.generate([chat(f"第一步 {item}", SEXTUPLE, affinity=str(item))])
    (second,) = await llm.generate([chat(f"第二步 {first.parsed['sentiment']}", SEXTUPLE, affinity=str(item))])
    if item == 3:
        raise ValueError("item 3 is broken on purpose")
    return {"item": item, "pid": os.getpid(), "ok": first.ok and second.ok}


def test_run_executes_the_coroutine_inside_the_replica(smoke_pool) -> None:
    before = asyncio.run(smoke_pool.stats())
    out = asyncio.run(smoke_pool.run(_next_to_engine, list(range(6)), lambda item: f"dialogue-{item}"))
    after = asyncio.run(smoke_pool.stats())
    replica_pid = after["per_replica"][0]["pid"]
    good = [r for i, r in enumerate(out) if i != 3]
    assert not [r for r in good if isinstance(r, RunFailure)], [r.reason for r in good if isinstance(r, RunFailure)]
    assert all(r["ok"] and r["pid"] == replica_pid != os.getpid() for r in good)
    assert [r["item"] for r in good] == [0, 1, 2, 4, 5]
    assert isinstance(out[3], RunFailure) and "item 3 is broken on purpose" in out[3].reason
    assert after["calls"] - before["calls"] == 12  # 2 engine calls per item, made in the actor


def test_cache_second_run_makes_no_engine_calls(smoke_pool, tmp_path) -> None:
    cache = ResponseCache(tmp_path / "responses.sqlite")
    llm = CachedLLM(smoke_pool, cache)
    reqs = [chat(f"缓存测试{i}", SEXTUPLE) for i in range(10)]

    calls0 = asyncio.run(smoke_pool.stats())["calls"]
    first = asyncio.run(llm.generate(reqs))
    calls1 = asyncio.run(smoke_pool.stats())["calls"]
    second = asyncio.run(llm.generate(reqs))
    calls2 = asyncio.run(smoke_pool.stats())["calls"]
    assert calls1 - calls0 == 10 and calls2 == calls1
    assert [c.parsed for c in second] == [c.parsed for c in first] and all(c.cached for c in second)
    assert (llm.usage.cache_hits, llm.usage.cache_misses) == (10, 10)

    # The same through run(): the cache sits in front of the engine inside the actor.
    run1 = asyncio.run(llm.run(_next_to_engine, [10, 11]))
    calls3 = asyncio.run(smoke_pool.stats())["calls"]
    run2 = asyncio.run(llm.run(_next_to_engine, [10, 11]))
    stats = asyncio.run(llm.stats())
    assert calls3 - calls2 == 4 and stats["calls"] == calls3
    assert [r["item"] for r in run2] == [r["item"] for r in run1]
    assert stats["cache_hits"] >= 10 + 4


def test_registry_loads_the_model_once(smoke_pool, tmp_path) -> None:
    assert get_pool(parse_llm_spec("smoke")) is smoke_pool
    assert make_llm(parse_llm_spec("smoke")) is smoke_pool
    cached = make_llm(parse_llm_spec("smoke"), cache_dir=tmp_path)
    assert cached.llm is smoke_pool
    other = get_pool(parse_llm_spec("smoke?max_model_len=2048"))  # other engine options: another pool (never started)
    assert other is not smoke_pool and get_pool(parse_llm_spec("smoke?max_model_len=2048")) is other
    other.shutdown()
    asyncio.run(cached.generate([chat("注册表", max_tokens=4)]))
    stats = asyncio.run(smoke_pool.stats())
    assert stats["engine_starts"] == 1
    assert stats["prefix_cache_hit_rate"] is not None and 0 <= stats["prefix_cache_hit_rate"] <= 1


async def _engine_settings(llm, _item) -> dict:
    engine = llm._actor._engine
    sched = engine.vllm_config.scheduler_config
    return {"max_num_seqs": sched.max_num_seqs, "max_num_batched_tokens": sched.max_num_batched_tokens,
            "log_stats": bool(engine.log_stats)}


def test_replica_engine_has_vllm_server_batch_limits_and_no_stat_loggers(smoke_pool) -> None:
    """A replica is a server of many concurrent calls: it gets the batch limits `vllm serve` would use on this
    hardware (an engine built without a usage context gets the generic 128 sequences, on any GPU), except that a GPU
    replica prefills at most 2048 tokens per step (models/vllm_actor.GPU_DEFAULTS), and no per-step Prometheus
    statistics (the replica counts its own usage)."""
    from vllm.engine.arg_utils import EngineArgs
    from vllm.platforms import current_platform
    from vllm.usage.usage_lib import UsageContext

    from emocaustics.models.vllm_actor import engine_options

    tokens, seqs = EngineArgs.get_batch_defaults(1)
    budget = engine_options({}, cpu=current_platform.is_cpu()).get("max_num_batched_tokens",
                                                                    tokens[UsageContext.OPENAI_API_SERVER])
    got = asyncio.run(smoke_pool.run(_engine_settings, [None]))[0]
    assert got == {"max_num_seqs": seqs[UsageContext.OPENAI_API_SERVER], "max_num_batched_tokens": budget,
                   "log_stats": False}
