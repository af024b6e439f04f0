"""AER under `context: full` on the real vLLM CPU engine: prefix-cache hit rate with and without per-topic affinity,
and the pipeline's tokens/s against the raw engine replaying the very same prompts.

Under `full` context every question of a topic starts with the same system text and documents (thousands of tokens);
only the question differs. Two measurements, on the same prepared questions (zero-shot, published sample split):

1. Affinity (a pool of `--replicas` replicas, 2 by default): the questions run twice through `ModelPool.run` (the
   task's own solver, next to the engine), first with affinity = the question id (least-loaded placement: a topic's
   questions spread over the replicas, and each replica computes the documents again), then with the task's affinity
   (per topic: all questions of a topic on one replica, whose prefix cache serves the documents after the first). A
   phase tag at the start of the system text keeps the second phase from hitting the first one's cache. Per phase:
   vLLM's prefix-cache hit rate (cached / prompt tokens, from each request's `num_cached_tokens`), tokens, wall
   seconds, failures.
2. Pipeline vs raw engine (one replica, so that it compares with one raw engine): after a warm-up of 8 questions,
   the questions go through the job runner's own solve path (`solve.plan.asolve_samples`: per-topic affinity, 64 in
   flight, each prediction written as it finishes) while a tap on the engine records every request
   (`enginetap.py`); right after, the raw engine replays the recorded requests (token ids, sampling, schema) all at
   once on the same replica's `AsyncLLM` (no Ray round trips, chat template, tokenising or solver), from an empty
   prefix cache. Three rounds, back to back, so that both sides see about the same load. Then the replica is shut
   down and `replay.py` replays round 0's requests on a separate `vllm.LLM` with the same settings (as
   engine_bench does). `ratio_llm_phase` = pipeline generated tokens/s over its LLM phase (first request in to last
   answer out) / the raw engine's generated tokens/s (floor 0.8): `same_engine` is the median over the rounds,
   `separate_engine` round 0 against replay.py; `ratio_end_to_end_same_engine` uses the whole solve wall time.

The smoke model's answers are noise (random weights): this measures the machinery. The machine is shared (2 cores,
other work running): the 1-minute load average is recorded before and after every timing.

    python -m benchmarks.aer_prefix_bench [--max-questions 80] [--replicas 2] [--split sample] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from emocaustics.core.task import parse_options

RESULTS = Path(__file__).resolve().parent / "results"
# The team's local copy of the published data, used when neither --data nor EMOCAUSTICS_AER_DATA says where it is.
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "aer"
FLOOR = 0.8
WINDOW = 8192  # the smoke engine's max_model_len here, and the prompts' budget
CHARS_PER_TOKEN = 0.8  # the smoke tokenizer spends ~1.1 tokens per character of English (errs high)
N_FULL, N_QUICK = 80, 16


def _load() -> float:
    return round(os.getloadavg()[0], 2)


class _Tagged:
    """The replica's LLM with a phase tag prepended to every system message (a fresh prefix per phase)."""

    def __init__(self, llm: Any, tag: str) -> None:
        self.llm, self.tag, self.name = llm, tag, getattr(llm, "name", "llm")

    async def generate(self, requests: list[Any]) -> list[Any]:
        from dataclasses import replace

        tagged = [replace(r, messages=({**r.messages[0], "content": f"[{self.tag}] " + r.messages[0]["content"]},
                                       *r.messages[1:])) for r in requests]
        return await self.llm.generate(tagged)


def _make_solver(task: Any, options: Any, tag: str):  # noqa: ANN202 (a closure shipped to the replicas)
    async def solve(llm: Any, sample: Any) -> Any:
        from emocaustics.core.task import SolveFailed

        try:
            return await task.solve(_Tagged(llm, tag), sample, options)
        except SolveFailed as exc:
            return {"failed": str(exc)}

    return solve


