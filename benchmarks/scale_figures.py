"""The figures of benchmarks/scale_bench.py from its measurements: efficiencies, the grid's projected hours with
their measured bounds, the floors, the markdown table, and `--rederive` (the figures of a stored run recomputed with
the current rules, nothing re-measured)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from benchmarks.sim_engine import ANCHORS

RESULTS = Path(__file__).resolve().parent / "results"
GPUS_PER_REPLICA = 4
FLOOR_OVERHEAD_MS = 2.0
FLOOR_EFFICIENCY = 0.85

PROJECT_GPUS = (4, 8, 16, 64, 256)


def projections(full_runs: dict[int, dict], grid_tokens: float, base: float, efficiency: float | None,
                crit: float) -> dict[str, dict[str, Any]]:
    """The 400-dialogue grid's simulated wall time on N GPUs, never below a measured bound.

    `rate_projection_s` = the grid's tokens / (replicas x single-replica rate x efficiency at scale). It is only an
    estimate; two measured floors bound it: the critical path (the longest dialogue's dependent chain alone, which no
    replica count shortens) and the simulated run of this very grid at the nearest measured replica count at or above
    N/4 (fewer replicas never finish sooner). Where N/4 replicas were run, the run itself is the figure."""
    out: dict[str, dict[str, Any]] = {}
    for gpus in PROJECT_GPUS:
        r = gpus // GPUS_PER_REPLICA
        row: dict[str, Any] = {"replicas": r, "critical_path_s": round(crit, 1)}
        if r in full_runs:
            row.update(kind="simulated run", seconds=full_runs[r]["sim_makespan_s"], bound_s=round(crit, 1),
                       bound="critical path")
        else:
            eff = 1.0 if r == 1 else efficiency
            if eff is None:
                continue
            rate = grid_tokens / (r * base * eff)
            bounds = {"critical path": crit}
            above = sorted(k for k in full_runs if k > r)
            if above:
                bounds[f"simulated run at {above[0]} replicas"] = full_runs[above[0]]["sim_makespan_s"]
            name, bound = max(bounds.items(), key=lambda kv: kv[1])
            row.update(kind="projection", rate_projection_s=round(rate, 1), efficiency_used=round(eff, 3),
                       seconds=round(max(rate, bound), 1), bound_s=round(bound, 1), bound=name,
                       raised_to_bound=rate < bound)
        row["hours"] = round(row["seconds"] / 3600, 3)
        row["bound_hours"] = round(row["bound_s"] / 3600, 3)
        out[f"{gpus}_gpus"] = row
    return out


def derive(res: dict[str, Any], copies: int, scale_r: int, n_dialogues: int) -> dict[str, Any]:
    """The figures of one run from its measurements (`res` = the run's details); also used by `--rederive`."""
    runs = {int(k): v for k, v in res["runs"].items()}
    scaled = res["scaled"]
    base = runs[1]["sim_tokens_per_s"]
    crit = max(res["critical_path_s"].values())
    all_runs = list(runs.values()) + ([scaled] if scaled else [])
    for fig in all_runs:
        fig["scaling_efficiency"] = fig["sim_tokens_per_s"] / (fig["replicas"] * base)
        # perfect scaling would take `ideal` seconds; no run is shorter than the longest dialogue's chain
        ideal = fig["generated_tokens"] / (fig["replicas"] * base)
        fig["efficiency_bound_critical_path"] = ideal / max(ideal, crit)
    figures: dict[str, Any] = {"simulated": True, "single_replica_tokens_per_s": round(base, 1),
                               "critical_path_s": round(crit, 1)}
    for r, fig in sorted(runs.items()):
        figures[f"efficiency_{r}_replicas"] = round(fig["scaling_efficiency"], 3)
        figures[f"efficiency_bound_{r}_replicas"] = round(fig["efficiency_bound_critical_path"], 3)
        # how much of what the critical path allows the run reached (issue 31: at least 0.9 at 64 replicas, 1x)
        figures[f"share_of_bound_{r}_replicas"] = round(fig["scaling_efficiency"] / fig["efficiency_bound_critical_path"], 3)
    if scaled:
        figures[f"efficiency_{copies}x_at_{scale_r}_replicas"] = round(scaled["scaling_efficiency"], 3)
        figures[f"efficiency_bound_{copies}x_at_{scale_r}_replicas"] = round(scaled["efficiency_bound_critical_path"], 3)
    full = {r: f for r, f in runs.items() if f["dialogues"] == n_dialogues}  # runs of the whole 1x grid
    for r, fig in sorted(full.items()):
        figures[f"grid_run_hours_on_{r * GPUS_PER_REPLICA}_gpus"] = round(fig["sim_makespan_s"] / 3600, 3)
    big = max(runs)
    first = next(iter(full.values()), None)
    grid_tokens = first["generated_tokens"] if first else (scaled["generated_tokens"] / copies if scaled else
                                                           runs[big]["generated_tokens"])
    grid_calls = first["llm_calls"] if first else (scaled["llm_calls"] // copies if scaled else runs[big]["llm_calls"])
    figures["grid_hours"] = projections(full, grid_tokens, base, scaled["scaling_efficiency"] if scaled else None, crit)
    figures["overhead_ms_per_call_worst"] = round(max(f["overhead_ms_per_call"] for f in all_runs), 3)
    figures["overhead_ms_per_call_best"] = round(min(f["overhead_ms_per_call"] for f in all_runs), 3)
    figures["driver_rss_peak_mib"] = max(f["driver_rss_peak_mib"] for f in all_runs)
    figures["driver_rss_peak_gib"] = round(figures["driver_rss_peak_mib"] / 1024, 1)
    figures["llm_calls_grid_400"] = grid_calls
    figures["failed_dialogue_runs"] = sum(f["failed"] for f in all_runs)
    figures["mean_batch_64_replicas"] = round(runs[big]["mean_batch"], 1)
    return figures


PROJECTION_NOTE = (
    "grid_hours: the 400-dialogue grid's simulated wall time per GPU count. Where that many replicas ran, the simulated "
    "run itself; elsewhere a projection = the grid's tokens / (replicas x single-replica rate x the 10x run's "
    "efficiency), raised to its bound when below it: the larger of the critical path and the simulated run at the "
    "nearest measured replica count above (fewer replicas never finish sooner). bound_s and bound name it.")


def floors_of(res: dict[str, Any], figures: dict[str, Any], copies: int) -> dict[str, Any]:
    runs = {int(k): v for k, v in res["runs"].items()}
    eff_run = res["scaled"] or runs[max(runs)]
    eff_label = f"scaling_efficiency_{eff_run['replicas']}_replicas" + (f"_{copies}x" if res["scaled"] else "")
    worst = figures["overhead_ms_per_call_worst"]
    return {
        "overhead_ms_per_call": {"value": worst, "floor": f"< {FLOOR_OVERHEAD_MS}", "ok": worst < FLOOR_OVERHEAD_MS},
        eff_label: {"value": eff_run["scaling_efficiency"], "floor": f">= {FLOOR_EFFICIENCY}",
                    "ok": eff_run["scaling_efficiency"] >= FLOOR_EFFICIENCY},
    }


def rederive(path: Path = RESULTS / "scale_bench.json") -> dict[str, Any]:
    """Recompute the figures of a stored run from its own measurements (`details`), with the current rules (e.g. the
    projection bounds); nothing is re-measured. The run's date and the re-derivation's are both recorded."""
    result = json.loads(path.read_text(encoding="utf-8"))
    inputs = result["inputs"]
    wall = result["figures"].get("bench_wall_s")
    figures = derive(result["details"], inputs["scale_copies"], inputs["scale_replicas"], inputs["dialogues"])
    figures["bench_wall_s"] = wall
    result["figures"] = figures
    result["floors"] = floors_of(result["details"], figures, inputs["scale_copies"])
    inputs["anchors"] = ANCHORS
    notes = [n for n in result["notes"] if not n.startswith(("grid_run_hours_on_4_gpus_projected", "grid_hours:",
                                                              "Figures re-derived"))]
    notes = [n.replace("; grid_run_hours_on_4_gpus_projected = the 400-dialogue grid's generated tokens at that rate.",
                       ".") for n in notes]
    if "run" in result:
        result["run"]["rederived"] = f"{time.strftime('%Y-%m-%d')}: python -m benchmarks.scale_bench --rederive"
    result["notes"] = notes + [PROJECTION_NOTE, f"Figures re-derived on {time.strftime('%Y-%m-%d')} from this run's "
                                                "stored measurements (details); nothing re-measured."]
    return result


def write(result: dict) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "scale_bench.json").write_text(json.dumps(result, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
    (RESULTS / "scale_bench.md").write_text(to_markdown(result), encoding="utf-8")


def to_markdown(result: dict) -> str:
    runs = result["details"]["runs"]
    lines = ["| replicas | dialogues | GPUs | sim makespan (s) | sim tok/s | efficiency | bound (critical path) | "
             "mean batch | busy max/mean | overhead ms/call | real wall (s) | driver RSS MiB |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r, f in sorted(runs.items(), key=lambda kv: int(kv[0])):
        lines.append(_row(str(r), f))
    if result["details"]["scaled"]:
        lines.append(_row(f"{result['inputs']['scale_replicas']} ({result['inputs']['scale_copies']}x data)",
                          result["details"]["scaled"]))
    lines += ["", *[f"- {n}" for n in result["notes"]]]
    return "\n".join(lines) + "\n"


def _row(label: str, f: dict) -> str:
    return (f"| {label} | {f.get('dialogues', '')} | {f['replicas'] * GPUS_PER_REPLICA} | {f['sim_makespan_s']:.0f} | {f['sim_tokens_per_s']:.0f} | "
            f"{f.get('scaling_efficiency', 0):.3f} | {f.get('efficiency_bound_critical_path', 0):.3f} | {f['mean_batch']:.0f} | {f['replica_busy_max_over_mean']:.2f} | "
            f"{f['overhead_ms_per_call']:.3f} | {f['real_wall_s']:.1f} | {f['driver_rss_peak_mib']:.0f} |")
