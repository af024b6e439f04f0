"""The eval log of a whole-dataset window run (issue 27): its size, what recording and writing it costs, and how fast
`emocaustics view` opens it.

The records are made, not invented: every dialogue of the EmoCaustics dataset (subset `all`, 400 dialogues, from
$EMOCAUSTICS_DATA or ../shared/datasets/emocaustics) goes through the sextuple `window` state machine the way a job
runs it in the driver (`solve.plan.asolve_samples` under the job's eval-log sink), against the dry run's stand-ins
(`solve.forecast.RecordingLLM`: a schema-valid answer of typical size at once; `StandInEmbedder`: pseudo-random
vectors). So each call's messages are the prompts a run builds (windows, the event bucket, histories), about 30,000
calls. No model, no network, no Ray.

- size: `size_report(RunLog(...))` of the written log: bytes on disk (total and per call), prompt characters the calls
  sent against the characters stored (the share deduplicated: text many calls share is stored once).
- writer: seconds to write every sample's line (`ConfigLog._write`, what the log's child does for each `emit`: one
  staging line each, secrets redacted: one secret in the environment, as a run with an API key) and `finish` the
  config (compaction to Parquet and the samples table with input and gold), per 1,000 calls: the work itself, done
  here in this process (a job's log does it in its child process). Recording: the seconds spent inside `Recorder`'s methods (`add`: each call's text chunked and
  hashed as it is made; `note`, `to_json`) during the run, the faster of two runs; the walls of the same in-process
  run with and without the sink are reported too (their difference is within the shared machine's noise).
- share of a run (issue 27's figure): the same whole-dataset window run against a stand-in endpoint with startup_bench's
  latency and slots (0.2 s per call, 256 in service; in process, the stand-in's answers after that wait), with the
  job's eval log (each sample emitted as it finishes and its prediction waiting for its line, the config finished at
  the end: Parquet written; the writing in the log's child process) and without, five pairs, alternating, on the
  event loop and collector settings of a job's driver (`core.aio.run`); the share is
  the median of the pairs' (with - without) / without, each pair run back to back so that the shared machine's load
  moves both alike. Beside it, the driver's own CPU seconds per run (`time.process_time`, all its threads; far
  steadier under load than wall): the log's added driver CPU over the wall without it (`driver_cpu_share`), what the
  run would lose if all of it stood on the critical path. Also the CPU seconds of recording +
  writing over the wall of the in-process run without the log (its model answers at once, so that wall is the
  driver's own work only) and over the wall of startup_bench's whole-dataset window run (from latest.json): upper
  bounds, as if none of that work overlapped the waits for the endpoint.
- viewer, on that log (no score tables: scoring is not part of this benchmark): server response times of the run
  index, the config's sample list and single samples (the first one cold: it reads the config's calls and the run's
  texts), and in headless Chromium the time from navigation (or the hash change) to the rendered page.

    python -m benchmarks --only evallog_bench      (or: python -m benchmarks.evallog_bench [--quick])
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.evallog_viewer import SAMPLES_OPENED

REPO = Path(__file__).resolve().parents[1]
LABEL = "sextuple_window_api"
SECRET = "sk-bench-not-a-real-key-0123456789abcdef"
REPEATS = 2  # in-process runs with and without the log, alternating
PAIRS = 5  # runs against the endpoint stand-in without and with the log, alternating: the share is the pairs' median
LATENCY_S, SLOTS = 0.2, 256  # startup_bench's stand-in endpoint: seconds per call, calls in service at once
CEILING_SAMPLE_S = 1.0  # issue 27: the viewer opens any sample in under a second
CEILING_SHARE = 0.05  # issue 27: logging costs at most 5 % of the run's wall time


class Timed:
    """Seconds spent inside the recorder's methods while a run goes (the real code, wrapped)."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def __enter__(self) -> "Timed":
        from emocaustics.evallog.record import Recorder

        self.saved = {name: getattr(Recorder, name) for name in ("add", "note", "to_json")}
        for name, fn in self.saved.items():
            setattr(Recorder, name, self._wrap(fn))
        return self

    def _wrap(self, fn: Any) -> Any:
        def timed(*args: Any, **kw: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                self.seconds += time.perf_counter() - t0
        return timed

    def __exit__(self, *exc: Any) -> None:
        from emocaustics.evallog.record import Recorder

        for name, fn in self.saved.items():
            setattr(Recorder, name, fn)


class Capture:
    """The job's eval-log sink as the plan (`solve.plan.asolve_samples`) sees it, keeping each finished dialogue's row
    (with its log)."""

    prompts = True

    def __init__(self) -> None:
        self.rows: list[tuple[str, dict[str, Any]]] = []

    def emit(self, sample_id: str, result: dict[str, Any]) -> None:
        row = dict(result)  # the plan pops log and prediction from its own dict after
        if hasattr(row.get("log"), "to_json"):  # a finished recorder (record.Finished): chunked here, on the loop
            row["log"] = row["log"].to_json()
        self.rows.append((sample_id, row))


def _dataset() -> None:
    if not os.environ.get("EMOCAUSTICS_DATA"):
        shared = REPO.parent / "shared" / "datasets" / "emocaustics"
        if (shared / "chat").is_dir():
            os.environ["EMOCAUSTICS_DATA"] = str(shared)


def prepare(dialogues: list[Any]) -> tuple[Any, Any, list[Any]]:
    """The sextuple `window` run of these dialogues on the shared plan: the task with the dry run's stand-in vectors
    packed into its solver views (made here, outside the timings), its options, and the samples."""
    from benchmarks.planrun import StandInEmbeddings, hash_vectors, options_of, samples_of

    task, options = StandInEmbeddings("sextuple", hash_vectors), options_of(task="sextuple", method="window")
    samples = samples_of(dialogues)
    task.prepare(samples, options)
    return task, options, samples


def solve(run: tuple[Any, Any, list[Any]], out: Path, sink_: Capture | None) -> tuple[float, int]:
    """One in-process run of every sample (`prepare`'s): wall seconds and the stand-in's calls."""
    from emocaustics.evallog import sink
    from emocaustics.solve.forecast import RecordingLLM, counter_for
    from emocaustics.solve.plan import asolve_samples

    task, options, samples = run
    llm = RecordingLLM(counter_for(None))
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with sink.active(sink_):
        rows = asyncio.run(asolve_samples(task, samples, options, llm, out))
    wall = time.perf_counter() - t0
    bad = [r for r in rows if not r["ok"]]
    assert not bad, f"{len(bad)} dialogues failed, e.g. {bad[0]['step']}: {bad[0]['reason']}"
    return wall, llm.calls


class Endpoint:
    """The dry run's stand-in answers after startup_bench's endpoint latency, at most SLOTS calls in service."""

    def __init__(self, llm: Any) -> None:
        self.llm, self.slots = llm, asyncio.Semaphore(SLOTS)

    async def _wait(self) -> None:
        async with self.slots:
            await asyncio.sleep(LATENCY_S)

    async def generate(self, requests: list[Any]) -> list[Any]:
        await asyncio.gather(*(self._wait() for _ in requests))
        return await self.llm.generate(requests)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.llm, name)


