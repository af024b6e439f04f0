"""Issue 55 item 3: nothing on the driver's path waits for the eval log's writer process (a child that may fall behind).

The experiment that decides the stall: the child is stopped (SIGSTOP, as a starved low-priority process is) while a
config's samples are solved; every prediction is written at the model's pace all the same, and once the child runs
again the config's finish has every sample's line in the eval log. Before the fix each prediction awaited its line,
so the plan stood still for as long as the child did."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import polars as pl
import pytest

from emocaustics.core import aio
from emocaustics.core.task import Options, Sample, Task
from emocaustics.evallog import sink
from emocaustics.evallog.process import EvalLogError
from emocaustics.evallog.writer import EvalLog
from emocaustics.models.base import Completion, ModelBase
from emocaustics.solve.plan import asolve_samples

N = 40


class Echo(ModelBase):
    name = cache_id = "echo-double"

    async def generate(self, requests: list[Any]) -> list[Completion]:
        return [Completion(text="ok", prompt_tokens=1, generated_tokens=1) for _ in requests]


class Plain(Task):
    name = "plain-answer"

    async def solve(self, llm: Any, sample: Sample, options: Options) -> Any:
        return {"answer": sample.input}


def _finished() -> dict[str, Any]:
    return {"ok": True, "log": {"calls": [], "texts": {}}, "stats": {}}


def test_predictions_are_written_while_the_log_s_child_is_stopped(tmp_path: Path) -> None:
    log = EvalLog(tmp_path / "run", secrets=[])
    cfg = log.config("cfg")
    cfg.emit("warm-up", _finished()).result(60)  # the child started (it starts at a log's first sample)
    pid = log._child.pid  # type: ignore[union-attr]
    samples = [Sample(f"s{i}", f"question {i}") for i in range(N)]
    out = tmp_path / "preds"
    out.mkdir()
    with sink.active(cfg):  # each prediction waited for its line from the stopped child: none was written
        os.kill(pid, signal.SIGSTOP)
        try:
            aio.run(asyncio.wait_for(asolve_samples(Plain(), samples, Options(method="plain"), Echo(), out), 5))
        except TimeoutError:
            pass
        finally:
            os.kill(pid, signal.SIGCONT)
        stats = out / "stats.jsonl"
        written = [line for line in stats.read_text().splitlines() if line] if stats.exists() else []
        assert len(written) == N  # every prediction's row, written while the child could not answer
    cfg.finish([SimpleNamespace(id=s.id, input=s.input, target=None) for s in samples], {})
    assert log._child is None  # the run's last config finished: the child caught up and ended
    logged = pl.read_parquet(tmp_path / "run" / "evallog" / "attempts" / "cfg.parquet")["sample_id"].to_list()
    assert sorted(logged) == sorted(["warm-up", *(s.id for s in samples)])  # every record landed


def test_a_failure_of_the_child_stops_the_run_at_the_next_sample(tmp_path: Path) -> None:
    """Nobody waits for a line, so a line the child could not write is raised to the next sample handed over (and
    to the config's finish): the run still stops on it, naming the sample, the config and the run."""
    log = EvalLog(tmp_path, secrets=[])
    cfg = log.config("cfg")
    bad = cfg.emit("bad", {"ok": True, "log": {"calls": [], "texts": ["not a mapping"]}})
    with pytest.raises(EvalLogError, match="config cfg, sample bad failed"):
        bad.result(60)
    with pytest.raises(EvalLogError, match=f"^eval log of run {tmp_path}: writing config cfg, sample bad failed"):
        cfg.emit("next", _finished())
    log.close()


def test_only_a_child_far_behind_holds_the_sender(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The memory bound: with the child stopped, `BEHIND` lines are handed over at once; the next waits for the
    oldest answer, which comes once the child runs again."""
    import threading

    from emocaustics.evallog import process

    monkeypatch.setattr(process, "BEHIND", 3)
    log = EvalLog(tmp_path, secrets=[])
    cfg = log.config("cfg")
    cfg.emit("0", _finished()).result(60)
    pid = log._child.pid  # type: ignore[union-attr]
    os.kill(pid, signal.SIGSTOP)
    try:
        for i in (1, 2, 3):
            cfg.emit(str(i), _finished())  # handed over, the child stopped
        held = threading.Thread(target=cfg.emit, args=("4", _finished()))
        held.start()
        held.join(0.3)
        assert held.is_alive()
    finally:
        os.kill(pid, signal.SIGCONT)
    held.join(60)
    assert not held.is_alive()
    cfg.finish([SimpleNamespace(id=str(i), input=None, target=None) for i in range(5)], {})
    logged = pl.read_parquet(tmp_path / "evallog" / "attempts" / "cfg.parquet")["sample_id"].to_list()
    assert sorted(logged) == ["0", "1", "2", "3", "4"]
