"""ECPE quickstart job benchmark: `jobs/ecpe-quickstart.yaml` as shipped (4 test conversations; `direct` and
`utterance` through the real vLLM CPU engine with the smoke model, `oracle` and `baseline`), end to end like
`emocaustics run`, with a fresh response cache so that every answer is really generated.

Records the job's wall time and the engine start inside it, each config's wall time, answers, tokens, failures and
unreadable answers, the official figures (`weighted_strict_f1`, `weighted_f1`) and the engine's prefix-cache hit rate.
The smoke model is random weights: its figures say the machinery works, they are NOT a quality figure.

    python -m benchmarks.ecpe_job_bench            # --quick is accepted and runs the same small job
Writes benchmarks/results/ecpe_job_bench.json and .md, with the 1-minute load average before and after (the machine
is shared). Needs the data ($EMOCAUSTICS_ECAC_DATA, the fetch cache, or ../shared/datasets/ecac beside the checkout).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

RESULTS = Path(__file__).resolve().parent / "results"
JOB = Path(__file__).resolve().parents[1] / "jobs" / "ecpe-quickstart.yaml"


def run(quick: bool = False) -> dict:
    import polars as pl

    from benchmarks.ecpe_score_bench import _root
    from emocaustics.jobs.runner import run_job
    from emocaustics.jobs.spec import load_job

    root = _root()
    raw = yaml.safe_load(JOB.read_text(encoding="utf-8"))
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="ecpe-job-") as tmp:
        job = load_job(JOB, overrides={"output": f"{tmp}/runs", "cache_dir": f"{tmp}/cache",
                                       "dataset": {"ecpe": {**raw["dataset"]["ecpe"], "data": str(root)}}})
        figures["load_1m_before"] = round(os.getloadavg()[0], 2)
        t0 = time.perf_counter()
        log = io.StringIO()
        try:
            with contextlib.redirect_stdout(log):
                run_dir = run_job(job, out=f"{tmp}/run")
            figures["job_seconds"] = round(time.perf_counter() - t0, 2)
            figures["load_1m_after"] = round(os.getloadavg()[0], 2)
            engine = _engine_stats()
        finally:
            _shutdown()
        figures["engine_start_seconds"] = engine.get("engine_start_seconds")
        figures["engine_calls"] = engine.get("calls")
        figures["prefix_cache_hit_rate"] = engine.get("prefix_cache_hit_rate")
        summary = pl.read_csv(run_dir / "summary.csv")
        scores = pl.read_parquet(run_dir / "scores.parquet")
        wall = json.loads((run_dir / "wall.json").read_text(encoding="utf-8"))
        official = {r["run"]: r["summary"] for r in json.loads((run_dir / "configs.json").read_text(encoding="utf-8"))}
        configs = {}
        for row in summary.iter_rows(named=True):
            part = scores.filter(pl.col("run") == row["run"])
            configs[row["run"]] = {
                "kind": row["kind"], "conversations": row["samples"], "failures": row["failures"],
                "wall_seconds": wall[row["run"]], "llm_calls": row["llm_calls"], "tokens": row["tokens"],
                "unparseable": int(part["c_unparseable"].sum()) if "c_unparseable" in part.columns else 0,
                "span_misses": int(part["c_span_misses"].fill_null(0).sum()) if "c_span_misses" in part.columns else 0,
                "weighted_strict_f1": official[row["run"]]["weighted_strict_f1"],
                "weighted_f1": official[row["run"]]["weighted_f1"],
            }
        figures["configs"] = configs
    unreadable = sum(c["unparseable"] + c["failures"] for c in configs.values() if c["kind"] == "engine-check")
    return {
        "name": "ecpe_job_bench",
        "figures": figures,
        "inputs": {"job": "jobs/ecpe-quickstart.yaml", "data": str(root),
                   "conversations": raw["dataset"]["ecpe"]["ids"],
                   "response_cache": "fresh (every answer generated)"},
        "notes": ["job_seconds is the whole `run_job`, Ray start and the engine start included; wall_seconds per "
                  "config is load + solve + score (the first LLM config's includes the engine start)",
                  "smoke model: random weights, its pairs are noise; the figures show the machinery, not quality",
                  f"cpus: {os.cpu_count()}"],
        "floors": {"llm_unreadable_or_failed": {"value": unreadable, "floor": 0, "ok": unreadable == 0}},
    }


def _engine_stats() -> dict[str, Any]:
    from emocaustics.models.pool import registered_pools

    pools = list(registered_pools().values())  # the job names one model: the smoke pool is the only one
    return asyncio.run(pools[0].stats()) if pools else {}


def _shutdown() -> None:
    import ray

    from emocaustics.models.pool import shutdown_pools

    shutdown_pools()
    if ray.is_initialized():
        ray.shutdown()


def to_markdown(out: dict) -> str:
    f = out["figures"]
    lines = [f"Whole job {f['job_seconds']} s (engine start {f['engine_start_seconds']} s), load average 1 min "
             f"{f['load_1m_before']} before / {f['load_1m_after']} after; {f['engine_calls']} engine calls, "
             f"prefix-cache hit rate {f['prefix_cache_hit_rate']}.", "",
             "| config | kind | conversations | failures | unparseable | llm_calls | tokens | wall (s) | "
             "weighted_strict_f1 | weighted_f1 |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for run_label, c in f["configs"].items():
        lines.append(f"| {run_label} | {c['kind']} | {c['conversations']} | {c['failures']} | {c['unparseable']} | "
                     f"{c['llm_calls']} | {c['tokens']} | {c['wall_seconds']} | {c['weighted_strict_f1']!r} | "
                     f"{c['weighted_f1']!r} |")
    lines.append("\nsmoke model = random weights: the LLM rows are an engine check, not a quality figure.")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ecpe_job_bench")
    parser.add_argument("--quick", action="store_true")
    out = run(quick=parser.parse_args().quick)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "ecpe_job_bench.json").write_text(json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8")
    (RESULTS / "ecpe_job_bench.md").write_text("# ecpe_job_bench\n\n`python -m benchmarks.ecpe_job_bench`\n\n"
                                               + to_markdown(out), encoding="utf-8")
    print(json.dumps(out, ensure_ascii=False, indent=1))
    print(to_markdown(out))


if __name__ == "__main__":
    main()