def endpoint_run(run: tuple[Any, Any, list[Any]], out: Path, samples: list[Any] | None) -> tuple[float, float]:
    """Wall seconds and the driver's own CPU seconds (this process, all its threads) of one run against `Endpoint`; with `samples`, with the job's eval log (emit as samples finish,
    each prediction waiting for its line, finish at the end, as jobs/runner.py does), written by its child process."""
    from emocaustics.core import aio
    from emocaustics.evallog import sink
    from emocaustics.evallog.writer import EvalLog
    from emocaustics.solve.forecast import RecordingLLM, counter_for
    from emocaustics.solve.plan import asolve_samples

    task, options, todo = run
    llm = Endpoint(RecordingLLM(counter_for(None)))
    (out / "pred").mkdir(parents=True, exist_ok=True)
    t0, cpu0 = time.perf_counter(), time.process_time()
    evallog = EvalLog(out / "run", secrets=[SECRET]) if samples is not None else None
    log = evallog.config(LABEL) if evallog is not None else None
    predictions: dict[str, Any] = {}

    class Tee:  # the config's log as the plan sees it; keeps each prediction for `finish` (the job reads them back)
        prompts = True

        def emit(self, sample_id: str, result: dict[str, Any]) -> Any:
            predictions[sample_id] = result.get("prediction")
            return log.emit(sample_id, result)  # type: ignore[union-attr]  # the plan awaits it

    with sink.active(Tee() if log is not None else None):  # the event loop and collector settings of a job's driver
        rows = aio.run(asolve_samples(task, todo, options, llm, out / "pred"))
    if log is not None:
        log.finish(samples, predictions)
        evallog.close()  # type: ignore[union-attr]  # the child ended at finish already: a no-op then
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    assert all(r["ok"] for r in rows)
    return wall, cpu


def write_log(run_dir: Path, rows: list[tuple[str, dict[str, Any]]], samples: list[Any]) -> dict[str, float]:
    from emocaustics.evallog.record import dumps
    from emocaustics.evallog.writer import EvalLog

    t0 = time.perf_counter()
    log = EvalLog(run_dir, secrets=[SECRET])
    cfg = log.config(LABEL)
    for sid, row in rows:  # the work itself, as the child does it (`ConfigLog.emit`'s line), timed here: no child
        cfg._write(sid, {**row, "stats": dumps(row.get("stats") or {}, sort_keys=True)}, time.time())
    t1 = time.perf_counter()
    cfg.finish(samples, {sid: row["prediction"] for sid, row in rows})
    t2 = time.perf_counter()
    return {"emit_s": t1 - t0, "finish_s": t2 - t1, "total_s": t2 - t0}


