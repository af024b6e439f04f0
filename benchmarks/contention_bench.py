"""The driver under contention (issue 55, done-when 2): the small eval and the window run, each as a whole process,
with no other load, with busy processes at niceness +10, and with busy processes at the driver's own niceness.

- small eval: peer_race's emocaustics run (QUESTIONS 4-option questions, a YAML task, 64 connections) against the
  multiple-choice stand-in (`peer_race.Server`);
- window run: `emocaustics eval sextuple --method window --split all --no-score` over all 400 dialogues (startup_bench's
  `run_one`) against the plain stand-in (`standin_server.py`, 256 slots); its floor is startup_bench's.
Busy processes: BUSY (default: one per core) Python loops, started before the run and killed after it.

How a stall is detected: while each run goes, a thread of this process polls its run folder every POLL_S for answers
recorded (lines in `predictions/*/predictions.jsonl`, plus `output_*.json` prediction files) and notes the time each
count first went up. From those times and the stand-in's own clock:
- `first_answer_s`: the stand-in's first request (the start of solving) to the first answer recorded;
- `max_gap_s`: the longest time between two answers recorded, from the first request to the last answer recorded;
- `last_answer_lag_s`: the stand-in's last answer to the last answer recorded;
- `idle_waiting_s`: whole seconds (the stand-in's per-second record of calls in service) inside a gap of more than
  STALL_S (2 s) between answers recorded, in which the stand-in had no call in service: the endpoint waited on the
  driver and the driver recorded nothing.
A run *stalls* when `idle_waiting_s` > 0 or `last_answer_lag_s` > STALL_S: a stretch in which the endpoint had
answered everything asked and the driver recorded nothing (the issue's stall: 10-15 s to the first answer, every call
answered within 3 s). A long gap while the endpoint is serving is not a stall: the window method's first answer waits
for a whole chain of dependent calls, which a loaded machine slows at every step. `poll_max_interval_s` is the
poller's own longest interval: a poller starved by the same load would show there.

    python -m benchmarks.contention_bench [--questions 400] [--dialogues N (0: all 400)] [--busy N] [--repeats 1]
        [--conditions none,nice10,same_nice] [--tag NAME]

Results: `benchmarks/results/contention_bench[_TAG].json` and `.md`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
POLL_S = 0.05
STALL_S = 2.0
CONDITIONS = {"none": None, "nice10": 10, "same_nice": 0}  # busy processes' niceness added to this process's


def data_root() -> str:
    """The long-dialogue dataset (startup_bench's default)."""
    return os.environ.get("EMOCAUSTICS_DATA") or str(Path(__file__).resolve().parents[2] / "shared" / "datasets" /
                                                     "emocaustics")


def count_answers(out: Path) -> int:
    """Answers recorded so far in a run folder: predictions.jsonl lines and per-dialogue prediction files."""
    n = 0
    for folder in (out / "predictions").glob("*"):
        try:
            with open(folder / "predictions.jsonl", "rb") as f:
                n += sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 16), b""))
        except OSError:
            pass
        n += sum(1 for _ in folder.glob("output_*.json"))
    return n


class Watcher:
    """Polls a run folder in a thread; `times`: epoch seconds at which the count of answers first reached 1, 2, ..."""

    def __init__(self, out: Path) -> None:
        self.out, self.times, self.intervals = out, [], []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        last = time.time()
        while not self._stop.is_set():
            n = count_answers(self.out)
            now = time.time()
            self.intervals.append(now - last)
            last = now
            self.times.extend([now] * (n - len(self.times)))
            self._stop.wait(POLL_S)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def stall_of(times: list[float], first_request: float | None, last_answer: float | None, intervals: list[float],
             in_service: list[float]) -> dict[str, Any]:
    """The figures of the module docstring; `in_service`: the stand-in's mean calls in service per second since its
    first request."""
    poll = round(max(intervals, default=0.0), 3)
    if not times or first_request is None:
        return {"answers_seen": len(times), "first_answer_s": None, "max_gap_s": None, "last_answer_lag_s": None,
                "idle_waiting_s": None, "poll_max_interval_s": poll, "stalled": True}
    points = [first_request, *times]
    gaps = [(a, b) for a, b in zip(points, points[1:]) if b - a > STALL_S]
    idle = sum(1 for sec, busy in enumerate(in_service) if busy == 0 and any(
        a <= first_request + sec and first_request + sec + 1 <= b for a, b in gaps))
    idle += sum(1 for a, b in gaps for sec in range(len(in_service), int(b - first_request))
                if a <= first_request + sec)  # past the stand-in's record: it served nothing then
    out = {"answers_seen": len(times), "first_answer_s": round(times[0] - first_request, 3),
           "max_gap_s": round(max(b - a for a, b in zip(points, points[1:])), 3),
           "last_answer_lag_s": round(times[-1] - last_answer, 3) if last_answer else None,
           "idle_waiting_s": idle, "poll_max_interval_s": poll}
    out["stalled"] = idle > 0 or (out["last_answer_lag_s"] or 0.0) > STALL_S
    return out


def busy(n: int, nice: int | None) -> list[subprocess.Popen]:
    if nice is None:
        return []
    spin = "import os\nparent = os.getppid()\nwhile os.getppid() == parent: pass"  # ends if this process dies
    return [subprocess.Popen([sys.executable, "-c", spin],
                             preexec_fn=(lambda: os.nice(nice)) if nice else None) for _ in range(n)]


