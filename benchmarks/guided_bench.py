"""Schema-guided request throughput of the real vLLM CPU engine in a Ray actor (the smoke model; moved out of the test
suite, where timings are never asserted).

N short sextuple-schema requests go through `ModelPool.generate` at once, REPEATS times on one warm engine (prompts
differ per repeat, so the prefix cache cannot serve a whole prompt). Reported: engine start seconds, and per repeat
wall seconds, requests/s and generated tokens/s, with their median and range; every answer must parse.

    python -m benchmarks.guided_bench [--quick]      # writes benchmarks/results/guided_bench.json and .md
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
REQUESTS = 200
REPEATS = 3
LABELS = ["positive", "negative", "neutral", "ambiguous", "doubt"]
SCHEMA = {
    "type": "object",
    "properties": {"target": {"type": "string", "maxLength": 12}, "aspect": {"type": "string", "maxLength": 12},
                   "opinion": {"type": "string", "maxLength": 12}, "sentiment": {"enum": LABELS},
                   "rationale": {"type": "string", "maxLength": 16}},
    "required": ["target", "aspect", "opinion", "sentiment", "rationale"],
    "additionalProperties": False,
}


def _spread(values: list[float], digits: int = 1) -> dict[str, Any]:
    return {"median": round(statistics.median(values), digits), "min": round(min(values), digits),
            "max": round(max(values), digits), "n": len(values)}


def run(quick: bool = False) -> dict[str, Any]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import ray

    from emocaustics.models.base import ChatRequest, Sampling
    from emocaustics.models.pool import get_pool, shutdown_pools
    from emocaustics.models.spec import parse_llm_spec

    n, repeats = (40, 1) if quick else (REQUESTS, REPEATS)
    started = not ray.is_initialized()
    if started:
        ray.init(address="local", num_cpus=2, object_store_memory=300_000_000, include_dashboard=False,
                 log_to_driver=False)
    runs = []
    try:
        pool = get_pool(parse_llm_spec("smoke"))
        start_s = asyncio.run(pool.start())
        for rep in range(repeats):
            reqs = [ChatRequest(messages=({"role": "system", "content": "你是情感分析助手。"},
                                          {"role": "user", "content": f"吞吐量测试{rep}-{i}"}),
                                schema=SCHEMA, sampling=Sampling(max_tokens=64)) for i in range(n)]
            load0 = os.getloadavg()[0]
            t0 = time.perf_counter()
            out = asyncio.run(pool.generate(reqs))
            secs = time.perf_counter() - t0
            bad = [c.error for c in out if not c.ok]
            if bad:
                raise RuntimeError(f"{len(bad)} of {n} guided answers failed, e.g. {bad[0]}")
            gen = sum(c.generated_tokens for c in out)
            runs.append({"seconds": round(secs, 3), "requests_per_s": round(n / secs, 1),
                         "generated_tokens_per_s": round(gen / secs, 1), "generated_tokens": gen,
                         "load_avg_1m": [round(load0, 2), round(os.getloadavg()[0], 2)]})
    finally:
        if started:
            shutdown_pools()
            ray.shutdown()
    figures = {"requests": n, "repeats": repeats, "engine_start_seconds": round(start_s, 1),
               "requests_per_s": _spread([r["requests_per_s"] for r in runs]),
               "generated_tokens_per_s": _spread([r["generated_tokens_per_s"] for r in runs]),
               "runs": runs}
    return {"name": "guided_bench", "figures": figures,
            "inputs": {"model": "smoke (random weights, real vLLM CPU engine in a Ray actor)", "max_tokens": 64,
                       "schema": "sextuple (5 fields, bounded strings)"},
            "notes": ["the smoke model's answers are noise; this measures the engine and the pool around it",
                      "2 shared CPU cores: load_avg_1m per repeat (before, after)"],
            "floors": {}}


def to_markdown(out: dict[str, Any]) -> str:
    f = out["figures"]
    rps, tps = f["requests_per_s"], f["generated_tokens_per_s"]
    return (f"# guided_bench ({f['requests']} guided requests x {f['repeats']}, smoke model)\n\n"
            f"engine start {f['engine_start_seconds']} s; requests/s median {rps['median']} ({rps['min']}-"
            f"{rps['max']}); generated tok/s median {tps['median']} ({tps['min']}-{tps['max']})\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    out = run(ap.parse_args().quick)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "guided_bench.json").write_text(json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8")
    (RESULTS / "guided_bench.md").write_text(to_markdown(out), encoding="utf-8")
    print(to_markdown(out))


if __name__ == "__main__":
    main()
