"""The simulated GPU engine (benchmarks/sim_engine.py) obeys its own model: per-step roofline time for prefill and
decode, continuous batching, at most max_num_seqs sequences at once, prefix-cache hits; its answers pass the
pipeline's parsers; and the real model pool can host it in place of the vLLM actor."""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace

import pytest

from benchmarks.sim_cluster import make_sim_pool
from benchmarks.sim_engine import PRESETS, SimEngine, estimate_tokens, fake_answer
from emocaustics.solve.schema import schema_of, validate_answer
from emocaustics.tasks.longdialogue.extract import parse as P

HW = replace(PRESETS["qwen2.5-7b@h100"], step_overhead_s=0.001)


def _run(hw, jobs, prefix_cache=False):
    """Submit (text, prompt_tokens, out_tokens) jobs at once; returns (finish times, engine)."""

    async def main():
        eng = SimEngine(hw, prefix_cache=prefix_cache)
        res = await asyncio.gather(*(eng.submit(t, p, o) for t, p, o in jobs))
        eng.close()
        return [r[0] for r in res], eng

    return asyncio.run(main())


def _alone(hw, prompt, out):
    """One request by hand: one prefill step (prompt < budget), then out-1 decode steps over a growing context."""
    t = hw.step_seconds(prompt, 0, prompt * prompt / 2)
    for g in range(1, out):
        ctx = prompt + g
        t += hw.step_seconds(1, ctx, ctx)
    return t


def test_single_request_costs_prefill_plus_decode_steps():
    (t,), eng = _run(HW, [("x" * 100, 1000, 100)])
    assert t == pytest.approx(_alone(HW, 1000, 100), rel=0.01)
    assert eng.stats.steps == 100 and eng.stats.generated_tokens == 100
    # decode at batch 1 is bandwidth-bound: ~150 tokens/s for a 7B model on one H100 (published ~140-190)
    per_token = (t - HW.step_seconds(1000, 0, 1000 * 500)) / 99
    assert 100 < 1 / per_token < 200


def test_continuous_batching_shares_steps():
    single = _alone(HW, 500, 200)
    times, eng = _run(HW, [(f"q{i}", 500, 200) for i in range(32)])
    assert max(times) < 1.5 * single  # 32 requests batched: far less than 32 x one request
    assert eng.stats.max_batch == 32
    assert eng.stats.generated_tokens == 32 * 200


def test_max_num_seqs_caps_the_batch():
    hw = replace(HW, max_num_seqs=4)
    single = _alone(hw, 500, 200)
    times, eng = _run(hw, [(f"q{i}", 500, 200) for i in range(8)])
    assert eng.stats.max_batch == 4
    assert sorted(times)[3] < 1.2 * single  # first wave
    assert max(times) > 1.8 * single  # the second wave waits for free slots


def test_short_request_leaves_the_batch_early():
    times, _ = _run(HW, [("a", 500, 300), ("b", 500, 20)])
    assert times[1] < 0.2 * times[0]  # no waiting for the longest sequence of the batch


def test_prefix_cache_hits_shared_prefix():
    prefix = "共享的事件背景" * 400

    async def main():
        eng = SimEngine(HW)
        first = await eng.submit(prefix + "第一句", 2000, 10)
        second = await eng.submit(prefix + "第二句", 2000, 10)
        eng.close()
        return first, second, eng

    (t1, c1), (t2, c2), eng = asyncio.run(main())
    assert c1 == 0 and c2 > 1900
    assert eng.stats.cached_prompt_tokens == c2


def test_token_estimate_follows_length():
    assert estimate_tokens("中" * 140) == 100
    assert estimate_tokens("a" * 360) == 100


