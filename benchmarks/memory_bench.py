"""The driver's peak memory as the data grows (issue 26): the whole dataset and ten times it through one solving run.

Each size runs in a fresh process (`--child COPIES`), so its peak resident set (`ru_maxrss`) is its own. The run is the
sextuple `window` method on the shared solving plan (`solve.plan.asolve_samples`, the path a job takes for a model
behind an endpoint, where every dialogue's state machine lives in the driver: the worst case for the driver's memory)
against the dry run's stand-in model (`solve.forecast.RecordingLLM`, a schema-valid answer at once: no network, no
model) with stand-in embeddings packed into the solver views (benchmarks/planrun.py). Ten times the data = every
dialogue ten times under new ids, holder names and its own copies of the sentence strings (new `Dialogue` samples), as
a bigger dataset's would be. The samples come from a streaming source (`planrun.StreamedCopies`: sample i is made when
the plan reads it, as a loader reading a bigger dataset from disk would), which the plan holds only while each sample
is in flight; for the record, 10x is also run with every sample made up front and held (`10x_held`), as the
EmoCaustics loader holds its corpus whole today.

Reported per size: resident MiB after imports, after the corpus is loaded, after the samples are built
(`rss_after_items`), the peak, the wall seconds and the stand-in's calls; and the growth of the peak and of the peak
minus the loaded corpus (the run's own memory) from 1x to 10x. The corpus loader reads the dataset whole (its 400 dialogues with their annotations), and
that is not copied ten times here: a ten-times-larger corpus would add its own size on top.

    python -m benchmarks --only memory_bench        (or: python -m benchmarks.memory_bench [--quick])
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
COPIES = (1, 10)
CEILING_GROWTH = 1.25  # issue 26: the driver's peak at 10x the data at most 1.25 times its peak at 1x


def _rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def child(copies: int, limit: int | None, held: bool = False) -> dict[str, Any]:
    from benchmarks.evallog_bench import _dataset

    _dataset()
    from benchmarks.planrun import (StandInEmbeddings, StreamedCopies, copies_of, hash_vectors, options_of,
                                    samples_of)
    from emocaustics.core import aio
    from emocaustics.solve.forecast import RecordingLLM, counter_for
    from emocaustics.solve.plan import asolve_samples
    from emocaustics.tasks.longdialogue.data.subsets import resolve

    imports = _rss_mib()
    dialogues, _ = resolve("all", None)
    dialogues = dialogues[:limit] if limit else dialogues
    corpus = _rss_mib()
    task, options = StandInEmbeddings("sextuple", hash_vectors), options_of(task="sextuple", method="window")
    task.prepare(samples_of(dialogues), options)  # one packed copy per dialogue: its copies share it (same sentences)
    samples = (samples_of(copies_of(dialogues, copies, fresh_strings=True)) if held
               else StreamedCopies(dialogues, copies))
    built = _rss_mib()
    llm = RecordingLLM(counter_for(None))
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memory-bench-") as tmp:
        rows = aio.run(asolve_samples(task, samples, options, llm, Path(tmp)))  # the plan's default concurrency (256)
    wall = time.perf_counter() - t0
    assert all(r["ok"] for r in rows), [r for r in rows if not r["ok"]][:1]
    return {"copies": copies, "samples": "held" if held else "streamed", "dialogue_runs": len(rows), "calls": llm.calls, "rss_after_imports_mib": round(imports, 1),
            "rss_after_corpus_mib": round(corpus, 1), "rss_after_items_mib": round(built, 1),
            "peak_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1), "wall_s": round(wall, 2)}


def run(quick: bool = False) -> dict[str, Any]:
    limit = 40 if quick else None
    sizes = {}
    for copies, held in [(c, False) for c in COPIES] + [(COPIES[-1], True)]:
        cmd = ([sys.executable, "-m", "benchmarks.memory_bench", "--child", str(copies)] + (["--quick"] if quick else [])
               + (["--held"] if held else []))
        out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1800,
                             env={**os.environ, "PYTHONHASHSEED": "0"})
        if out.returncode != 0:
            raise RuntimeError(f"memory_bench child {copies}x failed: {out.stderr[-2000:]}")
        sizes[f"{copies}x" + ("_held" if held else "")] = json.loads(out.stdout.strip().splitlines()[-1])
    one, ten = sizes["1x"], sizes["10x"]
    growth = ten["peak_mib"] / one["peak_mib"]
    own = (ten["peak_mib"] - ten["rss_after_corpus_mib"]) / (one["peak_mib"] - one["rss_after_corpus_mib"])
    figures = {"sizes": sizes, "peak_growth_10x": round(growth, 3), "run_memory_growth_10x": round(own, 3),
               "peak_growth_10x_held": round(sizes["10x_held"]["peak_mib"] / one["peak_mib"], 3)}
    return {"name": "memory_bench", "figures": figures,
            "floors": {"peak_growth_10x": {"value": round(growth, 3), "ceiling": CEILING_GROWTH,
                                           "ok": growth <= CEILING_GROWTH}},
            "notes": ["the in-process (endpoint) path: every dialogue's state machine lives in the driver",
                      "samples from a streaming source (made when the plan reads them); 10x_held: all made up front "
                      "and held, as the EmoCaustics loader holds its corpus whole today",
                      "the corpus (the dataset read whole by the loader) is loaded once in both sizes; a ten-times "
                      "larger corpus adds its own size on top (rss_after_corpus - rss_after_imports at 1x)"],
            "inputs": {"subset": "all", "quick": quick, "method": "sextuple/window", "copies": list(COPIES)}}


def to_markdown(res: dict[str, Any]) -> str:
    f = res["figures"]
    lines = ["| size | samples | dialogue runs | calls | RSS after imports / corpus / items (MiB) | peak (MiB) | wall (s) |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, s in f["sizes"].items():
        lines.append(f"| {name} | {s['samples']} | {s['dialogue_runs']} | {s['calls']} | {s['rss_after_imports_mib']} / "
                     f"{s['rss_after_corpus_mib']} / {s['rss_after_items_mib']} | {s['peak_mib']} | {s['wall_s']} |")
    lines.append(f"\npeak at 10x over 1x: {f['peak_growth_10x']}; the run's own memory (peak minus the loaded corpus): "
                 f"{f['run_memory_growth_10x']}; 10x with every sample held: {f['peak_growth_10x_held']}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if "--child" in args:
        print(json.dumps(child(int(args[args.index("--child") + 1]), 40 if "--quick" in args else None,
                               held="--held" in args)))
        return 0
    res = run(quick="--quick" in args)
    print(json.dumps(res, ensure_ascii=False, indent=1))
    print(to_markdown(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
