"""The fair race (issue 31): ours and the reference's way of driving a model server, each as a whole process.

Both sides are new processes started the same way from this one (`subprocess`, the same interpreter, environment and
working directory) and timed from process start to exit, against the SAME OpenAI-compatible endpoint:
- ours: `python -m emocaustics eval TASK --method M --model openai:standin@URL?concurrency=SLOTS --split all --ids ...
  --out ... --no-score` with a fresh response cache (`EMOCAUSTICS_RESPONSE_CACHE`); chains window solves its
  sextuple window pass too (a one-line eval builds on no earlier run), and so does the reference side;
- reference: `python -m benchmarks.refdriver --method TASK/M --ids ... --url URL --out ...`: what a reference script
  does in one process (load the dialogues, load the sentence-transformers embedder in-process and embed up front when
  the method needs embeddings, then blocking calls from the reference's own thread count per method,
  `refdriver.REFERENCE_CONCURRENCY`), with our prompts, request bodies and parsing, so that the work is the same.
Both embed with the same kind of model (`minilm`, sentence-transformers); ours loads it in a child process and only
for what the plan asks, the reference in its own process, up front, as the reference scripts do.

The endpoint is `standin_server.py` (fixed latency per call, limited slots, a queue beyond them), not the CPU vLLM
engine: that engine serves this machine's 2 cores at ~4 s per generated answer of the smoke model (reference_bench),
so the reference's one-thread sextuple window run at ten times its size (40 dialogues, ~780 calls) alone would take
~50 min. The stand-in's 0.2 s per call is the low end of a GPU-served model's latency for these calls (an answer of a
few dozen to a few hundred tokens at ~100-300 tokens/s per sequence); a longer latency only widens the gap between a
side that overlaps its calls and one that does not, so 0.2 s is the choice least favourable to ours. Its 256 slots
keep the server from being either side's bottleneck (ours keeps at most 256 calls open, the reference at most 20).
The stand-in is reset before every side; its call count is each side's `calls`.

Sizes: the reference's own (reference_bench's N_FULL dialogues per method) and ten times them; the dialogues are
paper-100's by id (reference_bench's choice), then the rest of the 400 by id. Per method and size, REPEATS runs
(default 1, `RACE_BENCH_REPEATS`), the side that goes first alternating. Floors: speed-up (reference wall / ours)
>= 1 at the reference's sizes and >= 3 at ten times them, per method.

    python -m benchmarks --only race_bench          (or python -m benchmarks.race_bench [--quick])
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
LATENCY = float(os.environ.get("RACE_BENCH_LATENCY", "0.2"))
SLOTS = int(os.environ.get("RACE_BENCH_SLOTS", "256"))
REPEATS = int(os.environ.get("RACE_BENCH_REPEATS", "1"))
SCALES = tuple(int(x) for x in os.environ.get("RACE_BENCH_SCALES", "1,10").split(","))
FLOOR = {1: 1.0, 10: 3.0}  # issue 31: at least 1x at the reference's sizes, at least 3x at ten times them


def race_ids(n: int, data: str | None = None) -> list[int]:
    """The first n dialogues: paper-100's by id (reference_bench's `_dialogues`), then the rest of the 400 by id."""
    from emocaustics.tasks.longdialogue.data.subsets import resolve

    paper, _ = resolve("paper-100", None, root=data)
    everything, _ = resolve("all", None, root=data)
    first = sorted(d.id for d in paper)
    order = first + sorted(set(d.id for d in everything) - set(first))
    if n > len(order):
        raise ValueError(f"race_bench: {n} dialogues asked, the dataset has {len(order)}")
    return order[:n]


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def side_command(side: str, method: str, ids: list[int], url: str, out: Path, from_dir: Path | None) -> list[str]:
    task, how = method.split("/")
    frm = ["--from", str(from_dir)] if from_dir is not None else []
    if side == "ours":
        return [sys.executable, "-m", "emocaustics", "eval", task, "--method", how,
                "--model", f"openai:standin@{url}?concurrency={SLOTS}", "--split", "all", "--ids", ",".join(map(str, ids)),
                "--out", str(out), "--no-score", "--allow-failures", *frm]
    return [sys.executable, "-m", "benchmarks.refdriver", "--method", method, "--ids", ",".join(map(str, ids)),
            "--url", url, "--model", "standin", "--out", str(out), *frm]


def phases(side: str, t0: float, t_exit: float, marks: dict[str, float] | None) -> dict[str, float | None]:
    """Where each side's wall went, from its own marks (epoch seconds)."""
    from benchmarks.startup_bench import breakdown

    if side == "ours":
        return breakdown(t0, t_exit, marks)
    m = marks or {}
    seq = [("process_start", t0, m.get("start")), ("dataset_load", m.get("start"), m.get("data_loaded")),
           ("embedder_load_and_embed", m.get("data_loaded"), m.get("embedded")),
           ("client_start", m.get("embedded"), m.get("calls_start")),
           ("calls", m.get("calls_start"), m.get("calls_done")), ("exit", m.get("calls_done"), t_exit)]
    return {k: (round(b - a, 3) if a is not None and b is not None else None) for k, a, b in seq}


