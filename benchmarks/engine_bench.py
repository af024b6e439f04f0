"""Engine efficiency: the real pipeline's generated tokens/s against the raw engine replaying the very same prompts.

For each method (sextuple direct / rag / window, emotion direct / window) the real pipeline runs with the smoke model
(`run_extract`: the shared plan -> model pool -> per-dialogue state machines inside the vLLM replica actor), with a fresh,
empty response cache, while a tap on the replica's engine records every request it received (`enginetap.py`). Then
the replica is shut down and `replay.py` builds one `vllm.LLM` with the same settings and batch limits in a separate
process and replays each method's requests all at once (`LLM.generate`, empty prefix cache), each held to the tokens
the pipeline's engine generated for it (`forced.py`: the same work on both sides). Reported per method:

- `ratio_llm_phase`: pipeline generated tokens/s over its LLM phase (first request in to last answer out) divided by
  the replay's tokens/s; for window and chains window the median of 3 runs, each against its own replay (the
  2 shared cores drift by a quarter between runs), each run's ratio in `ratio_llm_phase_runs`;
  `ratio_llm_phase_free` divides by the replay's tokens/s with its own greedy answers instead (on the random model
  they differ from the pipeline's, and so does the work); `ratio_end_to_end` uses the whole `run_extract` wall time
  (Ray start, the embedding feed for rag/window, writing files). Floor 0.5 for window (issue 4), on the LLM
  phase;
- `cpu_split_s` / `engine_cores_used`: where the machine's CPU went while the method ran (engine, replica actor,
  driver, the local embedder, the rest), and how many of the cores the engine had; `cpu_ceiling`: the replay's CPU
  seconds over the pipeline's, the best `ratio_llm_phase` the pipeline's own CPU work allows while it keeps every
  core busy (window on 2 cores: the embedder and our state machines share the engine's cores, the replay has them
  to itself); `engine_cpu_vs_replay`: the engine's CPU for the same tokens, pipeline over replay;
- the prefix-cache hit rate vLLM reported per request (`num_cached_tokens`), per step, pass 2 of window included;
- where the time goes: set-up before the first request, the LLM phase, the tail; engine busy fraction and mean
  requests in flight; the share of each dialogue's life spent waiting on our code between dependent steps; CPU
  seconds of the replica actor (our state machines, tokenising, detokenising) and of the engine core; per-call
  costs of chat template + tokenising and of JSON parsing, timed offline on the recorded calls.

The smoke model's text is noise: what is measured is the machinery, not quality.
    python -m benchmarks.engine_bench [--quick] [--n METHOD=N ...]

`ENGINE_BENCH_LLM` names another engine spec for the pipeline (default `smoke`; e.g. `smoke?max_num_seqs=64` to try a
batch limit): the replay then runs with the batch limits that engine ran with.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import enginetap
from benchmarks.engine_figures import NOTES, headline, to_markdown
from benchmarks.timeline import summarize

RESULTS = Path(__file__).resolve().parent / "results"
REPO = Path(__file__).resolve().parents[1]
FLOOR = 0.5
REPLAY_TIMEOUT_S = 1500
METHODS = ("sextuple/direct", "sextuple/rag", "sextuple/window", "emotion/direct", "emotion/window")
# Dialogues per method (the first N of paper-100), sized so that the whole `make bench` stays under 30 minutes on 2
# cores (this one near 7): direct and rag ask once per utterance (~19 per dialogue, ~190 tokens each on the smoke
# model), so 20 of them; window and the chain methods 50 (issue 4's window figure on all 100: `--n sextuple/window=100`).
N_FULL = {"sextuple/direct": 20, "sextuple/rag": 20, "sextuple/window": 50, "emotion/direct": 50,
          "emotion/window": 50}
N_QUICK = {m: 4 for m in METHODS}
# Runs of the dependent-call methods, whose ratio is the median of them (issue 18); the others run once.
# `ENGINE_BENCH_REPEATS=N` sets both.
REPEATS = {"sextuple/window": 3, "emotion/window": 3}


def _cpu(pids: list[int]) -> float:
    import psutil

    total = 0.0
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
            total += t.user + t.system
        except psutil.Error:  # gone: its time is no longer readable, report what is
            pass
    return total


def _cpu_snapshot() -> dict[int, float]:
    """CPU seconds so far of every process on the machine, and (key -1) this process's reaped children: the run's
    embedder child is stopped before `run_extract` returns, and its time then shows only there."""
    import psutil

    snap: dict[int, float] = {}
    for p in psutil.process_iter(["cpu_times"]):
        t = p.info.get("cpu_times")
        if t is not None:
            snap[p.pid] = t.user + t.system
    me = os.times()
    snap[-1] = me.children_user + me.children_system
    return snap


def embedder_pids() -> list[int]:
    """The process ids of this process's live shared embedder children (`EmbedderProcess._shared`, kept for the next
    run): their CPU is charged to the embedder, not to 'other'."""
    from emocaustics.tasks.longdialogue.embedprocess import EmbedderProcess

    return [p._proc.pid for p in EmbedderProcess._shared.values() if p._proc.pid is not None and p._proc.is_alive()]


def _cpu_split(before: dict[int, float], after: dict[int, float], pids: dict[str, Any]) -> dict[str, float]:
    """Where the machine's CPU went during one method's run: the engine (core and worker processes), the replica actor
    (our state machines, tokenising, vLLM's output handling), this driver (the plan, the embedding feed's loop), its
    children (the local embedder: reaped, or alive in `child_pids`, as the shared one is, kept for the next run), and
    everything else (Ray's own processes, the board actor, other tenants)."""
    groups = {pid: "engine" for pid in pids.get("engine_pids", [])}
    groups.update({pid: "driver_children" for pid in pids.get("child_pids", [])})
    groups[pids.get("actor_pid", -2)] = "replica_actor"
    groups[os.getpid()] = "driver"
    groups[-1] = "driver_children"
    split = {"engine": 0.0, "replica_actor": 0.0, "driver": 0.0, "driver_children": 0.0, "other": 0.0}
    for pid, cpu in after.items():
        split[groups.get(pid, "other")] += max(0.0, cpu - before.get(pid, 0.0))
    return {k: round(v, 2) for k, v in split.items()}


def cpu_ceiling(cpu_split: dict[str, float], replay_run: dict[str, Any]) -> dict[str, float | None]:
    """On a machine whose cores are all busy, a run lasts its CPU seconds over the cores, so the best ratio the pipeline
    can reach against the replay is the replay's CPU seconds (engine core + frontend) over the pipeline's (every
    process group: the same engine work plus the embedder, the replica actor's state machines and tokenising, the
    driver, Ray). `engine_cpu_vs_replay`: the pipeline's engine CPU over the replay's for the same tokens (above 1:
    the engine worked harder for them, e.g. small batches at a dependent chain's tail)."""
    total = sum(cpu_split.values())
    replay_cpu = (replay_run.get("cpu_engine_core_s") or 0.0) + (replay_run.get("frontend_cpu_s") or 0.0)
    engine = replay_run.get("cpu_engine_core_s")
    return {"cpu_ceiling": round(replay_cpu / total, 3) if total and replay_cpu else None,
            "engine_cpu_vs_replay": round(cpu_split.get("engine", 0.0) / engine, 3) if engine else None}


def _dialogues(n_max: int) -> tuple[list[Any], str]:
    from emocaustics.core.errors import UsageError
    from emocaustics.tasks.longdialogue.data.subsets import resolve

    try:
        ds, _ = resolve("paper-100", None)
        return sorted(ds, key=lambda d: d.id)[:n_max], "paper-100"
    except UsageError:  # no published data on this machine: the repo's own sample set, said so in the notes
        ds, _ = resolve("sample", None)
        return sorted(ds, key=lambda d: d.id)[:n_max], "sample"


def _run_in_replica(pool: Any, fn: Any, arg: Any) -> Any:
    from emocaustics.models.local import RunFailure

    res = asyncio.run(pool.run(fn, [arg]))[0]
    if isinstance(res, RunFailure):
        raise RuntimeError(f"{getattr(fn, '__name__', fn)} in the replica failed: {res.reason}\n{res.detail}")
    return res


def _per_call_costs(model_dir: str, dumps: list[dict[str, Any]], limit: int = 400) -> dict[str, Any]:
    """Chat template + tokenising and JSON parsing per call, timed here on a sample of the recorded calls."""
    from transformers import AutoTokenizer

    from emocaustics.models.jsonout import parse_answer

    tok = AutoTokenizer.from_pretrained(model_dir)
    recs = [(r, d["schemas"]) for d in dumps for r in d["records"] if r.get("prompt_ids") and r.get("text")]
    step = max(1, len(recs) // limit)
    sample = recs[::step][:limit]
    if not sample:
        return {}
    texts = [tok.decode(r["prompt_ids"]) for r, _ in sample]
    t0 = time.perf_counter()
    for t in texts:
        tok.encode(t, add_special_tokens=False)
    encode = (time.perf_counter() - t0) / len(texts)
    t0 = time.perf_counter()
    for r, schemas in sample:
        parse_answer(r["text"], json.loads(schemas[r["schema"]]) if r["schema"] is not None else None)
    parse = (time.perf_counter() - t0) / len(sample)
    return {"calls_timed": len(sample), "tokenise_ms_per_call": round(encode * 1e3, 3),
            "json_parse_ms_per_call": round(parse * 1e3, 3)}


def run_pipeline(methods: dict[str, int], work: Path,
                 repeats: dict[str, int] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run each method through the real pipeline with the engine tap on (`repeats`: runs per method, default 1);
    returns (per-method figures, setup)."""
    repeats = repeats or {}
    import ray

    from emocaustics.tasks.longdialogue.extract.dialogue import ExtractConfig
    from benchmarks.extractrun import run_extract
    from emocaustics.models.pool import get_pool
    from emocaustics.models.spec import parse_llm_spec

    started_ray = not ray.is_initialized()
    if started_ray:
        ray.init(address="local", num_cpus=2, object_store_memory=300_000_000, include_dashboard=False,
                 log_to_driver=False)
    llm_spec = os.environ.get("ENGINE_BENCH_LLM", "smoke")
    pool = get_pool(parse_llm_spec(llm_spec))
    setup: dict[str, Any] = {}
    figures: dict[str, Any] = {}
    try:
        setup["engine_start_s"] = round(asyncio.run(pool.start()), 2)
        pids = _run_in_replica(pool, enginetap.install, None)
        setup.update(pids)
        dialogues, subset = _dialogues(max(methods.values()))
        setup["subset"] = subset
        # round 0 runs every method; later rounds repeat the dependent-call methods (issue 18: median of repeats),
        # window before chains window in each round, which builds on that round's window output
        rounds = max(repeats.get(m, 1) for m in methods)
        jobs = [(r, m, n) for r in range(rounds) for m, n in methods.items() if r < repeats.get(m, 1)]
        for rep, method, n in jobs:
            task, how = method.split("/")
            cfg = ExtractConfig(task=task, method=how)
            tag = "" if rep == 0 else f"-r{rep}"
            from_dir = work / f"sextuple-window{tag}" if method == "emotion/window" else None
            out = work / f"{method.replace('/', '-')}{tag}"
            _run_in_replica(pool, enginetap.reset_prefix_cache, None)  # each method starts cold, as in the replay
            _run_in_replica(pool, enginetap.dump, str(work / "discard.pkl"))  # drop requests made before this run
            cpu_actor0, cpu_engine0 = _cpu([pids["actor_pid"]]), _cpu(pids["engine_pids"])
            snap0 = _cpu_snapshot()
            load0 = os.getloadavg()[0]
            t0 = time.time()
            summary = run_extract(dialogues[:n], cfg, llm_spec=llm_spec, out=out, from_dir=from_dir,
                                  cache_dir=work / f"cache-{method.replace('/', '-')}{tag}")  # fresh: nothing cached
            t1 = time.time()
            cpu_split = _cpu_split(snap0, _cpu_snapshot(), {**pids, "child_pids": embedder_pids()})
            fig: dict[str, Any] = {"dialogues": n, "wall_s": round(t1 - t0, 2),
                                   "predicted": summary["predicted"], "failures": len(summary["failures"]),
                                   "unparseable": summary["unparseable"], "retries": summary["retries"],
                                   "cpu_actor_s": round(_cpu([pids["actor_pid"]]) - cpu_actor0, 2),
                                   "cpu_engine_core_s": round(_cpu(pids["engine_pids"]) - cpu_engine0, 2),
                                   "load_avg_1m": [round(load0, 2), round(os.getloadavg()[0], 2)],
                                   "cpu_split_s": cpu_split,
                                   # the machine's cores the engine had while the run lasted (2 = all of them here)
                                   "engine_cores_used": round(cpu_split["engine"] / (t1 - t0), 2)}
            dump_path = work / f"{method.replace('/', '-')}{tag}.pkl"
            _run_in_replica(pool, enginetap.dump, str(dump_path))
            fig["dump"], fig["span"] = str(dump_path), (t0, t1)
            if rep == 0:
                figures[method] = fig
            else:
                figures[method].setdefault("repeat_runs", []).append(fig)
            print(f"engine_bench: pipeline {method}{tag} n={n}: {fig['wall_s']} s", flush=True)
    finally:
        engine_pids = setup.get("engine_pids", [])
        pool.shutdown()
        _wait_gone(engine_pids)
        if started_ray:
            ray.shutdown()
    return figures, setup


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


def run_replay(dumps: list[Path], work: Path, free_for: list[Path] | None = None) -> dict[str, Any]:
    out = work / "replay.json"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    log = work / "replay.log"
    with open(log, "w", encoding="utf-8") as f:
        # own session: on a timeout the whole group goes (the replay's engine core is its child process)
        free = ["--free-for", *(p.name for p in free_for)] if free_for is not None else []
        proc = subprocess.Popen([sys.executable, "-m", "benchmarks.replay", "--requests", *map(str, dumps), "--out",
                                 str(out), *free], cwd=REPO, env=env, stdout=f, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            proc.wait(timeout=REPLAY_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise RuntimeError(f"replay did not finish within {REPLAY_TIMEOUT_S} s; see {log}") from None
    if proc.returncode != 0:
        raise RuntimeError(f"replay failed (exit {proc.returncode}):\n{log.read_text(encoding='utf-8')[-3000:]}")
    return json.loads(out.read_text(encoding="utf-8"))


def run(quick: bool = False, methods: dict[str, int] | None = None) -> dict[str, Any]:
    import pickle

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    methods = methods or (N_QUICK if quick else N_FULL)
    repeats = {m: int(os.environ.get("ENGINE_BENCH_REPEATS", 1 if quick else REPEATS.get(m, 1))) for m in methods
               if m in REPEATS}
    work = Path(tempfile.mkdtemp(prefix="engine-bench-"))
    t_all = time.time()
    figures, setup = run_pipeline(methods, work, repeats)
    dumps = {m: Path(f["dump"]) for m, f in figures.items()}
    extra = [Path(r["dump"]) for f in figures.values() for r in f.get("repeat_runs", [])]
    replay = run_replay(list(dumps.values()) + extra, work, free_for=list(dumps.values()))
    loaded = {m: pickle.loads(p.read_bytes()) for m, p in dumps.items()}
    model_dir = next(iter(loaded.values()))["model"]
    for method, fig in figures.items():
        for again in fig.get("repeat_runs", []):  # each repeat: its own recording, its own forced replay
            path = Path(again.pop("dump"))
            rec = pickle.loads(path.read_bytes())
            tl_r = summarize(rec["records"], rec["schemas"])
            raw_r = replay["runs"][path.name]
            again.pop("span")
            again["llm_phase_s"] = tl_r.get("llm_phase_s")
            again["generated_tokens"] = tl_r.get("generated_tokens")
            again["replay_seconds"] = round(raw_r["seconds"], 3)
            again["replay_same_tokens"] = raw_r.get("same_tokens_as_pipeline")
            p_r, r_r = tl_r.get("generated_tokens_per_s"), raw_r.get("generated_tokens_per_s")
            again["ratio_llm_phase"] = round(p_r / r_r, 3) if p_r and r_r else None
            again.update(cpu_ceiling(again["cpu_split_s"], raw_r))
        d = loaded[method]
        tl = summarize(d["records"], d["schemas"])
        raw = replay["runs"][dumps[method].name]
        fig.pop("dump")
        fig["pipeline"] = tl
        fig["replay"] = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in raw.items() if k != "free"}
        fig["replay"]["free"] = {k: (round(v, 3) if isinstance(v, float) else v)
                                 for k, v in raw.get("free", {}).items()}
        p_tps = tl.get("generated_tokens_per_s")
        r_tps = raw.get("generated_tokens_per_s")
        fig["ratio_llm_phase"] = round(p_tps / r_tps, 3) if p_tps and r_tps else None
        fig.update(cpu_ceiling(fig["cpu_split_s"], raw))
        runs = [fig["ratio_llm_phase"]] + [r["ratio_llm_phase"] for r in fig.get("repeat_runs", [])]
        if len(runs) > 1 and None not in runs:  # the headline is the median of the repeats; each is kept
            fig["ratio_llm_phase_runs"] = runs
            fig["ratio_llm_phase_first"] = fig["ratio_llm_phase"]
            fig["ratio_llm_phase"] = round(statistics.median(runs), 3)
            ceilings = [fig["cpu_ceiling"]] + [r.get("cpu_ceiling") for r in fig.get("repeat_runs", [])]
            if None not in ceilings:
                fig["cpu_ceiling_runs"] = ceilings
                fig["cpu_ceiling"] = round(statistics.median(ceilings), 3)
        # against the replay's own greedy answers (the figure before the replay forced the pipeline's answers)
        free_tps = raw.get("free", {}).get("generated_tokens_per_s")
        fig["ratio_llm_phase_free"] = round(p_tps / free_tps, 3) if p_tps and free_tps else None
        fig["ratio_end_to_end"] = (round(tl["generated_tokens"] / fig["wall_s"] / r_tps, 3)
                                   if r_tps and tl.get("generated_tokens") else None)
        t0, t1 = fig.pop("span")
        if tl.get("start"):  # where the wall time of run_extract went, around the engine-facing phase
            fig["time_split_s"] = {"before_first_request": round(tl["start"] - t0, 2),
                                   "llm_phase": tl["llm_phase_s"], "after_last_answer": round(t1 - tl["end"], 2)}
    setup["per_call_costs"] = _per_call_costs(model_dir, list(loaded.values()))
    setup["replay_engine_start_s"] = round(replay["engine_start_seconds"], 2)
    window = figures.get("sextuple/window", {})
    floors = {}
    if window.get("ratio_llm_phase") is not None:
        floors["window_ratio_llm_phase"] = {"value": window["ratio_llm_phase"], "floor": FLOOR,
                                            "ok": window["ratio_llm_phase"] >= FLOOR}
    flat = headline(figures)
    return {"name": "engine_bench", "figures": {**flat, "per_method": figures, "setup": setup},
            "inputs": {"model": "smoke (random weights)", "dialogues": methods, "subset": setup.get("subset"),
                       "response_cache": "fresh empty directory per method", "repeats": repeats,
                       "seconds_total": round(time.time() - t_all, 1)},
            "notes": NOTES, "floors": floors}


def main(argv: list[str] | None = None) -> int:
    from benchmarks.methodcli import main as method_main

    return method_main("engine_bench", argv, N_QUICK, N_FULL, run, to_markdown, RESULTS)


if __name__ == "__main__":
    sys.exit(main())