def watched(out: Path, server: Any, run: Any) -> dict[str, Any]:
    """`run()` (a whole-process run writing into `out`, against `server`) with its answers watched."""
    w = Watcher(out)
    try:
        r = run()
    finally:
        w.stop()
    st = server.stats()
    return {**r, **stall_of(w.times, st["first_request_epoch"], st["last_answer_epoch"], w.intervals,
                            st["mean_in_service_by_second"]), "in_service_by_second": st["mean_in_service_by_second"]}


def measure(conditions: list[str], *, questions: int, ids: list[int] | None, n_busy: int, repeats: int,
            latency: float = 0.2, slots: int = 256, work: Path) -> dict[str, Any]:
    from benchmarks.peer_race import Server, designed_accuracy, floor_s, prepare, run_tool
    from benchmarks.startup_bench import Standin, run_one
    from emocaustics.tasks.longdialogue.data.subsets import resolve

    data = data_root()
    os.environ["EMOCAUSTICS_DATA"] = data
    dialogues, _ = resolve(None if ids else "all", ids, root=data)
    lengths = [len(d.utterances) for d in dialogues]
    selector = ["--split", "all"] + (["--ids", ",".join(map(str, ids))] if ids else [])
    files = prepare(work / "questions", questions)
    mc, plain = Server(latency, slots), Standin(latency, slots)
    per: dict[str, list[dict[str, Any]]] = {c: [] for c in conditions}
    try:
        for rep in range(repeats):
            for cond in conditions:
                procs = busy(n_busy, CONDITIONS[cond])
                try:
                    small_out = work / f"{cond}-{rep}-small"
                    small = watched(small_out, mc, lambda: run_tool("emocaustics", mc, files, small_out, 64))
                    small["floor_s"] = floor_s(questions, latency, 64)
                    small["accuracy_ok"] = small["accuracy"] is not None and \
                        abs(small["accuracy"] - designed_accuracy(questions)) < 1e-9
                    wdir = work / f"{cond}-{rep}-window"
                    window = watched(wdir / "sextuple-window", plain, lambda: run_one(
                        plain, "sextuple", "window", selector, lengths, latency, slots, wdir, data))
                    window["wall_over_floor"] = round(window["wall_s"] / window["floor_s"], 3)
                    window["after_last_answer_s"] = round(window["wall_s"] - (window["first_request_s"] or 0.0) -
                                                          window["busy_span_s"], 3)  # the stand-in's last to exit
                finally:
                    for p in procs:
                        p.kill()
                        p.wait()
                for name, r in (("small", small), ("window", window)):
                    print(f"contention_bench: {cond} {name}: {r['wall_s']} s (floor {r['floor_s']} s), first answer "
                          f"{r['first_answer_s']} s, max gap {r['max_gap_s']} s, endpoint idle in gaps "
                          f"{r['idle_waiting_s']} s, stalled {r['stalled']}", file=sys.stderr, flush=True)
                window.pop("mean_in_service_by_second", None)  # the same as in_service_by_second
                per[cond].append({"small": small, "window": window})
    finally:
        mc.close()
        plain.close()
    return {"figures": {"conditions": per, "questions": questions, "dialogues": len(lengths), "busy": n_busy,
                        "stall_threshold_s": STALL_S, "poll_s": POLL_S, "latency_s": latency, "slots": slots,
                        "stalled_any": any(r[k]["stalled"] for rs in per.values() for r in rs for k in r)}}


def to_markdown(res: dict[str, Any]) -> str:
    f = res["figures"]
    lines = [f"# contention_bench ({f['busy']} busy processes; small eval {f['questions']} questions, window run "
             f"{f['dialogues']} dialogues; stall: see the module docstring, threshold {f['stall_threshold_s']} s)",
             "", "| condition | run | wall s | floor s | first answer s | max gap s | endpoint idle in gaps s | "
             "last-answer lag s | exit after the last answer s | stalled |", "|---" * 10 + "|"]
    for cond, runs in f["conditions"].items():
        for r in runs:
            for name in ("small", "window"):
                x = r[name]
                lines.append(f"| {cond} | {name} | {x['wall_s']} | {x['floor_s']} | {x['first_answer_s']} | "
                             f"{x['max_gap_s']} | {x['idle_waiting_s']} | {x['last_answer_lag_s']} | "
                             f"{x['after_last_answer_s']} | {x['stalled']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.contention_bench", description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=400)
    ap.add_argument("--dialogues", type=int, default=0, help="the window run's dialogues: the first N by id (0: all)")
    ap.add_argument("--busy", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--conditions", default=",".join(CONDITIONS))
    ap.add_argument("--tag", default="")
    a = ap.parse_args(argv)
    ids = None
    if a.dialogues:
        from emocaustics.tasks.longdialogue.data.subsets import resolve

        ids = sorted(d.id for d in resolve("all", None, root=data_root())[0])[:a.dialogues]
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="contention-bench-") as tmp:
        res = measure(a.conditions.split(","), questions=a.questions, ids=ids, n_busy=a.busy, repeats=a.repeats,
                      work=Path(tmp))
    res = {"name": "contention_bench", **res,
           "inputs": {"command": "python -m benchmarks.contention_bench " + " ".join(argv if argv is not None
                                                                                     else sys.argv[1:]),
                      "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                      "seconds_total": round(time.time() - t0, 1), "cpus": os.cpu_count(),
                      "load_1m_at_end": round(os.getloadavg()[0], 2)}}
    name = "contention_bench" + (f"_{a.tag}" if a.tag else "")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(res, indent=1), encoding="utf-8")
    md = to_markdown(res)
    (RESULTS / f"{name}.md").write_text(md, encoding="utf-8")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
