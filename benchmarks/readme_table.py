"""The performance table of docs/performance.md, rendered from `benchmarks/results/latest.json` (the one file
`make bench` writes).

Every number is followed by a footnote (`0.56 s[^sc-sx]`) whose definition below the table names the file and the key
(`[^sc-sx]: `latest.json:score_bench.sextuple.seconds_in_process.median``, i.e. results[BENCH]["figures"][...]).
tests/benchmarks/test_performance_figures.py checks that page's table against latest.json, whoever wrote it; this
module only saves copying numbers by hand after a run:

    python -m benchmarks.readme_table > /tmp/table.md     # then paste it under docs/performance.md's title
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
METHOD_LABEL = {"sextuple/direct": "direct", "sextuple/rag": "rag", "sextuple/window": "window",
                "emotion/direct": "chains direct", "emotion/window": "chains window"}


class Cite:
    """Collects footnotes: `fig(key, shown)` returns `shown[^id]` and remembers `id -> key`."""

    def __init__(self, report: dict[str, Any]) -> None:
        self.report, self.notes = report, {}

    def value(self, key: str) -> Any:
        bench, _, path = key.partition(".")
        node: Any = self.report["results"][bench]["figures"]
        for part in path.split("."):
            node = node[int(part)] if isinstance(node, list) else node[part]
        return node

    def has(self, key: str) -> bool:
        try:
            return self.value(key) is not None
        except (KeyError, IndexError, TypeError):
            return False

    def fig(self, key: str, digits: int | None = None, unit: str = "", thousands: bool = False) -> str:
        v = self.value(key)
        if digits is None:
            shown = f"{v:,}" if thousands else f"{v}"
        else:  # rounded from the decimal text of the value (0.355 -> 0.36), as the figures test reads it back
            from decimal import Decimal

            d = round(Decimal(str(v)), digits)
            shown = f"{d:,.{digits}f}" if thousands else f"{d:.{digits}f}"
        fid = "f" + str(len(self.notes) + 1)
        self.notes[fid] = key
        return f"{shown}{unit}[^{fid}]"

    def spread(self, key: str, digits: int, unit: str = "") -> str:
        """median (min–max) of a repeated figure stored as {median, min, max}."""
        return (f"{self.fig(key + '.median', digits, unit)} ({self.fig(key + '.min', digits)}–"
                f"{self.fig(key + '.max', digits)})")


def has(report: dict[str, Any], bench: str) -> bool:
    res = report["results"].get(bench)
    return bool(res) and not res.get("error")


def rows(c: Cite) -> list[tuple[str, str, str]]:
    r = c.report
    out: list[tuple[str, str, str]] = []
    if has(r, "score_bench") and "seconds_in_process" in c.value("score_bench.sextuple"):
        n = c.value("score_bench.repeats")
        inputs = r["results"]["score_bench"]["inputs"]
        whole = inputs.get("whole_set_repeats", n)
        ray_part = (f"; Ray Data {c.fig('score_bench.sextuple.seconds_ray', 1, ' s')} / "
                    f"{c.fig('score_bench.emotion.seconds_ray', 1, ' s')}") if inputs.get("ray_data_path", True) else ""
        out.append((
            f"Scoring the dataset (`{inputs['subset']}`) from baseline predictions (texts that differ from the GT), "
            f"minilm embedder, in process (median (range) of {whole} run{'s' if whole > 1 else ''})"
            + (" and through the Ray Data plan (one run)" if ray_part else "") + "; floor < 10 min for all 400",
            f"{c.fig('score_bench.dialogues')} dialogues: sextuples "
            f"{c.spread('score_bench.sextuple.seconds_in_process', 1, ' s')}, chains "
            f"{c.spread('score_bench.emotion.seconds_in_process', 1, ' s')}{ray_part};"
            f" distinct texts embedded {c.fig('score_bench.sextuple.distinct_texts_embedded', thousands=True)} / "
            f"{c.fig('score_bench.emotion.distinct_texts_embedded', thousands=True)}, where the reference's call "
            f"pattern embeds {c.fig('score_bench.sextuple.reference_texts', thousands=True)} / "
            f"{c.fig('score_bench.emotion.reference_texts', thousands=True)}",
            "`python -m benchmarks --only score_bench`"))
    if has(r, "score_bench"):
        n = c.value("score_bench.repeats")
        sample = c.value("score_bench.sample_dialogues")
        out.append((
            f"Speed-up of batched scoring vs one embedding call per compared group, {sample}-dialogue sample, "
            f"median (range) of {n} runs",
            f"baseline predictions: sextuples {c.spread('score_bench.sextuple.sample_baseline.speedup', 1, '×')}, "
            f"chains {c.spread('score_bench.emotion.sample_baseline.speedup', 1, '×')}; perturbed GT: sextuples "
            f"{c.spread('score_bench.sextuple.sample_perturbed.speedup', 1, '×')}, chains "
            f"{c.spread('score_bench.emotion.sample_perturbed.speedup', 1, '×')}. Distinct texts our scorer embeds "
            f"for the sample (baseline / perturbed): sextuples "
            f"{c.fig('score_bench.sextuple.sample_baseline.distinct_texts_embedded', thousands=True)} / "
            f"{c.fig('score_bench.sextuple.sample_perturbed.distinct_texts_embedded', thousands=True)}, chains "
            f"{c.fig('score_bench.emotion.sample_baseline.distinct_texts_embedded', thousands=True)} / "
            f"{c.fig('score_bench.emotion.sample_perturbed.distinct_texts_embedded', thousands=True)}; the "
            f"per-comparison pattern embeds "
            f"{c.fig('score_bench.sextuple.sample_baseline.texts_per_comparison', thousands=True)} / "
            f"{c.fig('score_bench.sextuple.sample_perturbed.texts_per_comparison', thousands=True)} and "
            f"{c.fig('score_bench.emotion.sample_baseline.texts_per_comparison', thousands=True)} / "
            f"{c.fig('score_bench.emotion.sample_perturbed.texts_per_comparison', thousands=True)}",
            "same" if out and out[-1][2] == "`python -m benchmarks --only score_bench`"
            else "`python -m benchmarks --only score_bench`"))
    if has(r, "guided_bench"):
        out.append((
            "Schema-guided requests through the real vLLM CPU engine in a Ray actor (smoke model), "
            "median (range) of the repeats",
            f"{c.spread('guided_bench.requests_per_s', 1, ' req/s')}, "
            f"{c.spread('guided_bench.generated_tokens_per_s', 0, ' tok/s')}; engine start "
            f"{c.fig('guided_bench.engine_start_seconds', 1, ' s')}",
            "`python -m benchmarks --only guided_bench`"))
    if has(r, "engine_bench"):
        methods = list(c.value("engine_bench.ratio_llm_phase"))
        forced = c.has("engine_bench.ratio_llm_phase_free.sextuple/window")
        cores = "engine_bench.engine_cores_used.sextuple/window"
        out.append((
            "Engine efficiency with the smoke model: pipeline tokens/s ÷ the raw engine replaying the very same "
            + ("requests at once, each held to the pipeline's answers (the same work)" if forced
               else "prompts at once") + ", over the LLM phase (floor 0.5 for window); "
            + ("window and chains window the median of 3 runs, the others one run"
               if c.has("engine_bench.ratio_llm_phase_runs.sextuple/window") else "one run"),
            "; ".join(f"{METHOD_LABEL[m]} {c.fig(f'engine_bench.ratio_llm_phase.{m}', 2)}" for m in methods)
            + (" (against the replay's own answers, first run: "
               + " / ".join(c.fig(f"engine_bench.ratio_llm_phase_free.{m}", 2) for m in methods) + ")"
               if forced else "")
            + " (end to end, with Ray and embedder start-up: "
            + " / ".join(c.fig(f"engine_bench.ratio_end_to_end.{m}", 2) for m in methods) + "); dialogues "
            + " / ".join(c.fig(f"engine_bench.dialogues.{m}") for m in methods)
            + ("; window's LLM phase " + c.fig("engine_bench.llm_phase_s.sextuple/window", 1, " s")
               + ", of which its longest dialogue's chain of dependent calls spans "
               + c.fig("engine_bench.longest_dialogue_share_of_llm_phase.sextuple/window", 2)
               if c.has("engine_bench.longest_dialogue_share_of_llm_phase.sextuple/window") else "")
            + ("; while window ran the engine had " + c.fig(cores, 2) + " of the machine's cores (CPU seconds: "
               "the embedder " + c.fig("engine_bench.cpu_split_s.sextuple/window.driver_children", 1, " s") + ", the "
               "replica actor " + c.fig("engine_bench.cpu_split_s.sextuple/window.replica_actor", 1, " s") + "), "
               "chains window's " + c.fig("engine_bench.engine_cores_used.emotion/window", 2)
               if c.has(cores) and c.has("engine_bench.engine_cores_used.emotion/window") else "")
            + ("; with every core busy, the best ratio the pipeline's own CPU allows (the replay's CPU seconds over "
               "the pipeline's, median of the runs): window " + c.fig("engine_bench.cpu_ceiling.sextuple/window", 2)
               + ", chains window " + c.fig("engine_bench.cpu_ceiling.emotion/window", 2)
               + "; the engine's CPU for the same tokens, pipeline over replay: "
               + " / ".join(c.fig(f"engine_bench.engine_cpu_vs_replay.{m}", 2) for m in methods)
               if c.has("engine_bench.cpu_ceiling.sextuple/window") and c.has("engine_bench.cpu_ceiling.emotion/window")
               else ""),
            "`python -m benchmarks --only engine_bench`"))
        out.append((
            "vLLM prefix-cache hit rate, `window` pass 2, with the CPU engine's 128-token blocks; in parentheses the "
            "share the prompt layout would allow with 16-token blocks",
            f"{c.fig('engine_bench.window_pass2_prefix_cache_hit_rate', 2)} "
            f"({c.fig('engine_bench.window_pass2_reusable_prefix_rate_block16', 2)})",
            "same"))
    if has(r, "reference_bench"):
        methods = list(c.value("reference_bench.speedup_median"))
        n = c.value("reference_bench.repeats")
        out.append((
            "Ours vs the reference's way of driving the same `vllm serve` (blocking calls, one dialogue per thread at "
            "the reference's own `--batch`), sides alternating first, median (range) of "
            f"{n} runs",
            "; ".join(f"{METHOD_LABEL[m]} {c.spread(f'reference_bench.per_method.{m}.speedup', 2, '×')}, "
                      f"threads {c.fig(f'reference_bench.reference_threads.{m}')}" for m in methods),
            "`python -m benchmarks --only reference_bench`"))
    if has(r, "scale_bench"):
        out.append((
            "Scale, simulated (simulated Qwen2.5-72B on 4×H100 per replica; real Ray, pool, runner, scorer), "
            "400 dialogues × 6 configs: scaling efficiency at 4 / 16 / 64 replicas, then on ten times the data",
            f"{c.fig('scale_bench.efficiency_4_replicas', 2)} / "
            f"{c.fig('scale_bench.efficiency_16_replicas', 2)} / {c.fig('scale_bench.efficiency_64_replicas', 2)} "
            f"(the critical path bounds it at 64 replicas to "
            f"{c.fig('scale_bench.efficiency_bound_64_replicas', 2)}); "
            f"{c.fig('scale_bench.efficiency_10x_at_64_replicas', 3)} at 64 replicas on the tenfold scale-up "
            f"(floor 0.85);"
            f" orchestration overhead {c.fig('scale_bench.overhead_ms_per_call_best', 2)}–"
            f"{c.fig('scale_bench.overhead_ms_per_call_worst', 2)} ms per LLM call (floor < 2 ms); driver RSS "
            f"{c.fig('scale_bench.driver_rss_peak_gib', 1, ' GiB')}",
            "`python -m benchmarks --only scale_bench`"))
        grid = c.value("scale_bench.grid_hours")
        parts = []
        for key, row in grid.items():
            gpus = key.split("_")[0]
            what = "simulated run" if row["kind"] == "simulated run" else "projection"
            parts.append(f"{gpus} GPUs: {what} {c.fig(f'scale_bench.grid_hours.{key}.hours', 2, ' h')} (bound "
                         f"{c.fig(f'scale_bench.grid_hours.{key}.bound_hours', 2, ' h')}, {row['bound']})")
        out.append((
            "Paper-style grid (400 dialogues × 6 configs), simulated wall time on N GPUs; a projection by the 10× "
            "run's efficiency is never below its bound (the critical path, or the simulated run with more replicas)",
            "; ".join(parts), "same"))
    if has(r, "stats_bench"):
        out.append((
            "Statistics under a score table: CIs + all paired tests + Holm, 10,000 items × 20 configs (median of 3 runs)",
            f"{c.fig('stats_bench.config_stats_seconds_median', 2, ' s')}",
            "`python -m benchmarks --only stats_bench`"))
    if has(r, "ecpe_score_bench"):
        out.append((
            "ECPE official scoring, all 341 conversations, baseline predictions (best of 7)",
            f"{c.fig('ecpe_score_bench.baseline_task_seconds', 2, ' s')} through the task, "
            f"{c.fig('ecpe_score_bench.baseline_files_seconds', 2, ' s')} from files",
            "`python -m benchmarks --only ecpe_score_bench`"))
    if has(r, "narrative_bench"):
        figs = c.report["results"]["narrative_bench"]["figures"]
        kkey = next((x for x in figs if x.startswith("files_per_s_") and x.endswith("_processes")), None)
        out.append((
            "Narrative scoring of synthetic pairs (all components and the aggregate)",
            f"{c.fig('narrative_bench.files_per_s_1_process', 0, ' files/s')} in one process"
            + (f", {c.fig('narrative_bench.' + kkey, 0, ' files/s')} in {kkey.split('_')[3]} processes" if kkey else "")
            + f" ({c.fig('narrative_bench.files', thousands=True)} pairs)",
            "`python -m benchmarks --only narrative_bench`"))
    if has(r, "aer_prefix_bench"):
        out.append((
            "AER `context: full` prefix-cache hit rate over 2 smoke replicas, without / with per-topic affinity; "
            "pipeline / raw engine tokens/s on the same prompts (same engine, median of 3; floor 0.8)",
            f"{c.fig('aer_prefix_bench.prefix_cache_hit_rate.affinity_question', 2)} / "
            f"{c.fig('aer_prefix_bench.prefix_cache_hit_rate.affinity_topic', 2)} "
            f"({c.fig('aer_prefix_bench.affinity.phases.0.questions')} questions); "
            f"{c.fig('aer_prefix_bench.ratio_llm_phase.same_engine', 2)}",
            "`python -m benchmarks --only aer_prefix_bench`"))
    if has(r, "startup_bench"):
        figs = c.report["results"]["startup_bench"]["figures"]
        small, big = "ids-207-218-223:sextuple/window", "all:sextuple/window"
        text = (f"the three long dialogues: wall {c.fig(f'startup_bench.{small}.wall_s', 1, ' s')} against "
                f"a floor of {c.fig(f'startup_bench.{small}.floor_s', 1, ' s')}, first request after "
                f"{c.fig(f'startup_bench.{small}.first_request_s', 1, ' s')}")
        if big in figs:
            text += (f"; the whole dataset ({c.fig(f'startup_bench.{big}.calls', thousands=True)} calls): wall "
                     f"{c.fig(f'startup_bench.{big}.wall_s', 1, ' s')} against a floor of "
                     f"{c.fig(f'startup_bench.{big}.floor_s', 1, ' s')}, first request after "
                     f"{c.fig(f'startup_bench.{big}.first_request_s', 1, ' s')}, "
                     f"{c.fig(f'startup_bench.{big}.calls_per_s_over_span', 0, ' calls/s')} with "
                     f"{c.fig(f'startup_bench.{big}.mean_calls_in_service', 0)} slots busy on average, CPU per "
                     f"call {c.fig(f'startup_bench.{big}.driver_cpu_ms_per_call', 2, ' ms')} in our process and "
                     f"{c.fig(f'startup_bench.{big}.standin_cpu_ms_per_call', 2, ' ms')} in the stand-in")
        out.append((
            "`extract sextuple --method window` as a new process against an OpenAI-compatible stand-in (200 ms per "
            "call, 256 slots), on the three long dialogues 207, 218, 223 and on all 400; floor = max(critical path "
            "of dependent calls, calls / server capacity); targets: floor + 5 s and 1.3 × floor",
            text, "`python -m benchmarks --only startup_bench`"))
    return out


def reading(c: Cite) -> list[str]:
    """The notes under the table; their numbers are cited like the table's."""
    r = c.report
    out = []
    if has(r, "engine_bench"):
        text = ("The engine ratios are below 1 where the pipeline cannot have everything in flight at once: window "
                "and chain windows are chains of dependent calls, and the replay sends every prompt from the start, "
                "regardless of which answer each one was built from. ")
        if c.has("engine_bench.ratio_llm_phase_free.sextuple/window"):
            text += ("The replay holds each request to the tokens the pipeline's engine generated: the smoke model's "
                     "weights are random, its greedy choices sit on near-ties that the batch's arithmetic tips either "
                     "way, and the replay's own answers are another workload (the ratios against them are in "
                     "parentheses). ")
        text += ("Dialogues start longest first, and the embedder embeds the longest first, so that the longest "
                 "chain of dependent calls never waits behind short dialogues")
        if c.has("engine_bench.longest_dialogue_share_of_llm_phase.sextuple/window"):
            text += (" (window's longest dialogue still spans "
                     + c.fig("engine_bench.longest_dialogue_share_of_llm_phase.sextuple/window", 2)
                     + " of its LLM phase: every chain runs at the pace of a full machine)")
        text += (". On this 2-core machine window and chain windows keep both cores busy for their whole LLM phase, so "
                 "a run lasts its CPU seconds over the cores; the embedder also runs beside the CPU engine and takes "
                 "CPU from it (on a GPU node it would not)")
        if c.has("engine_bench.engine_cores_used.sextuple/window"):
            text += (": while window ran, the engine had " + c.fig("engine_bench.engine_cores_used.sextuple/window", 2)
                     + " of the cores, the replay's engine has all of them")
        if c.has("engine_bench.cpu_ceiling.sextuple/window"):
            text += (". The pipeline's engine spends about the replay's CPU on the same tokens (pipeline over "
                     "replay: window "
                     + c.fig("engine_bench.engine_cpu_vs_replay.sextuple/window", 2) + ", chains window "
                     + c.fig("engine_bench.engine_cpu_vs_replay.emotion/window", 2) + "); what the replay does not "
                     "spend is the embedder, our state machines and tokenising in the replica actor, and Ray. The "
                     "best ratio that CPU allows (the replay's CPU seconds over the pipeline's) is window "
                     + c.fig("engine_bench.cpu_ceiling.sextuple/window", 2) + " and chains window "
                     + c.fig("engine_bench.cpu_ceiling.emotion/window", 2) + ": a different order of the calls "
                     "cannot take a run far past it on these cores")
            near = [METHOD_LABEL[m] for m in ("sextuple/window", "emotion/window")
                    if c.has(f"engine_bench.cpu_ceiling.{m}") and c.has(f"engine_bench.ratio_llm_phase.{m}")
                    and c.value(f"engine_bench.ratio_llm_phase.{m}")
                    >= 0.95 * c.value(f"engine_bench.cpu_ceiling.{m}")]
            text += (f" ({' and '.join(near)} measured within 5 % of it or a little above: the CPU split covers "
                     "the whole run, the ratio only its LLM phase)" if near else "")
        ratios = {m: c.value(f"engine_bench.ratio_llm_phase.{m}") for m in ("sextuple/window", "emotion/window")
                  if c.has(f"engine_bench.ratio_llm_phase.{m}")}
        met = [METHOD_LABEL[m] for m, v in ratios.items() if v >= 0.9]
        verdict = ("Issue 18's 0.9 for window and chain windows is not reached here" if not met else
                   f"Issue 18's 0.9 is reached by {' and '.join(met)} in this run"
                   + ("" if len(met) == 2 else ", not by the other"))
        out.append(text + ". " + verdict + ". The end-to-end ratios add Ray's and the embedder's start-up.")
    if has(r, "score_bench"):
        out.append("Batched scoring embeds each distinct text once, in large batches; the per-comparison pattern makes "
                   "one small encoder call per compared group. Small calls suffer most from CPU contention, so the "
                   "speed-up depends on the machine's load; this run's load average was between "
                   f"{c.fig('score_bench.load_avg_1m_range.0', 1)} and {c.fig('score_bench.load_avg_1m_range.1', 1)}. "
                   "Quote the range, not the median alone.")
    if has(r, "reference_bench"):
        out.append("The reference-style driver runs each method at the reference's own concurrency: its README's run "
                   "commands (`--batch 16` for the sextuple direct and rag scripts, `--batch 1` for the sextuple "
                   "window script, `--batch 4` for the chain window script) and, where the README gives none, the "
                   "script's default (`--batch 20` for the chain direct script); one dialogue per thread, one "
                   "blocking request at a time. Each side starts from an empty server prefix cache; which side runs "
                   "first alternates between repeats; the load average before and after every side is in the file "
                   f"(this run: {c.fig('reference_bench.load_avg_1m_range.0', 1)} to "
                   f"{c.fig('reference_bench.load_avg_1m_range.1', 1)}: the CPU engine itself loads both cores). "
                   "Where the speed-up is below 1, our fixed start-up is most of our wall time at these sizes (a few "
                   "dialogues): a new process, and for rag and window the embedder's model load in a child process, "
                   "against an embedder already loaded in the reference side's process; a run this small cannot fill "
                   "the engine's batch either way. Quote the range, not the median alone.")
    if has(r, "scale_bench"):
        out.append("Simulated figures come from a simulated GPU engine (benchmarks/sim_engine.py) on a virtual clock; "
                   "its calibration anchors are stated with the hardware they were measured on "
                   "(`latest.json: scale_bench.inputs.anchors`): the decode bandwidth fraction (77 %) was measured on "
                   "an A100 40GB and is applied to the H100 80GB datasheet, an assumption, not an H100 measurement.")
        out.append(f"The critical path, the longest dialogue's chain of dependent calls alone on an idle replica "
                   f"({c.fig('scale_bench.critical_path_s', 1, ' s')}, simulated), bounds every run that contains it, "
                   f"however many replicas: at 64 replicas the 1× grid is bound by it, not by the orchestration. A "
                   f"projection for a GPU count that was not simulated is raised to the larger of the critical path "
                   f"and the simulated run with more replicas.")
    if has(r, "startup_bench") and "all:sextuple/window" in r["results"]["startup_bench"]["figures"]:
        res = r["results"]["startup_bench"]
        big_ok = res.get("floors", {}).get("all:sextuple/window:wall_s", {}).get("ok")
        small_ok = res.get("floors", {}).get("ids-207-218-223:sextuple/window:wall_s", {}).get("ok")
        out.append("The three-dialogue window run " + ("meets" if small_ok else "does not meet")
                   + " its target (the floor + 5 s). The 400-dialogue run "
                   + ("meets" if big_ok else "does not meet")
                   + " 1.3 × its floor; one asyncio driver process (aiohttp on uvloop, orjson) spends "
                   f"{c.fig('startup_bench.all:sextuple/window.driver_cpu_ms_per_call', 2, ' ms')} of CPU per call "
                   "over the whole command, imports and data load included, on the same 2 cores as the stand-in. "
                   "What closed most of the gap was the garbage collector: CPython's default thresholds made it walk "
                   "every live object many times a second at a thousand calls per second (`core/aio.py`). A slot "
                   "still idles from its answer until the driver has handled it and sent the next call, so the busy "
                   "span stays above calls ÷ capacity. Before streaming, the same "
                   "3-dialogue run took 100 s with its first request after 77 s "
                   "(`benchmarks/results/startup_baseline-ids-207-218-223.json`, outside make bench).")
    return out


def render(report: dict[str, Any]) -> str:
    c = Cite(report)
    body = rows(c)
    notes = reading(c)
    lines = ["| what | figure | command |", "|---|---|---|"]
    lines += [f"| {w} | {f} | {cmd} |" for w, f, cmd in body]
    lines += ["", "Reading the figures:", *[f"- {n}" for n in notes]]
    lines.append("")
    lines += [f"[^{fid}]: `latest.json:{key}`" for fid, key in c.notes.items()]
    return "\n".join(lines) + "\n"


def main() -> int:
    report = json.loads((RESULTS / "latest.json").read_text(encoding="utf-8"))
    sys.stdout.write(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
