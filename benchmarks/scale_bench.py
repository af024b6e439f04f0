"""Scale by simulation: the real pipeline on a simulated multi-node GPU cluster (see benchmarks/sim_engine.py).

400 dialogues x a 6-config grid (the paper's five LLM methods at their defaults + the K=10 window ablation) go through
the shared solving plan (`solve.plan.asolve_samples` -> `ModelPool.run` -> `solve_item` -> the dialogue state machine
inside each replica actor; stand-in vectors in the solver views: benchmarks/planrun.py) at 1, 4, 16 and 64 replicas
of a SIMULATED Qwen2.5-72B engine on 4x H100 each, on a Ray cluster of several Ray nodes started on this machine
(`ray.cluster_utils.Cluster`; each node carries a custom `sim_gpu` resource and stands for several GPU hosts; replicas
request 4 of it, 8 replicas share one actor process, and the processes are spread over the nodes; see sim_cluster.py). Then a 10x synthetic scale-up (every dialogue ten times under new ids and holder names) at 64
replicas, the longest dialogue alone per config (the critical path no replica count shortens), and the real scorer on
a sample of the predictions (with the simulated engine as the judge). Replicas run vLLM's priority scheduling, as the
pipeline's engines do by default (`SCALE_BENCH_POLICY=fcfs` for the comparison).

Figures: simulated makespan and throughput per replica count, scaling efficiency = throughput / (replicas x the
single-replica throughput) and its bound from the critical path, orchestration overhead per LLM call = real CPU
seconds of every process of the cluster (driver, raylets, actors) minus the simulator's own CPU, per call; driver
peak RSS; projected wall time of the paper-style run on N GPUs. Dialogues are dispatched longest first, all at once (in-flight = everything), each replica
holds its clock until all its items have arrived, so every run starts at simulated t=0.

    python -m benchmarks.scale_bench [--quick] [--copies N] [--replicas 1,4,16,64]
                                        # writes benchmarks/results/scale_bench.json and .md
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.scale_figures import (FLOOR_EFFICIENCY, FLOOR_OVERHEAD_MS, GPUS_PER_REPLICA,  # noqa: F401 (here too)
                                      PROJECTION_NOTE, RESULTS, derive, floors_of, projections, rederive, to_markdown,
                                      write)
from benchmarks.sim_engine import ANCHORS

PRESET = "qwen2.5-72b@4xh100"
GRID: list[tuple[str, dict[str, Any]]] = [
    ("sextuple-direct", {"task": "sextuple", "method": "direct"}),
    ("sextuple-rag", {"task": "sextuple", "method": "rag"}),
    ("sextuple-window-20-5", {"task": "sextuple", "method": "window", "window": 20, "step": 5}),
    ("sextuple-window-10-5", {"task": "sextuple", "method": "window", "window": 10, "step": 5}),
    ("emotion-direct", {"task": "emotion", "method": "direct"}),
    ("emotion-window-30-10", {"task": "emotion", "method": "window", "window": 30, "step": 10}),
]
# vLLM's scheduling policy for the replicas: the pipeline's default (ENGINE_DEFAULTS); SCALE_BENCH_POLICY=fcfs for
# the comparison run
POLICY = os.environ.get("SCALE_BENCH_POLICY", "priority")
# The replicas' prefill budget per engine step: the pipeline's on a GPU (models/vllm_actor.GPU_DEFAULTS, 2048);
# SCALE_BENCH_BATCHED_TOKENS=8192 (what `vllm serve` takes on an H100) for the comparison
BATCHED_TOKENS = int(os.environ.get("SCALE_BENCH_BATCHED_TOKENS", "0")) or None
# Simulated replicas per Ray actor process (SimHost): 64 processes of ~240 MiB did not fit this machine beside the
# driver; the pool still places, balances and retries per replica (see sim_cluster.py)
PER_PROCESS = 8


def pseudo_embeddings(sentences: list[str], dim: int = 32) -> np.ndarray:
    """Character-bigram hashing vectors (unit length) for rag retrieval and window joins. A stand-in: the embedding
    stage is measured by score_bench; here only the prompts' shape matters, and similar sentences stay similar.
    32 dimensions, not a real model's 384-1024: every rag/window item carries its dialogue's vectors, and at 10x the
    driver holds 24,000 items in flight (with 256 dimensions it passed 4 GiB; a real run ships real-size vectors).
    The bigram's bucket is its CRC-32, not `hash()`: string hashes change with every process (PYTHONHASHSEED), and with
    them the rag retrievals and window joins, so the prompts and the critical path moved between runs (444 to 453
    simulated seconds for the same dialogue alone; issue 31)."""
    out = np.zeros((len(sentences), dim), dtype=np.float32)
    for i, s in enumerate(sentences):
        for a, b in zip(s, s[1:]):
            out[i, zlib.crc32((a + b).encode()) % dim] += 1.0
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms == 0, 1, norms)


def build_runs(dialogues: list[Any], grid: list[tuple[str, dict]], copies: int) -> dict[str, tuple[Any, Any, list]]:
    """Each config's task, options and samples for `asolve_samples`: the dialogues longest first, `copies` times
    (`planrun.copies_of`: new ids, renamed holders), the stand-in vectors packed now (outside the timing)."""
    from benchmarks import planrun

    order = sorted(dialogues, key=lambda d: -len(d.utterances))  # longest first: long dependent chains start early
    samples = planrun.samples_of(planrun.copies_of(order, copies))
    originals = samples[:len(order)]  # copies share their original's sentences, so its packed vectors
    packed: dict = {}  # one packed copy per dialogue in the driver, shared by every config and copy
    runs: dict[str, tuple[Any, Any, list]] = {}
    for label, cfg_args in grid:
        task = planrun.StandInEmbeddings(cfg_args["task"], pseudo_embeddings, packed=packed)
        options = planrun.options_of(**cfg_args)
        task.prepare(originals, options)
        runs[label] = (task, options, samples)
    return runs


def _cpu_seconds() -> dict[int, float]:
    """CPU seconds (user + system) of this process and every process below it (raylets, GCS, workers)."""
    import psutil

    me = psutil.Process()
    out: dict[int, float] = {}
    for p in [me, *me.children(recursive=True)]:
        try:
            t = p.cpu_times()
            out[p.pid] = t.user + t.system
        except psutil.Error:
            pass
    return out


async def one_run(pool: Any, runs: dict[str, tuple[Any, Any, list]], out: Path) -> dict[str, Any]:
    """Every config's samples through the shared plan (`solve.plan.asolve_samples`) at once, each config with all its
    samples in flight; returns simulated and real figures of the run."""
    import psutil

    from emocaustics.solve.plan import asolve_samples

    actors = pool.actors
    await asyncio.gather(*(a.reset.remote() for a in actors))
    n = sum(len(samples) for _, _, samples in runs.values())
    cpu0 = _cpu_seconds()
    me = psutil.Process()
    rss = [me.memory_info().rss]
    for label in runs:
        (out / label).mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    tasks = [asyncio.ensure_future(asolve_samples(task, samples, options, pool, out / label,
                                                  concurrency=len(samples) + 1))
             for label, (task, options, samples) in runs.items()]
    while True:  # replicas hold their clocks until every item has reached them
        arrived = await asyncio.gather(*(a.sim_stats.remote() for a in actors))
        if sum(s["arrived"] for s in arrived) >= n:
            break
        rss.append(me.memory_info().rss)
        await asyncio.sleep(0.2)
    t_dispatch = time.perf_counter() - t0
    await asyncio.gather(*(a.release.remote() for a in actors))
    pending = set(tasks)
    while pending:
        _, pending = await asyncio.wait(pending, timeout=0.25)
        rss.append(me.memory_info().rss)
    rows = [r for t in tasks for r in t.result()]
    wall = time.perf_counter() - t0
    cpu1 = _cpu_seconds()
    cpu = sum(v - cpu0.get(pid, 0.0) for pid, v in cpu1.items())
    sims = await asyncio.gather(*(a.sim_stats.remote() for a in actors))
    return summarise(rows, sims, wall=wall, cpu=cpu, dispatch=t_dispatch, rss_peak=max(rss))


def summarise(rows: list[dict], sims: list[dict], *, wall: float, cpu: float, dispatch: float,
              rss_peak: int) -> dict[str, Any]:
    active = [s for s in sims if s["requests"]]
    makespan = max(s["makespan_s"] for s in active)
    calls = sum(s["requests"] for s in sims)
    gen = sum(s["generated_tokens"] for s in sims)
    busy = [s["busy_s"] for s in sims]
    sim_cpu = sum(s["cpu_s"] + s["answer_cpu_s"] for s in sims)
    failed = [r for r in rows if not r["ok"]]
    reasons: dict[str, int] = {}
    for r in failed:
        key = f"{r['step']}: {str(r['reason'])[:80]}"
        reasons[key] = reasons.get(key, 0) + 1
    return {
        "replicas": len(sims), "nodes_used": len({s["node"] for s in sims}), "dialogue_runs": len(rows),
        "failed": len(failed), "failure_reasons": dict(sorted(reasons.items(), key=lambda kv: -kv[1])[:5]),
        "llm_calls": calls, "prompt_tokens": sum(s["prompt_tokens"] for s in sims),
        "cached_prompt_tokens": sum(s["cached_prompt_tokens"] for s in sims), "generated_tokens": gen,
        "sim_makespan_s": round(makespan, 1), "sim_tokens_per_s": gen / makespan,
        "sim_calls_per_s": calls / makespan,
        "mean_batch": sum(s["batch_x_s"] for s in sims) / max(1e-9, sum(busy)),
        "replica_busy_mean": float(np.mean(busy)) / makespan, "replica_busy_max_over_mean": max(busy) / float(np.mean(busy)),
        "real_wall_s": round(wall, 2), "real_dispatch_s": round(dispatch, 2), "real_cpu_s": round(cpu, 2),
        "sim_cpu_s": round(sim_cpu, 2), "overhead_ms_per_call": 1000 * max(0.0, cpu - sim_cpu) / calls,
        "wall_ms_per_call_2_cores": 1000 * wall * 2 / calls, "speedup_sim_over_real": makespan / wall,
        "driver_rss_peak_mib": round(rss_peak / 2**20, 1),
    }


def start_cluster(nodes: int, sim_gpus_per_node: int) -> Any:
    import ray
    from ray.cluster_utils import Cluster

    if ray.is_initialized():  # an earlier benchmark of the same `make bench` process left its local Ray running
        ray.shutdown()
    common = {"object_store_memory": 100_000_000, "resources": {"sim_gpu": sim_gpus_per_node}}
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "include_dashboard": False, **common})
    for _ in range(nodes - 1):
        cluster.add_node(num_cpus=0, **common)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    return cluster


async def score_sample(dialogues: list[Any], out: Path, judge: Any, grid: list[tuple[str, dict]]) -> dict[str, Any]:
    """The real scorer on the simulated predictions: files read by the real readers, scored with the real rules."""
    from emocaustics.tasks.longdialogue.score.engine import ascore
    from emocaustics.tasks.longdialogue.score.predictions import read_prediction_files

    res: dict[str, Any] = {"dialogues": len(dialogues)}
    t0 = time.perf_counter()
    last = {args["task"]: label for label, args in grid}  # the last config of each task (window when present)
    for task, jdg in (("sextuple", None), ("emotion", judge)):
        label = last[task]
        res[f"{task}_config"] = label
        preds = read_prediction_files(out / label, task).predictions
        r = await ascore(task, dialogues, {d.id: preds[d.id] for d in dialogues if d.id in preds},
                         embedder="minilm", judge=jdg)
        res[f"{task}_scored"] = r.summary["scored"]
        res[f"{task}_failures"] = r.summary["failures"][:3]
        res[f"{task}_score"] = r.summary["score"]
    res["seconds"] = round(time.perf_counter() - t0, 1)
    return res


async def critical_path(pool: Any, dialogues: list[Any], grid: list[tuple[str, dict]], work: Path) -> dict[str, float]:
    """Simulated seconds each config takes for the longest dialogue alone on an idle replica: its chain of dependent
    calls, which no number of replicas shortens, so a lower bound on the makespan of any run that contains it."""
    longest = max(dialogues, key=lambda d: len(d.utterances))
    out = {}
    for label, args in grid:
        r = await one_run(pool, build_runs([longest], [(label, args)], 1), work / f"crit-{label}")
        out[label] = r["sim_makespan_s"]
    return out


def stratified(dialogues: list[Any], every: int) -> list[Any]:
    """Every `every`-th dialogue by length: the same length mix, fewer dialogues."""
    return sorted(dialogues, key=lambda d: len(d.utterances))[::every]


async def _bench(dialogues: list[Any], replicas: list[int], base_every: int, copies: int, scale_r: int,
                 grid: list[tuple[str, dict]], score_n: int, work: Path) -> dict[str, Any]:
    from benchmarks.sim_cluster import make_sim_pool

    top = max(replicas + ([scale_r] if copies else []))
    opts = {"resources": {"sim_gpu": GPUS_PER_REPLICA}, "scheduling_strategy": "SPREAD"}
    t0 = time.perf_counter()

    def pool_of(r: int, policy: str = POLICY) -> Any:  # smaller pools attach to the first hosts' first slots
        return make_sim_pool(PRESET, r, name="scale-bench", actor_options=opts, per_process=PER_PROCESS,
                             engine_opts={"scheduling_policy": policy,
                                          **({"max_num_batched_tokens": BATCHED_TOKENS} if BATCHED_TOKENS else {})})

    full = pool_of(top)
    await full.start()
    start_s = time.perf_counter() - t0
    runs: dict[int, dict] = {}
    parts: dict[int, list[Any]] = {}
    scaled = None
    try:
        for r in sorted(replicas):
            # one replica is saturated by a stratified part of the data already; it is the per-replica baseline
            part = parts[r] = stratified(dialogues, base_every) if r == 1 and base_every > 1 else dialogues
            runs[r] = await one_run(pool_of(r), build_runs(part, grid, 1), work / f"r{r}")
            runs[r]["dialogues"] = len(part)
            print(f"scale_bench: {r} replicas: {json.dumps(runs[r])}", flush=True)
        if copies:
            scaled = await one_run(pool_of(scale_r), build_runs(dialogues, grid, copies), work / "scaled")
            scaled["dialogues"] = len(dialogues) * copies
            print(f"scale_bench: {copies}x at {scale_r} replicas: {json.dumps(scaled)}", flush=True)
        crit = await critical_path(pool_of(1), dialogues, grid, work)
        print(f"scale_bench: critical path of the longest dialogue per config (s): {json.dumps(crit)}", flush=True)
        top_1x = max(replicas)  # score the shortest dialogues that run predicted
        sample = sorted(parts[top_1x], key=lambda d: len(d.utterances))[:score_n]
        scoring = await score_sample(sample, work / f"r{top_1x}", pool_of(top_1x), grid)
    finally:
        full.shutdown()
    return {"actor_start_s": round(start_s, 1), "runs": runs, "scaled": scaled, "scoring": scoring,
            "critical_path_s": crit}


def run(quick: bool = False, copies: int | None = None, replicas: list[int] | None = None) -> dict:
    """`copies`: the synthetic scale-up factor, run at 64 replicas only (where the efficiency floor applies); default
    env SCALE_BENCH_COPIES, else 10. At 10x every one of 24,000 dialogue-runs is in flight at once: ~17 GiB of this
    machine's 24 (8 SimHost processes at ~1.8 GiB, the driver at ~2.2 GiB)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import ray

    from benchmarks.sim_engine import PRESETS
    from emocaustics.models.vllm_actor import engine_options
    from emocaustics.tasks.longdialogue.data.load import load_corpus, load_sample

    root = os.environ.get("EMOCAUSTICS_DATA") or str(Path(__file__).resolve().parents[2] / "shared" / "datasets" / "emocaustics")
    notes = []
    if Path(root, "chat").is_dir():
        dialogues = sorted(load_corpus(root).dialogues.values(), key=lambda d: d.id)
    else:
        dialogues = list(load_sample().dialogues.values())
        notes.append(f"published data not found at {root}: the sample dialogues stand in")
    if copies is None:
        copies = int(os.environ.get("SCALE_BENCH_COPIES", "10"))
    grid, base_every, scale_r, nodes, score_n = GRID, 4, 64, 4, 6
    replicas = replicas or [int(r) for r in os.environ.get("SCALE_BENCH_REPLICAS", "1,4,16,64").split(",")]
    if 1 not in replicas:
        raise ValueError("the replica counts must include 1: the single-replica rate is every efficiency's baseline")
    if quick:
        dialogues, grid, replicas, base_every, scale_r, nodes, score_n = (
            dialogues[:40], GRID[:3] + GRID[4:5], [1, 4], 1, 4, 2, 2)
        copies = min(copies, 2)
    t_bench = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="scale_bench_"))
    top = max(replicas + ([scale_r] if copies else []))
    cluster = start_cluster(nodes, top * GPUS_PER_REPLICA // nodes + GPUS_PER_REPLICA)
    try:
        res = asyncio.run(_bench(dialogues, replicas, base_every, copies, scale_r, grid, score_n, work))
    finally:
        ray.shutdown()
        cluster.shutdown()
        shutil.rmtree(work, ignore_errors=True)
    figures = derive(res, copies, scale_r, len(dialogues))
    figures["bench_wall_s"] = round(time.perf_counter() - t_bench, 1)
    hw = PRESETS[PRESET]
    batched_tokens = BATCHED_TOKENS or engine_options({}, cpu=False)["max_num_batched_tokens"]
    notes += [
        f"SIMULATED engine: {hw.name}, roofline step times from published figures (sources in benchmarks/sim_engine.py);"
        " simulated seconds on a virtual clock; answers are random schema-valid JSON, so scores mean nothing.",
        "Real: Ray cluster (several Ray nodes on this machine, custom resource sim_gpu), ModelPool placement/affinity, "
        "the shared solving plan (solve/plan.py) and the dialogue state machines inside the replica actors, answer parsing, prediction files, and the "
        "scorer on a sample (minilm embedder, the simulated engine as LLM judge).",
        f"Single-replica baseline on every {base_every}th dialogue by length (same mix; one replica is saturated by it).",
        PROJECTION_NOTE,
        "Placement (models/placement.py): the pool gathers the runs that arrive together and places them longest "
        "chain first (extract.dialogue.item_chain: the answers that wait for each other) on the least-loaded replica, where a "
        "replica's load is its work (extract.dialogue.item_weight: answers plus the prompt text a prefix cache cannot serve) "
        "plus its longest chain's duration beyond that chain's work, so long chains keep lightly loaded replicas. "
        "Affinity per (dialogue, config), except that an emotion window run shares its own sextuple window run's "
        "replica with the sextuple window run of the same dialogue (same prompts). All items are in flight at once "
        "while the replicas hold their clocks.",
        f"Replicas run vLLM's scheduling_policy={POLICY!r} (the pipeline's engine default): each call carries minus the "
        "number of calls of its dialogue that wait for it in sequence, so a long window chain's next call is not queued "
        "behind hundreds of independent calls. SCALE_BENCH_POLICY=fcfs reruns it first-come-first-served.",
        f"Replicas prefill at most {batched_tokens} tokens per engine step (vLLM's max_num_batched_tokens; the "
        "pipeline's GPU default, models/vllm_actor.GPU_DEFAULTS): with vllm serve's 8192, every step that prefilled "
        "other dialogues' prompts held the decoding chain calls for up to ~0.8 s, and the 64-replica makespan was "
        "~500 s instead of ~455 s (issue 31). SCALE_BENCH_BATCHED_TOKENS=8192 reruns it with the server's budget.",
        "critical_path_s: the longest dialogue (285 utterances) alone on an idle replica, per config, the slowest "
        "config taken: its window passes are a chain of dependent calls that no number of replicas shortens. "
        "efficiency_bound = ideal makespan / max(ideal, critical path). At 1x and 64 replicas perfect scaling would "
        "finish in less time than that chain takes, so 1x efficiency at 64 replicas is bounded by the workload, not the "
        "orchestration. The 0.85 floor is judged on the 10x scale-up (~375 dialogue-runs per replica).",
        f"{PER_PROCESS} simulated replicas share each Ray actor process (SimHost, benchmarks/sim_cluster.py): 64 "
        "processes of ~240 MiB each did not fit this 24 GiB machine beside the 10x run. The pool still holds one handle "
        "per replica and places, balances and retries per replica; replicas share a process's CPU, not their clocks.",
        "Overhead per call = real CPU seconds of all cluster processes minus the simulator's own CPU, per LLM call; on a "
        "real cluster that CPU is spread over the GPU hosts' cores.",
        "rag/window use character-bigram hashing vectors as embeddings (the embedding stage is score_bench's subject), "
        "packed into each solver view (benchmarks/planrun.py) instead of the run's embedding feed; that task variant "
        "travels to the replicas by value (~6 KB per dialogue-run, where the task itself is ~0.6 KB by reference).",
    ]
    scaled, runs = res["scaled"], res["runs"]
    if not scaled:
        notes.append("10x scale-up skipped (SCALE_BENCH_COPIES=0 or --copies 0): the floor is then judged on the 1x run "
                     "at 64 replicas, which the critical path bounds (see above).")
    else:
        notes.append(f"{copies}x scale-up: every dialogue {copies} times under new ids and renamed holders (no shared "
                     f"prefixes between copies), all six configs, at {scale_r} replicas only; efficiency against the "
                     "same measured single-replica rate.")
    floors = floors_of(res, figures, copies)
    inputs = {"dialogues": len(dialogues), "grid": [label for label, _ in grid], "replicas": replicas,
              "scale_copies": copies, "scale_replicas": scale_r, "ray_nodes": nodes, "preset": PRESET,
              "hardware": {k: getattr(hw, k) for k in hw.__slots__}, "anchors": ANCHORS,
              "gpus_per_replica": GPUS_PER_REPLICA, "quick": quick, "scheduling_policy": POLICY,
              "max_num_batched_tokens": batched_tokens, "replicas_per_process": PER_PROCESS}
    result = {"name": "scale_bench", "figures": figures, "inputs": inputs, "notes": notes, "floors": floors,
              "details": res}
    write(result)
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale_bench")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--copies", type=int, default=None, help="synthetic scale-up factor at 64 replicas")
    parser.add_argument("--replicas", type=lambda v: [int(x) for x in v.split(",")], default=None,
                        help="1x replica counts, comma-separated (default 1,4,16,64; 1 is required)")
    parser.add_argument("--rederive", action="store_true",
                        help="recompute the figures of the stored run (results/scale_bench.json) without re-measuring")
    args = parser.parse_args()
    if args.rederive:
        write(rederive())
        raise SystemExit(0)
    out = run(quick=args.quick, copies=args.copies, replicas=args.replicas)
    print(json.dumps({k: out[k] for k in ("figures", "floors")}, indent=1, default=str))