def run_side(side: str, standin: Any, method: str, ids: list[int], work: Path, from_dir: Path | None) -> dict:
    out, cache = work / f"{side}-out", work / f"{side}-cache"
    cmd = side_command(side, method, ids, standin.url, out, from_dir)
    env = dict(os.environ, EMOCAUSTICS_RESPONSE_CACHE=str(cache))  # ours: a fresh response cache per side and run
    standin.reset()
    before = _load()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    t_exit = time.time()
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)  # the side's process and the children it waited for
    st = standin.stats()
    if side == "ours":  # the run folder's record; the predictions in its one config's folder
        from benchmarks.startup_bench import run_record

        summary = run_record(out)[0]
        out = next(iter(sorted((out / "predictions").glob("*"))), out / "predictions")
    else:
        try:
            summary = json.loads(proc.stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            summary = {}
    prefix = "output_chat_" if method.startswith("sextuple") else "output_emotions_"
    predicted = sorted(int(p.stem.rsplit("_", 1)[1]) for p in out.glob(f"{prefix}*.json")) if out.is_dir() else []
    first = st["first_request_epoch"]
    return {"rc": proc.returncode, "wall_s": round(t_exit - t0, 3), "calls": st["calls"],
            "first_request_s": round(first - t0, 3) if first else None, "busy_span_s": st["busy_span_seconds"],
            "max_in_service": st["max_in_service"], "predicted_ids": predicted,
            "cpu_s": round(ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime, 3),
            "in_service_by_second": st.get("mean_in_service_by_second"),
            "failures": _failures(summary.get("failures")) if summary else None,
            "phases": phases(side, t0, t_exit, summary.get("timings")),
            "load_avg_1m": [before, _load()], "out": str(out),
            "command": " ".join(cmd[1:]).replace(str(work), "WORK"),
            **({"stderr_tail": proc.stderr[-1500:]} if proc.returncode or not summary else {})}


def _failures(value: Any) -> int | None:
    """A side's failures: the reference's list of rows, or ours' count (run.json's `failed_samples`)."""
    return len(value) if isinstance(value, list) else value


def _spread(values: list[float]) -> dict[str, Any]:
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3),
            "max": round(max(values), 3), "n": len(values)}


def _same_files(a: str, b: str, ids: list[int], prefix: str) -> int:
    """How many of the dialogues' prediction files the two sides wrote byte for byte alike."""
    return sum(1 for i in ids if (Path(a) / f"{prefix}{i}.json").is_file() and (Path(b) / f"{prefix}{i}.json")
               .is_file() and (Path(a) / f"{prefix}{i}.json").read_bytes() == (Path(b) / f"{prefix}{i}.json")
               .read_bytes())


def race(methods: dict[str, int], scales: tuple[int, ...] = SCALES, *, latency: float = LATENCY,
         slots: int = SLOTS, repeats: int = REPEATS, work: Path | None = None) -> dict[str, Any]:
    """Each method at each scale (x its reference size), both sides as processes; the result document."""
    from benchmarks.refdriver import REFERENCE_CONCURRENCY
    from benchmarks.startup_bench import Standin

    work = work or Path(tempfile.mkdtemp(prefix="race-bench-"))
    standin = Standin(latency, slots)
    per: dict[str, dict[str, Any]] = {}
    try:
        for si, scale in enumerate(scales):
            size = f"{scale}x"
            per[size] = {}
            for mi, (method, n) in enumerate(methods.items()):
                ids = race_ids(n * scale)
                runs = []
                for rep in range(repeats):
                    order = ("ours", "reference") if (rep + mi + si) % 2 == 0 else ("reference", "ours")
                    from_dir = None  # chains window: both sides solve its sextuple window pass too
                    one: dict[str, Any] = {"first": order[0]}
                    for side in order:
                        one[side] = run_side(side, standin, method, ids, work / size / method.replace("/", "-") /
                                             f"r{rep}", from_dir)
                    ours, ref = one["ours"], one["reference"]
                    one["speedup"] = round(ref["wall_s"] / ours["wall_s"], 3)
                    one["same_ids_predicted"] = ours["predicted_ids"] == ref["predicted_ids"]
                    prefix = "output_chat_" if method.startswith("sextuple") else "output_emotions_"
                    one["identical_predictions"] = _same_files(ours["out"], ref["out"], ids, prefix)
                    runs.append(one)
                    print(f"race_bench: {size} {method} n={len(ids)} repeat {rep + 1}/{repeats} ({order[0]} first): "
                          f"ours {ours['wall_s']} s ({ours['calls']} calls), reference {ref['wall_s']} s "
                          f"({ref['calls']} calls), speed-up {one['speedup']}", file=sys.stderr, flush=True)
                per[size][method] = {
                    "dialogues": len(ids), "ids_first_last": [ids[0], ids[-1]],
                    "reference_threads": REFERENCE_CONCURRENCY[method][0],
                    "speedup": _spread([r["speedup"] for r in runs]),
                    "ours_wall_s": _spread([r["ours"]["wall_s"] for r in runs]),
                    "reference_wall_s": _spread([r["reference"]["wall_s"] for r in runs]),
                    "calls": {"ours": runs[0]["ours"]["calls"], "reference": runs[0]["reference"]["calls"]},
                    "same_work": all(r["ours"]["calls"] == r["reference"]["calls"] and r["same_ids_predicted"]
                                     for r in runs),
                    "runs": runs}
    finally:
        standin.close()
    return figures_of(per, latency, slots, repeats)


