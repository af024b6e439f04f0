"""The raw engine's limit: replay recorded requests all at once with `vllm.LLM.generate` on one engine.

    python -m benchmarks.replay --requests A.pkl [B.pkl ...] --out result.json

Each input is an `enginetap.dump` file (prompt token ids, sampling parameters, guided-JSON schema per request). One
`vllm.LLM` is built with the settings the pipeline's replica used (the pool's engine defaults plus the spec's
options), warmed up, and then each file is replayed as one `generate` call with every request at once, starting from
an empty prefix cache. Runs in its own process because it is a second engine: the caller shuts the pipeline's replica
down first, so that two engines never share this machine's two cores.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import time
from typing import Any


def engine_options(recorded_opts: dict[str, Any]) -> dict[str, Any]:
    """The very options the replica's `VLLMEngineActor.start` used (its defaults, then the spec's own)."""
    from vllm.platforms import current_platform

    from emocaustics.models.vllm_actor import CPU_DEFAULTS, ENGINE_DEFAULTS

    return {**ENGINE_DEFAULTS, **(CPU_DEFAULTS if current_platform.is_cpu() else {}), **recorded_opts}


def sampling(rec: dict[str, Any], schemas: list[str]) -> Any:
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    so = StructuredOutputsParams(json=json.loads(schemas[rec["schema"]])) if rec["schema"] is not None else None
    return SamplingParams(max_tokens=rec["max_tokens"], temperature=rec["temperature"], top_p=rec["top_p"],
                          seed=rec["seed"], structured_outputs=so)


def replay(llm: Any, dump: dict[str, Any]) -> dict[str, Any]:
    from vllm.inputs import TokensPrompt

    recs = [r for r in dump["records"] if r.get("prompt_ids") is not None]
    prompts = [TokensPrompt(prompt_token_ids=r["prompt_ids"]) for r in recs]
    params = [sampling(r, dump["schemas"]) for r in recs]
    llm.reset_prefix_cache()
    core0 = _children_cpu()
    cpu0 = os.times()
    t0 = time.perf_counter()
    outs = llm.generate(prompts, params, use_tqdm=False)
    secs = time.perf_counter() - t0
    cpu1 = os.times()
    core1 = _children_cpu()
    gen = sum(len(o.outputs[0].token_ids) for o in outs if o.outputs)
    prompt = sum(len(o.prompt_token_ids or ()) for o in outs)
    cached = sum(int(o.num_cached_tokens or 0) for o in outs)
    same = sum(1 for r, o in zip(recs, outs) if o.outputs and o.outputs[0].text == r.get("text"))
    return {"requests": len(recs), "seconds": secs, "generated_tokens": gen, "prompt_tokens": prompt,
            "cached_prompt_tokens": cached, "prefix_cache_hit_rate": round(cached / prompt, 4) if prompt else None,
            "generated_tokens_per_s": gen / secs if secs else None,
            "same_text_as_pipeline": same,
            # this process (tokenising, detokenising, output handling) and, apart, the engine core child process
            "frontend_cpu_s": round((cpu1.user + cpu1.system) - (cpu0.user + cpu0.system), 2),
            "cpu_engine_core_s": round(core1 - core0, 2)}


def _children_cpu() -> float:
    """CPU seconds of this process's children: vLLM's engine core runs in one."""
    import psutil

    total = 0.0
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.replay")
    ap.add_argument("--requests", nargs="+", required=True, help="enginetap dump files, replayed one after another")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    dumps = []
    for path in args.requests:
        with open(path, "rb") as f:
            dumps.append(pickle.load(f))
    from vllm import LLM
    from vllm.inputs import TokensPrompt

    opts = engine_options(dumps[0]["engine_opts"])
    t0 = time.perf_counter()
    llm = LLM(model=dumps[0]["model"], **opts)
    start_s = time.perf_counter() - t0
    # Warm-up outside the timing, as the pipeline's engine was warm: a few requests of the first dump.
    first = [r for r in dumps[0]["records"] if r.get("prompt_ids")][:8]
    if first:
        llm.generate([TokensPrompt(prompt_token_ids=r["prompt_ids"]) for r in first],
                     [sampling(r, dumps[0]["schemas"]) for r in first], use_tqdm=False)
    results: dict[str, Any] = {"engine_options": dict(opts), "engine_start_seconds": start_s, "runs": {}}
    for path, dump in zip(args.requests, dumps):
        results["runs"][os.path.basename(path)] = run = replay(llm, dump)
        print(f"replay {os.path.basename(path)}: {run['requests']} requests in {run['seconds']:.1f} s", flush=True)
        tmp = f"{args.out}.tmp"  # written after each file, so that a cut-off replay keeps what it finished
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(results, f, default=str, indent=1)
        os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