async def affinity_phase(pool: Any, task: Any, samples: list[Any], options: Any, affinity: bool,
                         tag: str) -> dict[str, Any]:
    """One pass over the questions with per-topic affinity on or off; the pool's counters before/after."""
    before = await pool.stats()
    load0 = _load()
    t0 = time.perf_counter()
    key = (lambda s: task.placement(s, options).affinity) if affinity else (lambda s: f"aer:{s.id}")
    out = await pool.run(_make_solver(task, options, tag), samples, affinity_key=key,
                         weight_key=lambda s: task.placement(s, options).weight)
    wall = time.perf_counter() - t0
    after = await pool.stats()
    d = {k: after[k] - before[k] for k in ("prompt_tokens", "cached_prompt_tokens", "generated_tokens", "calls")}
    failed = sum(1 for r in out if not r or (isinstance(r, dict) and "failed" in r))
    return {
        "affinity": "topic" if affinity else "question", "questions": len(samples), "wall_s": round(wall, 2),
        "prefix_cache_hit_rate": (round(d["cached_prompt_tokens"] / d["prompt_tokens"], 4) if d["prompt_tokens"]
                                  else None),
        **d, "generated_tok_s": round(d["generated_tokens"] / wall, 1) if wall else None, "failed": failed,
        "load_avg_1m": [load0, _load()],
    }


def prepared(split: str, data: str | None, n: int | None, prompt: str = "zero-shot") -> tuple[Any, Any, list[Any]]:
    """(task, options, prepared samples): the first n questions of the split with their documents attached."""
    from emocaustics.core.task import ScoreContext, get_task

    task = get_task("aer")
    options = parse_options(task, {"method": "llm", "prompt": prompt, "context": "full",
                                  "max_context_tokens": WINDOW, "chars_per_token": CHARS_PER_TOKEN})
    loaded = task.load(task.Dataset(split=split, data=data, max_samples=n), options)
    return task, options, task.prepare(loaded.samples, options, ScoreContext())


async def run_affinity(spec: str, task: Any, options: Any, samples: list[Any]) -> dict[str, Any]:
    from emocaustics.models.factory import make_llm
    from emocaustics.models.spec import parse_llm_spec

    pool = make_llm(parse_llm_spec(spec))
    start_s = await pool.start()
    try:
        phases = [await affinity_phase(pool, task, samples, options, affinity=False, tag="phase-1"),
                  await affinity_phase(pool, task, samples, options, affinity=True, tag="phase-2")]
        stats = await pool.stats()
    finally:
        shutdown = getattr(pool, "shutdown", None)
        if shutdown is not None:
            shutdown()
    return {"llm": spec, "replicas": stats.get("replicas"), "engine_start_s": round(start_s, 1), "phases": phases}


async def raw_in_engine(llm: Any, path: str) -> dict[str, Any]:
    """The raw engine, in the replica itself: the recorded requests (token ids, sampling, schema) all at once on the
    replica's own `AsyncLLM`, from an empty prefix cache -- no Ray round trips, no chat template or tokenising, no
    solver. Runs inside the replica (`pool.run`); reaches the engine the way enginetap.py does (instrumentation)."""
    import pickle
    import uuid

    from vllm.inputs import TokensPrompt

    from benchmarks.replay import sampling

    engine = llm._actor._engine
    with open(path, "rb") as f:
        dump = pickle.load(f)
    recs = [r for r in dump["records"] if r.get("prompt_ids")]
    await engine.reset_prefix_cache()

    async def one(i: int, rec: dict[str, Any]) -> Any:
        final = None
        async for out in engine.generate(TokensPrompt(prompt_token_ids=rec["prompt_ids"]),
                                         sampling(rec, dump["schemas"]), f"raw-{i}-{uuid.uuid4().hex[:8]}"):
            final = out
        return final

    t0 = time.perf_counter()
    outs = await asyncio.gather(*(one(i, r) for i, r in enumerate(recs)))
    secs = time.perf_counter() - t0
    gen = sum(len(o.outputs[0].token_ids) for o in outs if o.outputs)
    prompt = sum(len(r["prompt_ids"]) for r in recs)
    cached = sum(int(o.num_cached_tokens or 0) for o in outs)
    return {"requests": len(recs), "seconds": round(secs, 3), "generated_tokens": gen, "prompt_tokens": prompt,
            "prefix_cache_hit_rate": round(cached / prompt, 4) if prompt else None,
            "generated_tokens_per_s": round(gen / secs, 2) if secs else None,
            "same_text_as_pipeline": sum(1 for r, o in zip(recs, outs) if o.outputs and o.outputs[0].text == r.get("text"))}


