"""The figures of benchmarks/engine_bench.py from its per-method measurements: the README's headline figures, the
notes that say what they mean, and the markdown table."""

from __future__ import annotations

from typing import Any


def headline(per_method: dict[str, Any]) -> dict[str, Any]:
    """The figures the README quotes, from the per-method measurements; nested by figure then method, so that a key
    reads `engine_bench.ratio_llm_phase.sextuple/window`."""
    window = per_method.get("sextuple/window", {})
    pass2 = window.get("pipeline", {}).get("phases", {}).get("sextuple", {})
    loads = [v for f in per_method.values() for v in f.get("load_avg_1m", [])]
    return {"ratio_llm_phase": {m: f.get("ratio_llm_phase") for m, f in per_method.items()},
            # each run's ratio where a method was repeated (the headline above is their median)
            "ratio_llm_phase_runs": {m: f["ratio_llm_phase_runs"] for m, f in per_method.items()
                                     if f.get("ratio_llm_phase_runs")},
            "ratio_llm_phase_free": {m: f.get("ratio_llm_phase_free") for m, f in per_method.items()},
            # the replay's requests that generated exactly the pipeline's tokens (all of them when forcing worked)
            "replay_same_tokens_share": {
                m: (round(f["replay"].get("same_tokens_as_pipeline", 0) / f["replay"]["requests"], 3)
                    if f.get("replay", {}).get("requests") else None) for m, f in per_method.items()},
            # cores of the two the engine had while the method ran, and where the rest went
            "engine_cores_used": {m: f.get("engine_cores_used") for m, f in per_method.items()},
            # the best ratio this machine's cores allow the pipeline's CPU work (cpu_ceiling; median where repeated)
            "cpu_ceiling": {m: f.get("cpu_ceiling") for m, f in per_method.items()},
            "cpu_ceiling_runs": {m: f["cpu_ceiling_runs"] for m, f in per_method.items() if f.get("cpu_ceiling_runs")},
            "engine_cpu_vs_replay": {m: f.get("engine_cpu_vs_replay") for m, f in per_method.items()},
            "cpu_split_s": {m: f.get("cpu_split_s") for m, f in per_method.items()},
            "ratio_end_to_end": {m: f.get("ratio_end_to_end") for m, f in per_method.items()},
            "dialogues": {m: f.get("dialogues") for m, f in per_method.items()},
            "window_pass2_prefix_cache_hit_rate": pass2.get("prefix_cache_hit_rate"),
            "window_pass2_reusable_prefix_rate_block16": pass2.get("reusable_prefix_rate_block16"),
            # how the LLM phase was spent: one dialogue's dependent chain against the whole phase, and the ramp
            "longest_dialogue_share_of_llm_phase": {
                m: (round(f["pipeline"]["longest_dialogue_lifetime_s"] / f["pipeline"]["llm_phase_s"], 3)
                    if f.get("pipeline", {}).get("longest_dialogue_lifetime_s") and f["pipeline"].get("llm_phase_s")
                    else None) for m, f in per_method.items()},
            "last_dialogue_start_s": {m: f.get("pipeline", {}).get("last_dialogue_start_s")
                                      for m, f in per_method.items()},
            "llm_phase_s": {m: f.get("pipeline", {}).get("llm_phase_s") for m, f in per_method.items()},
            "load_avg_1m_range": [min(loads), max(loads)] if loads else None}


NOTES = [
    "smoke model: random weights, its text is noise; the figures measure the machinery (batching, prefix cache, "
    "our orchestration), not quality",
    "ratio_llm_phase = pipeline generated tokens/s over its LLM phase / replay tokens/s of the same requests all at "
    "once on one vllm.LLM with the same settings and batch limits (empty prefix cache at the start of each), each "
    "request held to the tokens the pipeline generated (the same work); ratio_llm_phase_free: against the "
    "replay's own greedy answers, which differ from the pipeline's on the random model's near-ties; "
    "ratio_end_to_end uses the whole run_extract wall time (Ray start, embedding feed, file writes)",
    "cpu_split_s: CPU seconds of each process group while a method ran (engine = vLLM's core and worker processes; "
    "replica_actor = our state machines and vLLM's frontend; driver_children = the local embedder); "
    "engine_cores_used = engine CPU / wall: the replay's engine has both cores",
    "cpu_ceiling = replay CPU seconds (engine core + frontend) / pipeline CPU seconds (every group): with both cores "
    "busy a run lasts its CPU over the cores, so this is the best ratio_llm_phase the pipeline's own CPU work allows "
    "on this machine; engine_cpu_vs_replay = the pipeline's engine CPU / the replay's for the same tokens",
    "2 shared CPU cores, other work running: load_avg_1m is noted per method; compare ratios within one run",
]


def to_markdown(out: dict[str, Any]) -> str:
    per = out["figures"]["per_method"]
    lines = [f"# engine_bench (smoke model, {out['inputs']['subset']}; random weights: its text is noise)", "",
             "| method | dialogues | requests | pipeline tok/s (LLM phase) | replay tok/s | ratio LLM phase | "
             "CPU ceiling | engine CPU vs replay | ratio vs free replay | ratio end-to-end | engine cores used | "
             "mean in flight | prefix hit (pipeline) | wall s | load 1m |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for m, f in per.items():
        p, r = f["pipeline"], f["replay"]
        lines.append(f"| {m} | {f['dialogues']} | {p.get('requests')} | {p.get('generated_tokens_per_s')} | "
                     f"{r.get('generated_tokens_per_s')} | {f.get('ratio_llm_phase')} | {f.get('cpu_ceiling')} | "
                     f"{f.get('engine_cpu_vs_replay')} | {f.get('ratio_llm_phase_free')} | "
                     f"{f.get('ratio_end_to_end')} | {f.get('engine_cores_used')} | "
                     f"{p.get('mean_in_flight')} | {p.get('prefix_cache_hit_rate')} | {f['wall_s']} | "
                     f"{f['load_avg_1m']} |")
    w = per.get("sextuple/window", {}).get("pipeline", {}).get("phases", {})
    for phase, x in w.items():
        lines.append(f"\nwindow {phase}: {x['requests']} requests, vLLM prefix-cache hit rate "
                     f"{x['prefix_cache_hit_rate']} (reusable by layout: block 16 {x['reusable_prefix_rate_block16']}, "
                     f"block 128 {x['reusable_prefix_rate_block128']})")
    for m, runs in out["figures"].get("ratio_llm_phase_runs", {}).items():
        lines.append(f"\n{m}: ratio over the LLM phase per run {runs}, median {per[m]['ratio_llm_phase']}")
    for k, fl in out["floors"].items():
        lines.append(f"\nfloor {k}: {fl['value']} vs {fl['floor']} ({'ok' if fl['ok'] else 'BELOW FLOOR'})")
    return "\n".join(lines) + "\n"
