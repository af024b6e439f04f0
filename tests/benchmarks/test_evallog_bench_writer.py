"""benchmarks/evallog_bench.py's writer figure times the eval log's own work in the benchmark's process
(`write_log`: each sample's line as the log's child writes it, then the config's finish): the files it leaves are
byte for byte those a job's log leaves, written by its child process, on the same rows. So the figure is the work
a run's child does, and the benchmark keeps running on the one writer there is."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmarks import evallog_bench
from emocaustics.evallog import writer
from emocaustics.evallog.record import Recorder
from emocaustics.evallog.writer import EvalLog
from emocaustics.models.base import ChatRequest, Completion, Sampling

NOW = 1700000000.5
SAMPLES = 12


def _rows() -> list[tuple[str, dict]]:
    """Rows as the benchmark's sink keeps them (`Capture`: the log already plain JSON), with a shared system prompt,
    the benchmark's secret in one prompt and a failure every 5th sample."""
    rows = []
    for i in range(SAMPLES):
        rec = Recorder()
        rec._t0 = 0.0
        for k in range(1 + i % 3):
            user = f"dialogue {i}, line {k}" + (f" key {evallog_bench.SECRET}" if i == 2 else "")
            req = ChatRequest(messages=({"role": "system", "content": "the rules\n" * 30},
                                        {"role": "user", "content": user}), sampling=Sampling(max_tokens=32))
            rec.add(req, Completion(text=f"answer {i}.{k}", prompt_tokens=50, generated_tokens=3), float(k), 0.1)
        ok = i % 5 != 0
        rows.append((str(i), {"ok": ok, "step": None if ok else "window", "reason": None if ok else "no answer",
                              "replica": None, "stats": {"calls": len(rec.calls)}, "log": rec.to_json(),
                              "prediction": {"events": [i]} if ok else None}))
    return rows


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted((root / "evallog").rglob("*")) if p.is_file()}


def test_write_log_leaves_the_files_the_child_writer_leaves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = SimpleNamespace(time=lambda: NOW, perf_counter=time.perf_counter, sleep=time.sleep)
    monkeypatch.setattr(writer, "time", clock)  # the attempt id and each line's finish time
    monkeypatch.setattr(evallog_bench, "time", clock)
    rows = _rows()
    samples = [SimpleNamespace(id=sid, input={"dialogue": sid}, target=["gold", sid]) for sid, _ in rows]

    took = evallog_bench.write_log(tmp_path / "bench", rows, samples)
    assert set(took) == {"emit_s", "finish_s", "total_s"} and took["total_s"] >= took["emit_s"] >= 0

    log = EvalLog(tmp_path / "child", secrets=[evallog_bench.SECRET])  # a job's log: lines written by its child
    cfg = log.config(evallog_bench.LABEL)
    for fut in [cfg.emit(sid, row) for sid, row in rows]:
        fut.result(60)
    assert log._child is not None
    cfg.finish(samples, {sid: row["prediction"] for sid, row in rows})
    log.close()

    bench, child = _files(tmp_path / "bench"), _files(tmp_path / "child")
    assert sorted(bench) == sorted(child) and f"evallog/calls/{evallog_bench.LABEL}.parquet" in bench
    assert [k for k in bench if bench[k] != child[k]] == []
    assert all(evallog_bench.SECRET.encode() not in blob for blob in bench.values())
