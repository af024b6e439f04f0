"""Reference-style driving vs our pipeline, against the same `vllm serve` of the smoke model.

One OpenAI-compatible server (vLLM's own, CPU build, the replica settings) on 127.0.0.1. Per method, the same
dialogues are extracted twice, each from an empty server prefix cache:
(a) reference-style (`refdriver.py`): one blocking HTTP request at a time per worker; window methods one dialogue at
    a time, the others 16 threads; embeddings for rag/window computed in-process first (timed, included);
(b) ours: `run_extract` with `--llm openai:smoke@URL?concurrency=128` (Ray Data, every dialogue's state machine in
    flight at once, up to 128 requests open), with a fresh response cache.
The emotion window method starts from the sextuple window predictions of (b) in both cases (same input, same work).
Reported per method: wall seconds of each, the speed-up (a)/(b), calls and generated tokens of each.

The smoke model's text is noise: what is compared is how the calls are driven.
    python -m benchmarks.reference_bench [--quick]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
METHODS = ("sextuple/direct", "sextuple/rag", "sextuple/window", "emotion/direct", "emotion/window")
# Sized for ~4-5 minutes on 2 cores (the whole `make bench` under 30): the reference's one-at-a-time window run is the
# slow side (~19 calls of ~190 generated tokens per dialogue for the sextuple methods; window's reference side is
# sequential).
N_FULL = {"sextuple/direct": 12, "sextuple/rag": 12, "sextuple/window": 4, "emotion/direct": 20,
          "emotion/window": 4}
N_QUICK = {m: 3 for m in METHODS}
CONCURRENCY = 128


def _totals(rows: list[dict[str, Any]]) -> dict[str, int]:
    out = {"predicted": sum(1 for r in rows if r.get("ok")), "failures": sum(1 for r in rows if not r.get("ok"))}
    for k in ("llm_calls", "generated_tokens", "prompt_tokens", "unparseable", "retries"):
        out[k] = sum(int(r.get("stats", {}).get(k, 0)) for r in rows)
    return out


def run(quick: bool = False, methods: dict[str, int] | None = None) -> dict[str, Any]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import ray

    from benchmarks.engine_bench import _dialogues
    from benchmarks.refdriver import REFERENCE_THREADS, BlockingLLM, run_reference_style
    from benchmarks.vllm_server import SERVED_NAME, reset_prefix_cache, serve_smoke
    from emocaustics.tasks.emocaustics.extract.runner import ExtractConfig, embed_items
    from emocaustics.tasks.emocaustics.extract.runray import build_items, run_extract
    from emocaustics.models.embedders import make_embedder

    methods = methods or (N_QUICK if quick else N_FULL)
    work = Path(tempfile.mkdtemp(prefix="reference-bench-"))
    t_all = time.time()
    started_ray = not ray.is_initialized()
    if started_ray:
        ray.init(num_cpus=2, object_store_memory=300_000_000, include_dashboard=False, log_to_driver=False)
    per: dict[str, Any] = {}
    setup: dict[str, Any] = {}
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
            for method, n in methods.items():
                task, how = method.split("/")
                cfg = ExtractConfig(task=task, method=how)
                from_dir = work / "ours-sextuple-window" if method == "emotion/window" else None
                chosen = dialogues[:n]
                load0 = os.getloadavg()[0]
                # (b) ours
                reset_prefix_cache(srv["base_url"])
                t0 = time.perf_counter()
                summary = run_extract(chosen, cfg, llm_spec=spec, out=work / f"ours-{method.replace('/', '-')}",
                                      from_dir=from_dir, cache_dir=work / f"cache-{method.replace('/', '-')}")
                ours_s = time.perf_counter() - t0
                ours = {"seconds": round(ours_s, 2), "predicted": summary["predicted"],
                        "failures": len(summary["failures"]), "llm_calls": summary["llm_calls"],
                        "generated_tokens": summary["generated_tokens"], "unparseable": summary["unparseable"]}
                # (a) reference-style, same items
                reset_prefix_cache(srv["base_url"])
                items = build_items(chosen, cfg, from_dir)
                t0 = time.perf_counter()
                todo = [it for it in items if it["needs_emb"] and not it.get("skip_reason")]
                if todo:
                    embed_items(embedder, todo)
                emb_s = time.perf_counter() - t0
                res = run_reference_style(blocking, items, how)
                ref = {"seconds": round(emb_s + res["seconds"], 2), "embedding_s": round(emb_s, 2),
                       "threads": res["threads"], **_totals(res["rows"])}
                per[method] = {
                    "dialogues": n, "ours": ours, "reference_style": ref,
                    "speedup": round(ref["seconds"] / ours_s, 2) if ours_s > 0 else None,
                    "speedup_tokens_per_s": (round((ours["generated_tokens"] / ours_s)
                                                   / (ref["generated_tokens"] / ref["seconds"]), 2)
                                             if ref["generated_tokens"] and ref["seconds"] and ours_s else None),
                    "load_avg_1m": [round(load0, 2), round(os.getloadavg()[0], 2)],
                }
                print(f"reference_bench: {method} n={n}: ours {ours['seconds']} s, reference-style "
                      f"{ref['seconds']} s, speed-up {per[method]['speedup']}", flush=True)
            blocking.close()
    finally:
        if started_ray:
            from emocaustics.models.pool import shutdown_pools

            shutdown_pools()
            ray.shutdown()
    figures: dict[str, Any] = {f"{m}.speedup": f["speedup"] for m, f in per.items()}
    figures.update({"per_method": per, "setup": setup})
    return {"name": "reference_bench", "figures": figures,
            "inputs": {"model": "smoke (random weights) via vllm serve", "dialogues": methods, "subset": subset,
                       "ours": f"run_extract, openai:smoke@URL?concurrency={CONCURRENCY}, fresh response cache",
                       "reference_style": f"blocking openai.OpenAI calls; window: 1 dialogue at a time; others: "
                                          f"{REFERENCE_THREADS} threads",
                       "seconds_total": round(time.time() - t_all, 1)},
            "notes": NOTES, "floors": {}}


NOTES = [
    "smoke model: random weights, its text is noise; the comparison is of how calls are driven, not of quality",
    "both sides use the same prompts, request bodies, parsing and retries (refdriver reuses extract_one with a "
    "blocking backend); the server's prefix cache is emptied before each side",
    "speedup = reference-style wall seconds / ours; ours includes Ray Data start-up and the embedding stage, "
    "reference-style includes its in-process embedding (rag/window); the embedder's load is outside both",
    "2 shared CPU cores with other work running: load_avg_1m is noted per method; both sides of a method run "
    "back to back in the same run",
]


def to_markdown(out: dict[str, Any]) -> str:
    lines = [f"# reference_bench (smoke model via vllm serve, {out['inputs']['subset']}; random weights: noise)", "",
             "| method | dialogues | reference-style s | ours s | speed-up | tok/s speed-up | calls ref / ours | "
             "load 1m |", "|---|---|---|---|---|---|---|---|"]
    for m, f in out["figures"]["per_method"].items():
        a, b = f["reference_style"], f["ours"]
        lines.append(f"| {m} | {f['dialogues']} | {a['seconds']} | {b['seconds']} | {f['speedup']} | "
                     f"{f['speedup_tokens_per_s']} | {a['llm_calls']} / {b['llm_calls']} | {f['load_avg_1m']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from benchmarks.methodcli import main as method_main

    return method_main("reference_bench", argv, N_QUICK, N_FULL, run, to_markdown, RESULTS)


if __name__ == "__main__":
    sys.exit(main())