def _cpu(pids: list[int]) -> float:
    import psutil

    total = 0.0
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def run_ratio(spec: str, task: Any, options: Any, samples: list[Any], work: Path, repeats: int = 3) -> dict[str, Any]:
    """The job's solve path on one replica with the engine tap on, each time followed by the raw engine on the same
    replica replaying what it recorded (back to back, so both see about the same load); then, after the replica is
    gone, the recorded requests of the first round on a separate `vllm.LLM` (replay.py, as engine_bench does)."""
    import pickle

    from benchmarks import enginetap
    from benchmarks.engine_bench import run_replay
    from benchmarks.timeline import summarize
    from emocaustics.core.cluster import connect
    from emocaustics.models.pool import get_pool
    from emocaustics.models.spec import parse_llm_spec
    from emocaustics.solve.plan import asolve_samples

    connect()
    pool = get_pool(parse_llm_spec(spec))
    engine_pids: list[int] = []
    rounds: list[dict[str, Any]] = []
    try:
        start_s = asyncio.run(pool.start())
        pids = asyncio.run(pool.run(enginetap.install, [None]))[0]
        engine_pids = pids["engine_pids"]
        # Warm-up outside the timing, as replay.py warms its engine (first guided request compiles the grammar; a
        # job's engine is warm after its first config): a few questions through the same path, then discarded.
        asyncio.run(asolve_samples(task, samples[:8], options, pool, work / "warm-up", concurrency=64))
        for k in range(repeats):
            asyncio.run(pool.run(enginetap.reset_prefix_cache, [None]))
            asyncio.run(pool.run(enginetap.dump, [str(work / "discard.pkl")]))  # nothing recorded before this round
            cpu0 = (_cpu([pids["actor_pid"]]), _cpu(engine_pids), sum(os.times()[:2]))
            load0 = _load()
            t0 = time.perf_counter()
            rows = asyncio.run(asolve_samples(task, samples, options, pool, work / f"predictions-{k}", concurrency=64))
            wall = time.perf_counter() - t0
            cpu1 = (_cpu([pids["actor_pid"]]), _cpu(engine_pids), sum(os.times()[:2]))
            load1 = _load()
            dump_path = work / f"aer-full-{k}.pkl"
            asyncio.run(pool.run(enginetap.dump, [str(dump_path)]))
            dump = pickle.loads(dump_path.read_bytes())
            tl = summarize(dump["records"], dump["schemas"])
            raw = asyncio.run(pool.run(raw_in_engine, [str(dump_path)]))[0]
            asyncio.run(pool.run(enginetap.dump, [str(work / "discard.pkl")]))  # the raw requests are not the pipeline's
            rounds.append({
                "failed": sum(1 for r in rows if not r["ok"]), "solve_wall_s": round(wall, 2),
                "cpu_s": {"replica_actor": round(cpu1[0] - cpu0[0], 2), "engine_core": round(cpu1[1] - cpu0[1], 2),
                          "driver": round(cpu1[2] - cpu0[2], 2)},
                "pipeline": {k2: v for k2, v in tl.items() if k2 not in ("start", "end", "phases")},
                "raw_same_engine": raw, "load_avg_1m": [load0, load1, _load()],
                "ratio_llm_phase": _ratio(tl.get("generated_tokens_per_s"), raw.get("generated_tokens_per_s")),
                "ratio_end_to_end": _ratio(tl.get("generated_tokens", 0) / wall if wall else None,
                                           raw.get("generated_tokens_per_s")),
            })
    finally:
        pool.shutdown()
        _wait_gone(engine_pids)
    first = work / "aer-full-0.pkl"
    load0 = _load()
    replay = run_replay([first], work)
    sep = {**replay["runs"][first.name], "load_avg_1m": [load0, _load()]}
    tl0 = rounds[0]["pipeline"]
    return {
        "llm": spec, "engine_start_s": round(start_s, 1), "questions": len(samples), "rounds": rounds,
        "ratio_llm_phase_same_engine": _median([r["ratio_llm_phase"] for r in rounds]),
        "ratio_end_to_end_same_engine": _median([r["ratio_end_to_end"] for r in rounds]),
        "separate_replay": {k: (round(v, 3) if isinstance(v, float) else v) for k, v in sep.items()},
        "separate_replay_engine_start_s": round(replay["engine_start_seconds"], 1),
        "ratio_llm_phase_separate_engine": _ratio(tl0.get("generated_tokens_per_s"), sep.get("generated_tokens_per_s")),
    }


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None