@pytest.mark.parametrize("schema,model", [
    (schema_of(P.SextupleAnswer), P.SextupleAnswer),
    (P.pass1_schema(5, [1, 2]), P.Pass1Answer),
    (P.chain_direct_schema(["A", "B"]), P.ChainDirectAnswer),
    (P.chain_window_schema(["A", "B"], ["吵架"], 4), P.ChainWindowAnswer),
    (schema_of(P.MergeAnswer), P.MergeAnswer),
])
def test_answers_pass_the_pipeline_parsers(schema, model):
    import json

    rng = random.Random(1)
    for _ in range(50):
        value = fake_answer(schema, rng)
        validate_answer(model, None, json.dumps(value, ensure_ascii=False))
    if model is P.Pass1Answer:
        assert len(value["items"]) == 5


def test_model_pool_hosts_the_sim_actor(ray_local, tmp_path):
    """scale_bench's path: a sextuple `window` run on the shared plan, its dialogues' state machines inside simulated
    replicas, their stand-in vectors in the solver views (benchmarks/planrun.py; the task variant travels by value)."""
    from benchmarks.planrun import StandInEmbeddings, options_of, samples_of
    from emocaustics.solve.plan import asolve_samples
    from emocaustics.tasks.longdialogue.data.load import load_sample
    from emocaustics.tasks.longdialogue.extract.output import read_prior

    dialogues = sorted(load_sample().dialogues.values(), key=lambda d: d.id)[:2]
    task = StandInEmbeddings("sextuple")
    options = options_of(task="sextuple", method="window", window=4, step=2)
    pool = make_sim_pool("qwen2.5-7b@h100", 2, name="sim-test")
    try:
        rows = asyncio.run(asolve_samples(task, samples_of(dialogues), options, pool, tmp_path, concurrency=3))
        assert [(r["id"], r["ok"]) for r in rows] == [(str(d.id), True) for d in dialogues], rows
        sims = ray_local.get([a.sim_stats.remote() for a in pool.actors])
        assert sum(s["requests"] for s in sims) == sum(r["stats"]["llm_calls"] for r in rows) > 0
        assert all(s["makespan_s"] > 0 for s in sims if s["requests"])
    finally:
        pool.shutdown()
    written = read_prior(tmp_path, [d.id for d in dialogues])  # one record per utterance, in the reference format
    assert [len(written[str(d.id)]) for d in dialogues] == [len(d.utterances) for d in dialogues]


def test_priority_policy_serves_urgent_requests_first():
    """vLLM's scheduling_policy="priority": a waiting request with a lower priority value is admitted first; under
    "fcfs" the same request waits for its turn."""
    hw = replace(HW, max_num_seqs=2)

    async def main(policy):
        eng = SimEngine(replace(hw, scheduling_policy=policy), prefix_cache=False)
        jobs = [eng.submit(f"q{i}", 500, 200) for i in range(8)]
        urgent = eng.submit("chain step", 500, 200, priority=-5)
        res = await asyncio.gather(*jobs, urgent)
        eng.close()
        return [r[0] for r in res]

    fcfs, prio = asyncio.run(main("fcfs")), asyncio.run(main("priority"))
    assert fcfs[-1] == max(fcfs)  # last in, last out
    assert prio[-1] <= sorted(prio)[1]  # among the first wave
    with pytest.raises(ValueError, match="scheduling_policy"):
        SimEngine(replace(hw, scheduling_policy="lifo"))


def test_engines_sharing_a_process_keep_their_own_clocks():
    """Two simulated replicas in one event loop (as in one SimHost): the same work costs the same virtual time on
    each, whether or not the other one is busy."""

    async def main(n_other):
        a, b = SimEngine(HW, prefix_cache=False), SimEngine(HW, prefix_cache=False)
        res = await asyncio.gather(a.submit("x", 800, 100), *(b.submit(f"y{i}", 800, 300) for i in range(n_other)))
        a.close(), b.close()
        return res[0][0]

    alone, beside = asyncio.run(main(0)), asyncio.run(main(40))
    assert alone == pytest.approx(_alone(HW, 800, 100), rel=0.01)
    assert beside == alone


