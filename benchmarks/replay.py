"""The raw engine's limit: replay recorded requests all at once with `vllm.LLM.generate` on one engine.

    python -m benchmarks.replay --requests A.pkl [B.pkl ...] --out result.json

Each input is an `enginetap.dump` file (prompt token ids, sampling parameters, guided-JSON schema per request). One
`vllm.LLM` is built with the settings the pipeline's replica used (the pool's engine defaults plus the spec's
options, and the batch limits the replica's engine ran with), warmed up, and then each file is replayed as one
`generate` call with every request at once, starting from an empty prefix cache, twice: first with the replay's own
greedy answers (`free`), then with each request held to the tokens the pipeline's engine generated (`forced.py`):
the same prompts and the same answers, so the same work on both sides. Runs in its own process because it is a
second engine: the caller shuts the pipeline's replica down first, so that two engines never share this machine's
two cores.
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


def replay_options(dump: dict[str, Any]) -> dict[str, Any]:
    """The replica's engine options, with the batch limits its engine ran with: `vllm.LLM` would otherwise pick its
    offline defaults (on CPU 256 sequences / 4096 tokens a step, against a replica's 128 / 2048)."""
    return {**engine_options(dump["engine_opts"]), **dump.get("scheduler", {})}


def sampling(rec: dict[str, Any], schemas: list[str], forced: bool = False) -> Any:
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    from benchmarks.forced import KEY

    so = StructuredOutputsParams(json=json.loads(schemas[rec["schema"]])) if rec["schema"] is not None else None
    extra = {KEY: rec["output_ids"]} if forced and rec.get("output_ids") is not None else None
    return SamplingParams(max_tokens=rec["max_tokens"], temperature=rec["temperature"], top_p=rec["top_p"],
                          seed=rec["seed"], structured_outputs=so, extra_args=extra)


def replay(llm: Any, dump: dict[str, Any], forced: bool = False) -> dict[str, Any]:
    """All the dump's requests in one `generate` call. `forced`: each request generates the very tokens the pipeline
    got (`forced.py`), so that both sides do the same work; otherwise the replay's own greedy answers."""
    from vllm.inputs import TokensPrompt

    recs = [r for r in dump["records"] if r.get("prompt_ids") is not None]
    prompts = [TokensPrompt(prompt_token_ids=r["prompt_ids"]) for r in recs]
    params = [sampling(r, dump["schemas"], forced) for r in recs]
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
    same_tokens = sum(1 for r, o in zip(recs, outs)
                      if o.outputs and list(o.outputs[0].token_ids) == r.get("output_ids"))
    return {"requests": len(recs), "seconds": secs, "generated_tokens": gen, "prompt_tokens": prompt,
            "cached_prompt_tokens": cached, "prefix_cache_hit_rate": round(cached / prompt, 4) if prompt else None,
            "generated_tokens_per_s": gen / secs if secs else None,
            "forced": forced, "same_text_as_pipeline": same, "same_tokens_as_pipeline": same_tokens,
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
    ap.add_argument("--free-for", nargs="*", default=None,
                    help="file names also replayed with the replay's own answers (default: every file)")
    args = ap.parse_args(argv)
    dumps = []
    for path in args.requests:
        with open(path, "rb") as f:
            dumps.append(pickle.load(f))
    from vllm import LLM
    from vllm.inputs import TokensPrompt

    from benchmarks.forced import ForcedOutput

    opts = replay_options(dumps[0])
    t0 = time.perf_counter()
    llm = LLM(model=dumps[0]["model"], logits_processors=[ForcedOutput], **opts)
    start_s = time.perf_counter() - t0
    # Warm-up outside the timing, as the pipeline's engine was warm: a few requests of the first dump.
    first = [r for r in dumps[0]["records"] if r.get("prompt_ids")][:8]
    if first:
        llm.generate([TokensPrompt(prompt_token_ids=r["prompt_ids"]) for r in first],
                     [sampling(r, dumps[0]["schemas"]) for r in first], use_tqdm=False)
    results: dict[str, Any] = {"engine_options": dict(opts), "engine_start_seconds": start_s, "runs": {}}
    for path, dump in zip(args.requests, dumps):
        # the replay's own answers first (as before), then the pipeline's answers forced: the same work
        has_outputs = all(r.get("output_ids") is not None for r in dump["records"] if r.get("prompt_ids"))
        want_free = args.free_for is None or os.path.basename(path) in args.free_for or not has_outputs
        free = replay(llm, dump) if want_free else None
        run = replay(llm, dump, forced=True) if has_outputs else dict(free)
        run["free"] = free or {}
        results["runs"][os.path.basename(path)] = run
        print(f"replay {os.path.basename(path)}: {run['requests']} requests in {run['seconds']:.1f} s "
              f"(forced={run['forced']}" + (f"; free {free['seconds']:.1f} s)" if free else ")"), flush=True)
        tmp = f"{args.out}.tmp"  # written after each file, so that a cut-off replay keeps what it finished
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(results, f, default=str, indent=1)
        os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