def _median(values: list[float | None]) -> float | None:
    import statistics

    got = [v for v in values if v is not None]
    return round(statistics.median(got), 3) if got else None


def _wait_gone(pids: list[int], timeout: float = 30.0) -> None:
    """The replica's engine core must be gone before the replay starts a second engine on the same cores."""
    import psutil

    deadline = time.time() + timeout
    for pid in pids:
        try:
            p = psutil.Process(pid)
            p.wait(max(0.1, deadline - time.time()))
        except psutil.NoSuchProcess:
            continue
        except psutil.TimeoutExpired:  # our own engine core outlived its actor: end it by its id
            p.kill()


def run(quick: bool = False, *, max_questions: int | None = None, replicas: int = 2, split: str = "sample",
        data: str | None = None, ratio: bool = True) -> dict[str, Any]:
    """Both measurements; the result in the shape `python -m benchmarks` keeps in latest.json."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    n = max_questions or (N_QUICK if quick else N_FULL)
    if data is None and not os.environ.get("EMOCAUSTICS_AER_DATA") and (SHARED_DATA / "sample_data").is_dir():
        data = str(SHARED_DATA)
    task, options, samples = prepared(split, data, n)
    t_all = time.time()
    aff = asyncio.run(run_affinity(f"smoke?replicas={replicas}&max_model_len={WINDOW}", task, options, samples))
    by = {p["affinity"]: p for p in aff["phases"]}
    figures: dict[str, Any] = {
        "prefix_cache_hit_rate": {"affinity_topic": by["topic"]["prefix_cache_hit_rate"],
                                  "affinity_question": by["question"]["prefix_cache_hit_rate"]},
        "affinity": aff,
    }
    floors: dict[str, Any] = {}
    if ratio:
        with tempfile.TemporaryDirectory(prefix="aer-bench-") as tmp:
            r = run_ratio(f"smoke?max_model_len={WINDOW}", task, options, samples, Path(tmp))
        figures["ratio_llm_phase"] = {"same_engine": r["ratio_llm_phase_same_engine"],
                                      "separate_engine": r["ratio_llm_phase_separate_engine"]}
        figures["ratio_end_to_end_same_engine"] = r["ratio_end_to_end_same_engine"]
        figures["pipeline_vs_replay"] = r
        for name, value in figures["ratio_llm_phase"].items():
            if value is not None:
                floors[f"ratio_llm_phase_{name}"] = {"value": value, "floor": FLOOR, "ok": value >= FLOOR}
    return {
        "name": "aer_prefix_bench", "figures": figures, "floors": floors,
        "inputs": {"model": "smoke (random weights)", "data": samples[0].meta.get("root"), "split": split, "questions": len(samples),
                   "topics": len({s.input["topic_id"] for s in samples}), "prompt": options.prompt,
                   "context": "full", "max_context_tokens": WINDOW, "chars_per_token": CHARS_PER_TOKEN,
                   "mean_prompt_tokens_est": round(sum(s.meta["prompt_tokens_est"] for s in samples) / len(samples)),
                   "replicas_affinity": replicas, "quick": quick, "seconds_total": round(time.time() - t_all, 1)},
        "notes": NOTES,
    }


NOTES = [
    "smoke model (random weights, 2 layers): the machinery is measured, not quality; answers are noise",
    "prefix_cache_hit_rate = cached / prompt tokens over a phase, from vLLM's per-request num_cached_tokens; the same "
    "prepared prompts run in both phases, each phase behind its own tag so that it starts with a cold cache",
    "without affinity each replica computes each topic's documents once; with it only one replica does: the gap grows "
    "with the number of replicas and topics, and with eviction on a real GPU's smaller KV cache (here 1 GiB of CPU "
    "memory holds every topic of this tiny model)",
    "ratio_llm_phase = pipeline generated tokens/s over its LLM phase / the raw engine's generated tokens/s on the same "
    "recorded requests all at once (empty prefix cache): same_engine = the replica's own AsyncLLM right after each "
    "round (median of 3 rounds), separate_engine = replay.py's vllm.LLM after the replica is gone; the work is "
    "prefill (~6k prompt tokens per ~14 generated), so the ratio is also the ratio of seconds",
    "2 shared CPU cores with other work running: load_avg_1m is recorded before/after every timing; the separate "
    "replay runs minutes after the pipeline, so that ratio carries the load difference between them",
    "cpu_s per round: the replica actor (chat template, tokenising, our solver), the engine core process, the driver "
    "(asolve_samples, writing predictions)",
]


def to_markdown(res: dict[str, Any]) -> str:
    f = res["figures"]
    lines = [f"# aer_prefix_bench ({res.get('run', {}).get('when', '')})", "",
             f"command: `{res.get('run', {}).get('command', '')}`", "",
             "| affinity | questions | hit rate | prompt tokens | cached | wall s | failed | load 1m |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for p in f["affinity"]["phases"]:
        lines.append(f"| {p['affinity']} | {p['questions']} | {p['prefix_cache_hit_rate']} | {p['prompt_tokens']} | "
                     f"{p['cached_prompt_tokens']} | {p['wall_s']} | {p['failed']} | {p['load_avg_1m']} |")
    r = f.get("pipeline_vs_replay")
    if r:
        lines += ["", "| round | what | seconds | generated tok/s | prompt tokens | hit rate | ratio LLM phase | "
                  "CPU s actor / engine core / driver | load 1m |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for k, rd in enumerate(r["rounds"]):
            pl, raw = rd["pipeline"], rd["raw_same_engine"]
            cpu = rd["cpu_s"]
            lines.append(f"| {k} | pipeline (LLM phase) | {pl.get('llm_phase_s')} | {pl.get('generated_tokens_per_s')} | "
                         f"{pl.get('prompt_tokens')} | {pl.get('prefix_cache_hit_rate')} | {rd['ratio_llm_phase']} | "
                         f"{cpu['replica_actor']} / {cpu['engine_core']} / {cpu['driver']} | {rd['load_avg_1m']} |")
            lines.append(f"| {k} | raw, same engine | {raw.get('seconds')} | {raw.get('generated_tokens_per_s')} | "
                         f"{raw.get('prompt_tokens')} | {raw.get('prefix_cache_hit_rate')} | | | |")
        sep = r["separate_replay"]
        lines.append(f"| 0 | raw, separate vllm.LLM | {sep.get('seconds')} | {sep.get('generated_tokens_per_s')} | "
                     f"{sep.get('prompt_tokens')} | {sep.get('prefix_cache_hit_rate')} | "
                     f"{r['ratio_llm_phase_separate_engine']} | | {sep.get('load_avg_1m')} (engine start + replay) |")
        lines += ["", f"ratio_llm_phase: same engine (median of rounds) {r['ratio_llm_phase_same_engine']}, separate "
                  f"engine {r['ratio_llm_phase_separate_engine']} (floor {FLOOR}); ratio_end_to_end same engine "
                  f"{r['ratio_end_to_end_same_engine']}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.aer_prefix_bench", description=__doc__.splitlines()[0])
    p.add_argument("--split", default="sample")
    p.add_argument("--data", default=None, help="the AER data folder (default: EMOCAUSTICS_AER_DATA or the shared copy)")
    p.add_argument("--max-questions", type=int, default=None, help=f"default {N_FULL} ({N_QUICK} with --quick)")
    p.add_argument("--replicas", type=int, default=2, help="replicas of the affinity measurement")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--no-ratio", action="store_true", help="skip the pipeline-vs-replay measurement")
    p.add_argument("--out", type=Path, default=RESULTS / "aer_prefix_bench.json")
    args = p.parse_args(argv)
    given = sys.argv[1:] if argv is None else argv
    command = " ".join(["python -m benchmarks.aer_prefix_bench", *given])
    when = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    load0 = _load()
    t0 = time.perf_counter()
    res = run(args.quick, max_questions=args.max_questions, replicas=args.replicas, split=args.split,
              data=args.data, ratio=not args.no_ratio)
    res["run"] = {"when": when, "seconds": round(time.perf_counter() - t0, 1), "command": command,
                  "quick": args.quick, "load_avg_1m": [load0, _load()]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1, default=str) + "\n", encoding="utf-8")
    args.out.with_suffix(".md").write_text(to_markdown(res), encoding="utf-8")
    print(to_markdown(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