def size_report(log: Any) -> dict[str, Any]:
    """Bytes on disk of a run's eval log (`RunLog`), and how much prompt text its calls sent against how much is
    stored (the share deduplicated: text many calls share is stored once)."""
    sent = 0
    lengths = {h: len(t) for h, t in log.texts.items()}
    for label in log.labels():
        for msgs in log.calls(label)["messages"].to_list():
            for m in msgs or []:
                sent += sum(lengths.get(h, 0) for h in m["text"])
    stored = sum(lengths.values())
    disk = sum(p.stat().st_size for p in log.root.rglob("*") if p.is_file())
    return {"bytes_on_disk": disk, "prompt_chars_sent": sent, "text_chars_stored": stored,
            "dedup_share": round(1 - stored / sent, 4) if sent else None}


def _startup_wall() -> tuple[float | None, str | None]:
    """startup_bench's whole-dataset window run (against the stand-in endpoint) as latest.json holds it."""
    try:
        res = json.loads((REPO / "benchmarks" / "results" / "latest.json").read_text(encoding="utf-8"))
        got = res["results"]["startup_bench"]
        return got["figures"]["all:sextuple/window"]["wall_s"], got["run"]["when"]
    except (OSError, KeyError, ValueError):
        return None, None


def run(quick: bool = False) -> dict[str, Any]:
    _dataset()
    from benchmarks.evallog_viewer import browser_timings, chromium, server_timings
    from emocaustics.core.task import get_task
    from emocaustics.evallog.read import RunLog
    from emocaustics.tasks.longdialogue.data.subsets import resolve

    dialogues, _ = resolve("all", None)
    if quick:
        dialogues = dialogues[:20]
    task = get_task("sextuple")
    samples = task.load(task.Dataset(subset="all", ids=[d.id for d in dialogues]), task.Options(method="window")).samples
    run_ = prepare(dialogues)
    figures: dict[str, Any] = {"dialogues": len(dialogues)}
    with tempfile.TemporaryDirectory(prefix="evallog-bench-") as tmp:
        root = Path(tmp)
        plain, logged, recording, rows = [], [], [], []
        for rep in range(1 if quick else REPEATS):
            wall, calls = solve(run_, root / f"plain{rep}", None)
            plain.append(wall)
            cap = Capture()
            with Timed() as timed:
                wall, _ = solve(run_, root / f"logged{rep}", cap)
            logged.append(wall)
            recording.append(timed.seconds)
            rows = cap.rows
        recorded = sum(len(r["log"]["calls"]) for _, r in rows)
        assert recorded == calls, f"{recorded} calls recorded of {calls} asked"
        run_dir = root / "run"
        write = write_log(run_dir, rows, samples)
        size = size_report(RunLog(run_dir))
        figures["calls"] = calls
        figures["size"] = {"bytes_on_disk": size["bytes_on_disk"], "mib_on_disk": round(size["bytes_on_disk"] / 2**20, 2),
                           "bytes_per_call": round(size["bytes_on_disk"] / calls, 1),
                           "prompt_chars_sent": size["prompt_chars_sent"], "text_chars_stored": size["text_chars_stored"],
                           "dedup_share": size["dedup_share"]}
        record_s = min(recording)
        cost = record_s + write["total_s"]
        startup_wall, startup_when = _startup_wall()
        figures["writer"] = {
            "emit_s": round(write["emit_s"], 3), "finish_s": round(write["finish_s"], 3),
            "write_s": round(write["total_s"], 3), "write_s_per_1000_calls": round(1000 * write["total_s"] / calls, 4),
            "run_without_log_s": round(min(plain), 3), "run_with_recording_s": round(min(logged), 3),
            "runs_without_log_s": [round(x, 3) for x in plain], "runs_with_recording_s": [round(x, 3) for x in logged],
            "record_s": round(record_s, 3), "record_s_per_1000_calls": round(1000 * record_s / calls, 4),
            "record_and_write_s": round(cost, 3),
            "share_of_in_process_run": round(cost / min(plain), 4),
            "startup_bench_window_wall_s": startup_wall, "startup_bench_when": startup_when,
            "share_of_startup_bench_run": round(cost / startup_wall, 4) if startup_wall else None}
        plain_e, logged_e = [], []
        plain_c, logged_c = [], []  # the driver's CPU seconds: moves far less with the load than wall
        for rep in range(1 if quick else PAIRS):
            for walls, cpus, run_dir_e, with_samples in ((plain_e, plain_c, "plain", None),
                                                         (logged_e, logged_c, "logged", samples)):
                wall, cpu = endpoint_run(run_, root / f"endpoint-{run_dir_e}{rep}", with_samples)
                walls.append(wall)
                cpus.append(cpu)
        shares = [(b - a) / a for a, b in zip(plain_e, logged_e)]
        figures["endpoint_run"] = {
            "latency_s": LATENCY_S, "slots": SLOTS, "without_log_s": [round(x, 3) for x in plain_e],
            "with_log_s": [round(x, 3) for x in logged_e], "pair_shares": [round(x, 4) for x in shares],
            "without_log_median_s": round(statistics.median(plain_e), 3),
            "with_log_median_s": round(statistics.median(logged_e), 3),
            "overhead_s": round(statistics.median(logged_e) - statistics.median(plain_e), 3),
            "share": round(statistics.median(shares), 4),
            "driver_cpu_without_log_s": [round(x, 3) for x in plain_c], "driver_cpu_with_log_s": [round(x, 3) for x in logged_c],
            # the log's cost on the driver (the child's work runs on another core) over the run's wall: what the run
            # would lose if every added CPU second of the driver stood on its critical path
            "driver_cpu_share": round((statistics.median(logged_c) - statistics.median(plain_c))
                                      / statistics.median(plain_e), 4)}
        figures["viewer_server"] = server_timings(run_dir, len(samples))
        binary = chromium()
        figures["viewer_browser"] = browser_timings(run_dir, len(samples), binary) if binary else None
    notes = ["records from the real window state machine against the dry run's stand-in answers and embeddings "
             "(no model): prompt sizes are a run's, answers are of typical size for their schema",
             "viewer timings without score tables (scores.parquet, items.parquet): this benchmark does not score",
             "2 shared CPU cores: timings move with the load average (recorded in run.load_avg_1m)"]
    if figures["viewer_browser"] is None:
        notes.append("no Chromium here (scripts/ensure-chromium.sh failed): browser timings not measured")
    floors: dict[str, Any] = {}
    page = (figures["viewer_browser"] or {}).get("sample_max_s")
    if page is not None:
        floors["sample_page_max_s"] = {"value": page, "ceiling": CEILING_SAMPLE_S, "ok": page <= CEILING_SAMPLE_S}
    share = figures["endpoint_run"]["share"]
    floors["log_share_of_run"] = {"value": share, "ceiling": CEILING_SHARE, "ok": share <= CEILING_SHARE}
    return {"name": "evallog_bench", "figures": figures, "notes": notes, "floors": floors,
            "inputs": {"subset": "all", "quick": quick, "method": "sextuple/window", "repeats": REPEATS, "pairs": PAIRS,
                       "samples_opened": SAMPLES_OPENED}}