def test_pool_of_hosts_places_per_replica(ray_local, tmp_path):
    """Four simulated replicas in two host processes: the real pool balances the plan's dialogues over all four."""
    from benchmarks.planrun import options_of, samples_of
    from emocaustics.core.task import get_task
    from emocaustics.solve.plan import asolve_samples
    from emocaustics.tasks.longdialogue.data.load import load_sample

    samples = samples_of(load_sample().dialogues.values())
    pool = make_sim_pool("qwen2.5-7b@h100", 4, name="sim-hosts", per_process=2)
    try:
        rows = asyncio.run(asolve_samples(get_task("sextuple"), samples, options_of(task="sextuple", method="direct"),
                                          pool, tmp_path, concurrency=len(samples) + 1))
        assert all(r["ok"] for r in rows), rows
        sims = ray_local.get([a.sim_stats.remote() for a in pool.actors])
        assert len(pool.hosts) == 2 and len({s["pid"] for s in sims}) == 2
        assert all(s["arrived"] >= 1 for s in sims)  # every replica got work
        assert sum(s["arrived"] for s in sims) == len(samples)
    finally:
        pool.shutdown()


def test_a_smaller_prefill_budget_lets_a_chain_call_decode_beside_a_prefill_backlog():
    """Issue 31's tail: a chain call (100-token prompt, 10 tokens out, urgent) arrives with 4 prompts of 8192 tokens.
    It gets one token per engine step, and every step until the backlog is prefilled is as long as its prefill chunk.
    Attention and KV reads are left out of this worked example (layers and KV bytes 0): a step of n tokens costs
    max(weights / bandwidth, 2 x params x n / FLOPs) + overhead."""
    hw = replace(PRESETS["qwen2.5-72b@4xh100"], layers=0, kv_bytes_per_token=0, scheduling_policy="priority")

    def step(n):
        return hw.step_seconds(n, 0, 0)

    async def main(budget):
        eng = SimEngine(replace(hw, max_batched_tokens=budget), prefix_cache=False)
        backlog = [eng.submit(f"doc{i}", 8192, 1) for i in range(4)]
        chain = eng.submit("window", 100, 10, priority=-5)
        res = await asyncio.gather(chain, *backlog)
        eng.close()
        return res[0][0], max(r[0] for r in res[1:])

    (chain_8192, backlog_8192), (chain_2048, backlog_2048) = asyncio.run(main(8192)), asyncio.run(main(2048))
    # 8192: steps 1-4 prefill 8192 tokens (the chain's prompt and its first token in step 1, a token per step after),
    # step 5 the last 103 prompt tokens beside the chain's 5th token, steps 6-10 the chain alone
    assert chain_8192 == pytest.approx(4 * step(8192) + step(104) + 5 * step(1), rel=1e-9)
    # 2048: the chain's 10 tokens come in the first 10 steps of 2048 tokens each
    assert chain_2048 == pytest.approx(10 * step(2048), rel=1e-9)
    assert chain_2048 < 0.62 * chain_8192
    # the backlog costs the same compute either way: a chunk of 2048 tokens is compute-bound too
    assert backlog_2048 == pytest.approx(backlog_8192, rel=0.01)


def test_a_simulated_replica_takes_a_gpu_replicas_engine_options():
    """The replicas of scale_bench run with the pipeline's engine defaults for a GPU (models/vllm_actor.py: priority
    scheduling, a prefill budget of 2048 tokens per step); a spec's options override them, by vLLM's names or the
    simulator's."""
    from benchmarks.sim_cluster import SimEngineActor

    model = "sim:qwen2.5-72b@4xh100"
    hw = SimEngineActor(model, {}, "t").hw
    assert (hw.max_batched_tokens, hw.scheduling_policy, PRESETS["qwen2.5-72b@4xh100"].max_batched_tokens) == (
        2048, "priority", 8192)
    served = SimEngineActor(model, {"max_num_batched_tokens": 8192, "scheduling_policy": "fcfs"}, "t").hw
    assert (served.max_batched_tokens, served.scheduling_policy) == (8192, "fcfs")
    assert SimEngineActor(model, {"max_batched_tokens": 4096}, "t").hw.max_batched_tokens == 4096
    assert SimEngineActor(model, {"enable_prefix_caching": False}, "t").prefix_cache is False
