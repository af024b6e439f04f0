"""The command line shared by the per-method benchmarks: `[--quick] [--n METHOD=N ...]`, then the results files."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def main(name: str, argv: list[str] | None, sizes_quick: dict[str, int], sizes_full: dict[str, int],
         run: Callable[[bool, dict[str, int]], dict[str, Any]], to_markdown: Callable[[dict[str, Any]], str],
         results: Path) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m benchmarks.{name}")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n", nargs="*", default=[], help="METHOD=N overrides, e.g. sextuple/window=10 (0 skips one)")
    args = ap.parse_args(argv)
    methods = dict(sizes_quick if args.quick else sizes_full)
    for spec in args.n:
        m, _, n = spec.partition("=")
        if m not in methods:
            raise SystemExit(f"unknown method {m!r}; choose from {', '.join(methods)}")
        methods[m] = int(n)
    out = run(args.quick, {m: n for m, n in methods.items() if n > 0})
    results.mkdir(parents=True, exist_ok=True)
    (results / f"{name}.json").write_text(json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8")
    (results / f"{name}.md").write_text(to_markdown(out), encoding="utf-8")
    print(json.dumps(out, ensure_ascii=False, indent=1))
    return 0