def to_markdown(res: dict[str, Any]) -> str:
    f = res["figures"]
    s, w, v, b = f["size"], f["writer"], f["viewer_server"], f["viewer_browser"] or {}
    lines = ["| figure | value |", "| --- | --- |",
             f"| dialogues / calls | {f['dialogues']} / {f['calls']} |",
             f"| log on disk | {s['mib_on_disk']} MiB ({s['bytes_per_call']} bytes per call) |",
             f"| prompt text deduplicated | {s['dedup_share']} ({s['prompt_chars_sent']} chars sent, "
             f"{s['text_chars_stored']} stored) |",
             f"| write (emit + finish) | {w['write_s']} s ({w['write_s_per_1000_calls']} s per 1,000 calls) |",
             f"| recording | {w['record_s']} s ({w['record_s_per_1000_calls']} s per 1,000 calls) |",
             f"| share of the in-process run / of startup_bench's run | {w['share_of_in_process_run']} / "
             f"{w['share_of_startup_bench_run']} |",
             f"| run against the endpoint stand-in without / with the log (share) | "
             f"{f['endpoint_run']['without_log_median_s']} / {f['endpoint_run']['with_log_median_s']} s, medians "
             f"({f['endpoint_run']['share']}) |",
             f"| driver CPU added by the log (its child writer), over the run's wall | "
             f"{f['endpoint_run']['driver_cpu_share']} |",
             f"| server: index / list / first sample / sample median, max | {v['index_s']} / {v['sample_list_s']} / "
             f"{v['first_sample_s']} / {v['sample_median_s']}, {v['sample_max_s']} s |",
             f"| browser: index / list / first sample / sample median, max | {b.get('index_s')} / "
             f"{b.get('sample_list_s')} / {b.get('first_sample_s')} / {b.get('sample_median_s')}, "
             f"{b.get('sample_max_s')} s |"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    quick = "--quick" in (argv if argv is not None else sys.argv[1:])
    res = run(quick=quick)
    print(json.dumps(res, ensure_ascii=False, indent=1))
    print(to_markdown(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