def figures_of(per: dict[str, dict[str, Any]], latency: float, slots: int, repeats: int) -> dict[str, Any]:
    pick = {name: {size: {m: f[name]["median"] for m, f in ms.items()} for size, ms in per.items()}
            for name in ("speedup", "ours_wall_s", "reference_wall_s")}
    loads = [v for ms in per.values() for f in ms.values() for r in f["runs"] for s in ("ours", "reference")
             for v in r[s]["load_avg_1m"]]
    figures = {**pick, "calls": {size: {m: f["calls"]["ours"] for m, f in ms.items()} for size, ms in per.items()},
               "dialogues": {size: {m: f["dialogues"] for m, f in ms.items()} for size, ms in per.items()},
               "reference_threads": {m: f["reference_threads"] for ms in per.values() for m, f in ms.items()},
               "latency_s": latency, "slots": slots, "repeats": repeats,
               "load_avg_1m_range": [min(loads), max(loads)] if loads else None, "per_size": per}
    floors = {}
    for size, ms in per.items():
        floor = FLOOR.get(int(size[:-1]), 1.0)
        for m, f in ms.items():
            v = f["speedup"]["median"]
            floors[f"{size}:{m}:speedup"] = {"value": v, "floor": floor, "ok": bool(v >= floor and f["same_work"])}
    return {"figures": figures, "floors": floors}


def run(quick: bool = False) -> dict[str, Any]:
    from benchmarks.reference_bench import N_FULL

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    methods = {m: 1 for m in N_FULL} if quick else dict(N_FULL)
    scales = (1,) if quick else SCALES
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="race-bench-") as tmp:  # 10x leaves thousands of prediction files
        res = race(methods, scales, work=Path(tmp))
    return {"name": "race_bench", **res,
            "inputs": {"reference_sizes": methods, "scales": list(scales), "latency_s": LATENCY, "slots": SLOTS,
                       "repeats": REPEATS, "ours": f"python -m emocaustics eval ... --model openai:standin@URL?"
                                                   f"concurrency={SLOTS} --no-score (fresh response cache)",
                       "reference": "python -m benchmarks.refdriver --method M --ids ... --url URL --out DIR",
                       "seconds_total": round(time.time() - t0, 1)},
            "notes": NOTES}


NOTES = [
    "both sides are whole processes started alike from this process and timed from start to exit; the endpoint is "
    "the stand-in (not a model): its answers are schema instances, so both sides make the same calls and write the "
    "same predictions (calls, same_ids_predicted and identical_predictions per run say so)",
    "ours pays its process start, imports, Ray-free endpoint client and (when the plan asks) an embedder child; the "
    "reference pays its process start, imports and (rag, window) its in-process sentence-transformers load and an "
    "up-front embedding of every utterance, as the reference scripts do",
    "rag: ours embeds only the dialogues with an utterance past the first K=20 (the others have nothing older than "
    "their recent history to retrieve, on either side), several dialogues per encode, length-sorted across them; "
    "the reference embeds every utterance: the same retrievals, the same calls and predictions",
    "in the reference's favour: its scripts import torch and faiss at start whatever the method (utils.py at "
    "7aa88ef) and embed through an OpenAI-compatible /embeddings endpoint, one text per blocking request in the "
    "dialogue's thread (utils.call_embedding); here the reference side imports torch only when it embeds and embeds "
    "every utterance up front in one batch with the same local model as ours",
    "chains window solves its sextuple window pass first, on both sides (a one-line eval builds on no earlier run)",
    "2 shared CPU cores: the 1-minute load average before and after every side is recorded; sides alternate first",
]


def to_markdown(out: dict[str, Any]) -> str:
    f = out["figures"]
    lines = [f"# race_bench (whole processes; stand-in at {f['latency_s']} s per call, {f['slots']} slots)", "",
             "| size | method | dialogues | ref threads | calls | reference s | ours s | speed-up | floor | "
             "load 1m (ref / ours) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for size, ms in f["per_size"].items():
        for m, x in ms.items():
            r0 = x["runs"][0]
            fl = out["floors"][f"{size}:{m}:speedup"]
            lines.append(f"| {size} | {m} | {x['dialogues']} | {x['reference_threads']} | {x['calls']['ours']} | "
                         f"{x['reference_wall_s']['median']} | {x['ours_wall_s']['median']} | "
                         f"{x['speedup']['median']} | {fl['floor']} ({'ok' if fl['ok'] else 'BELOW'}) | "
                         f"{r0['reference']['load_avg_1m']} / {r0['ours']['load_avg_1m']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    res = run(quick="--quick" in args)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "race_bench.json").write_text(json.dumps(res, ensure_ascii=False, indent=1), encoding="utf-8")
    print(to_markdown(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
