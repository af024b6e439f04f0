"""Reference-style driving vs our pipeline, against the same `vllm serve` of the smoke model.

One OpenAI-compatible server (vLLM's own, CPU build, the replica settings) on 127.0.0.1. Per method, the same
dialogues are extracted by both sides, each from an empty server prefix cache:
(a) reference-style (`refdriver.py`): one blocking HTTP request at a time per thread, at the reference's own
    documented concurrency per method (`REFERENCE_CONCURRENCY`: --batch 16 / 16 / 1 for the sextuple direct / rag /
    window scripts, 20 / 4 for the chain direct / window scripts); the dialogues as the task's work items, embeddings
    for rag/window computed in-process first in one batch (`refdriver.reference_items`; timed, included);
(b) ours: `run_extract` with `--llm openai:smoke@URL?concurrency=128` (the shared solving plan, `solve/plan.py`:
    every dialogue's state machine in flight at once, up to 128 requests open, rag/window embeddings streaming in
    beside the calls), with a fresh response cache every time.
Each method runs REPEATS times; the side that goes first alternates from one repeat to the next, so that neither side
always meets the load the other left behind. The 1-minute load average is recorded before and after every side.
The emotion window method starts from the sextuple window predictions of (b)'s first repeat on both sides.
Reported per method: the speed-up (a)/(b) of every repeat, its median and range, and each side's seconds, calls and
generated tokens.

The smoke model's text is noise: what is compared is how the calls are driven.
    python -m benchmarks.reference_bench [--quick] [--n METHOD=N ...]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
METHODS = ("sextuple/direct", "sextuple/rag", "sextuple/window", "emotion/direct", "emotion/window")
# Sized for a few minutes per repeat on 2 cores: the reference's one-at-a-time sextuple window run is the slow side
# (~19 calls of ~190 generated tokens per dialogue; its reference side is sequential). Chain direct runs 20 dialogues
# so that the reference's 20 threads are all busy.
N_FULL = {"sextuple/direct": 12, "sextuple/rag": 12, "sextuple/window": 4, "emotion/direct": 20,
          "emotion/window": 4}
N_QUICK = {m: 3 for m in METHODS}
CONCURRENCY = 128
REPEATS = int(os.environ.get("REFERENCE_BENCH_REPEATS", "3"))
# e.g. REFERENCE_BENCH_N="sextuple/window=2,sextuple/direct=6": smaller runs on a loaded machine (recorded in inputs)
for _spec in filter(None, os.environ.get("REFERENCE_BENCH_N", "").split(",")):
    _m, _, _n = _spec.partition("=")
    if _m not in N_FULL:
        raise ValueError(f"REFERENCE_BENCH_N: unknown method {_m!r}; choose from {', '.join(N_FULL)}")
    N_FULL[_m] = int(_n)


def _totals(rows: list[dict[str, Any]]) -> dict[str, int]:
    out = {"predicted": sum(1 for r in rows if r.get("ok")), "failures": sum(1 for r in rows if not r.get("ok"))}
    for k in ("llm_calls", "generated_tokens", "prompt_tokens", "unparseable", "retries"):
        out[k] = sum(int(r.get("stats", {}).get(k, 0)) for r in rows)
    return out


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def spread(values: list[float]) -> dict[str, Any]:
    """Median and range of repeated measurements (the figures the README quotes)."""
    return {"median": round(statistics.median(values), 2), "min": round(min(values), 2), "max": round(max(values), 2),
            "n": len(values), "values": [round(v, 2) for v in values]}


def run(quick: bool = False, methods: dict[str, int] | None = None) -> dict[str, Any]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import ray

    from benchmarks.engine_bench import _dialogues
    from benchmarks.refdriver import REFERENCE_CONCURRENCY, BlockingLLM, reference_items, run_reference_style
    from benchmarks.vllm_server import SERVED_NAME, reset_prefix_cache, serve_smoke
    from emocaustics.models.embedders import make_embedder
    from emocaustics.tasks.longdialogue.extract.dialogue import ExtractConfig
    from benchmarks.extractrun import run_extract

    methods = {m: n for m, n in (methods or (N_QUICK if quick else N_FULL)).items() if n > 0}
    repeats = 1 if quick else REPEATS
    work = Path(tempfile.mkdtemp(prefix="reference-bench-"))
    t_all = time.time()
    started_ray = not ray.is_initialized()
    if started_ray:
        ray.init(address="local", num_cpus=2, object_store_memory=300_000_000, include_dashboard=False,
                 log_to_driver=False)
    per: dict[str, Any] = {}
    setup: dict[str, Any] = {"load_avg_1m_at_start": _load()}
    try:
        dialogues, subset = _dialogues(max(methods.values()))
        setup["subset"] = subset
        embedder = make_embedder("minilm")
        t0 = time.perf_counter()
        embedder.encode(["预热"])  # model load outside both timings: each side would pay it once
        setup["embedder_load_s"] = round(time.perf_counter() - t0, 2)
        with serve_smoke(work / "vllm-serve.log") as srv:
            setup["server_start_s"] = srv["start_seconds"]
            spec = f"openai:{SERVED_NAME}@{srv['base_url']}?concurrency={CONCURRENCY}"
            blocking = BlockingLLM(SERVED_NAME, srv["base_url"])

            def ours(method: str, chosen: list[Any], rep: int) -> dict[str, Any]:
                task, how = method.split("/")
                tag = f"{method.replace('/', '-')}-{rep}"
                from_dir = work / "ours-sextuple-window-0" if method == "emotion/window" else None
                reset_prefix_cache(srv["base_url"])
                t0 = time.perf_counter()
                summary = run_extract(chosen, ExtractConfig(task=task, method=how), llm_spec=spec,
                                      out=work / f"ours-{tag}", from_dir=from_dir, cache_dir=work / f"cache-{tag}")
                return {"seconds": round(time.perf_counter() - t0, 2), "predicted": summary["predicted"],
                        "failures": len(summary["failures"]), "llm_calls": summary["llm_calls"],
                        "generated_tokens": summary["generated_tokens"], "unparseable": summary["unparseable"]}

            def reference(method: str, chosen: list[Any], rep: int) -> dict[str, Any]:
                from_dir = work / "ours-sextuple-window-0" if method == "emotion/window" else None
                reset_prefix_cache(srv["base_url"])
                items, emb_s = reference_items(chosen, method, from_dir, embedder)
                res = run_reference_style(blocking, items, method)
                return {"seconds": round(emb_s + res["seconds"], 2), "embedding_s": round(emb_s, 2),
                        "threads": res["threads"], **_totals(res["rows"])}

            sides = {"ours": ours, "reference_style": reference}
            for k, (method, n) in enumerate(methods.items()):
                chosen = dialogues[:n]
                runs = []
                for rep in range(repeats):
                    # alternate which side goes first, per repeat and per method
                    order = ("ours", "reference_style") if (rep + k) % 2 == 0 else ("reference_style", "ours")
                    one: dict[str, Any] = {"first": order[0]}
                    for side in order:
                        before = _load()
                        one[side] = sides[side](method, chosen, rep)
                        one[side]["load_avg_1m"] = [before, _load()]
                    one["speedup"] = round(one["reference_style"]["seconds"] / one["ours"]["seconds"], 3)
                    runs.append(one)
                    print(f"reference_bench: {method} n={n} repeat {rep + 1}/{repeats} ({order[0]} first): ours "
                          f"{one['ours']['seconds']} s, reference-style {one['reference_style']['seconds']} s, "
                          f"speed-up {one['speedup']}", flush=True)
                threads, source = REFERENCE_CONCURRENCY[method]
                per[method] = {"dialogues": n, "reference_threads": threads, "reference_concurrency_source": source,
                               "speedup": spread([r["speedup"] for r in runs]),
                               "ours_seconds": spread([r["ours"]["seconds"] for r in runs]),
                               "reference_seconds": spread([r["reference_style"]["seconds"] for r in runs]),
                               "same_work": all(r["ours"]["llm_calls"] == r["reference_style"]["llm_calls"]
                                                for r in runs),
                               "runs": runs}
            blocking.close()
    finally:
        if started_ray:
            from emocaustics.models.pool import shutdown_pools

            shutdown_pools()
            ray.shutdown()
    figures: dict[str, Any] = {
        "speedup_median": {m: f["speedup"]["median"] for m, f in per.items()},
        "speedup_min": {m: f["speedup"]["min"] for m, f in per.items()},
        "speedup_max": {m: f["speedup"]["max"] for m, f in per.items()},
        "reference_threads": {m: f["reference_threads"] for m, f in per.items()},
        "dialogues": {m: f["dialogues"] for m, f in per.items()},
        "repeats": repeats,
        "load_avg_1m_range": [min(v for f in per.values() for r in f["runs"] for s in ("ours", "reference_style")
                                  for v in r[s]["load_avg_1m"]),
                              max(v for f in per.values() for r in f["runs"] for s in ("ours", "reference_style")
                                  for v in r[s]["load_avg_1m"])] if per else None,
        "per_method": per, "setup": setup}
    return {"name": "reference_bench", "figures": figures,
            "inputs": {"model": "smoke (random weights) via vllm serve", "dialogues": methods, "subset": subset,
                       "repeats": repeats,
                       "ours": f"run_extract, openai:smoke@URL?concurrency={CONCURRENCY}, fresh response cache",
                       "reference_style": "blocking openai.OpenAI calls, one dialogue per thread, threads = the "
                                          "reference's own --batch per method: " +
                                          ", ".join(f"{m} {REFERENCE_CONCURRENCY[m][0]}" for m in methods),
                       "seconds_total": round(time.time() - t_all, 1)},
            "notes": NOTES, "floors": {}}


NOTES = [
    "smoke model: random weights, its text is noise; the comparison is of how calls are driven, not of quality",
    "both sides use the same prompts, request bodies, parsing and retries (refdriver reuses extract_one with a "
    "blocking backend); the server's prefix cache is emptied before each side",
    "reference concurrency per method from the reference's README run commands, else its argparse default (see "
    "reference_concurrency_source per method)",
    "speedup = reference-style wall seconds / ours, per repeat; median and range over the repeats; ours includes its "
    "embedding feed, reference-style its in-process embedding (rag/window); the embedder's load is outside both",
    "2 shared CPU cores with other work running: the 1-minute load average is recorded before and after every side; "
    "the side that runs first alternates between repeats",
]


def to_markdown(out: dict[str, Any]) -> str:
    lines = [f"# reference_bench (smoke model via vllm serve, {out['inputs']['subset']}; random weights: noise)", "",
             "| method | dialogues | reference threads | reference-style s (median) | ours s (median) | speed-up median "
             "(min-max, n) | calls ref / ours (first repeat) | load 1m range |", "|---|---|---|---|---|---|---|---|"]
    for m, f in out["figures"]["per_method"].items():
        first = f["runs"][0]
        loads = [v for r in f["runs"] for s in ("ours", "reference_style") for v in r[s]["load_avg_1m"]]
        sp = f["speedup"]
        lines.append(f"| {m} | {f['dialogues']} | {f['reference_threads']} | {f['reference_seconds']['median']} | "
                     f"{f['ours_seconds']['median']} | {sp['median']} ({sp['min']}-{sp['max']}, {sp['n']}) | "
                     f"{first['reference_style']['llm_calls']} / {first['ours']['llm_calls']} | "
                     f"{min(loads)}-{max(loads)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from benchmarks.methodcli import main as method_main

    return method_main("reference_bench", argv, N_QUICK, N_FULL, run, to_markdown, RESULTS)


if __name__ == "__main__":
    sys.exit(main())
