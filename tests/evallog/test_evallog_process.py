"""The eval log's writer process (`evallog.process`): the files it writes are byte for byte those its handler writes
in the test's own process on the same samples (chunks, staging lines, Parquet tables, texts parts; secrets redacted; prompt logging off);
a child that fails or dies fails the sample waiting for it with an error naming the run folder and the config, never
a hang; and the child is gone once the run's last config is finished, once the run stops with an error, and once a
log is dropped unclosed."""

from __future__ import annotations

import gc
import os
import re
import signal
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from emocaustics.core.task import Failure
from emocaustics.evallog import sink, writer
from emocaustics.evallog.process import EvalLogError
from emocaustics.evallog.record import Recorder
from emocaustics.evallog.writer import EvalLog
from emocaustics.models.base import ChatRequest, Completion, Sampling

SECRET = "sk-test-PROCESS-0f3c9e1d7a2b5c84-never-logged"
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}, "events": {"type": "array"}}}
SYSTEM = "\n\n".join(f"Rule {r}: " + "\n".join(f"the rule's line {r}.{j}" for j in range(6)) for r in range(5))
SAMPLES = 57  # a config of many samples, staged and compacted at its end


def _result(i: int, raw: bool) -> dict:
    """Sample i: calls whose user prompt is the dialogue's history one line longer each time (chunked from the
    last chunk of the call before), the shared system prompt, a schema object, a re-ask; the secret in sample 3's
    prompts; a failure every 7th; `raw`: the log as a replica sends it (already JSON)."""
    rec = Recorder()
    rec._t0 = 0.0
    history = [f"speaker {k % 2}: line {k} of dialogue {i % 9}" + (f" key {SECRET}" if i == 3 and k == 2 else "")
               for k in range(12)]
    for k in range(2 + i % 5):
        user = "Dialogue so far:\n" + "\n".join(history[:k + 4]) + f"\n\nWhat happens in line {k}?"
        req = ChatRequest(messages=({"role": "system", "content": SYSTEM}, {"role": "user", "content": user}),
                          schema=SCHEMA, sampling=Sampling(max_tokens=64 + k))
        rec.add(req, Completion(text=f'{{"answer": "reply {i}.{k}"}}', parsed={"answer": f"reply {i}.{k}"},
                                prompt_tokens=100 + k, generated_tokens=7), float(k), 0.25)
        rec.note(req, step="window" if k else "events", attempt=k % 2, parse_error="bad" if k == 3 else None)
    ok = i % 7 != 0
    return {"ok": ok, "step": None if ok else "window", "reason": None if ok else f"no answer {i}",
            "replica": "actor-1" if raw else None, "stats": {"calls": len(rec.calls), "i": i},
            "log": rec.to_json() if raw else rec.finished()}


def _write(root: Path, process: bool, prompts: bool, raw: bool,
           monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    """Every sample emitted (the staging file read once all are written), then the config finished: the files."""
    monkeypatch.setattr(writer, "time", SimpleNamespace(time=lambda: 1700000000.5, sleep=time.sleep))
    log = EvalLog(root, prompts=prompts, secrets=[SECRET])
    log.attempt = "attempt-1"
    if not process:
        _in_process(log)
    cfg = log.config("cfg")
    futures = [cfg.emit(str(i), _result(i, raw)) for i in range(SAMPLES)]
    for fut in futures:
        if fut is not None:
            fut.result(60)
    files = {"staging": (root / "evallog" / "staging" / "cfg.jsonl").read_bytes()}
    samples = [SimpleNamespace(id=str(i), input={"dialogue": i, "note": SECRET}, target=[i, "gold"])
               for i in range(SAMPLES + 2)]  # two samples never solved: status missing
    predictions = {str(i): Failure("window", f"no answer {i}") if i % 7 == 0 else {"events": [i]}
                   for i in range(SAMPLES)}
    cfg.finish(samples, predictions)
    log.close()
    for path in sorted((root / "evallog").rglob("*")):
        if path.is_file():
            files[str(path.relative_to(root))] = path.read_bytes()
    return files


def _in_process(log: EvalLog) -> None:
    """The reference: the child's handler (`writer._serve_log`) run here, each message through pickle as the pipe
    carries it, on the log's own chunk sets (no child is started: `finish` compacts in this process)."""
    import pickle
    from concurrent.futures import Future

    handle = writer._serve_log({"root": str(log.root.parent), "prompts": log.prompts, "secrets": log.secrets,
                                "attempt": log.attempt, "known": log.known, "written": log._written})

    def send(label: str, message: tuple, what: str, opens: bool = True) -> Future:
        fut: Future = Future()
        fut.set_result(handle(pickle.loads(pickle.dumps(message))))
        return fut

    log._send = send  # type: ignore[method-assign]


@pytest.mark.parametrize("prompts", [True, False])
@pytest.mark.parametrize("raw", [False, True], ids=["in-driver", "from-replica"])
def test_the_process_writes_the_files_its_handler_writes_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               prompts: bool, raw: bool) -> None:
    """Samples recorded in the driver (a finished recorder, chunked by the child) or in a replica (the log as JSON)."""
    here = _write(tmp_path / "here", False, prompts, raw, monkeypatch)
    child = _write(tmp_path / "child", True, prompts, raw, monkeypatch)
    assert sorted(child) == sorted(here)
    # texts: the first 50 samples' chunks (written while the rest were staged; the last 7 bring none: their dialogues
    # and the system prompt were seen), then the samples' inputs and gold; without prompts, the gold only
    parts = ["evallog/texts/part-00000.parquet", "evallog/texts/part-00001.parquet"][:2 if prompts else 1]
    assert sorted(child) == sorted(["staging", "evallog/calls/cfg.parquet", "evallog/attempts/cfg.parquet",
                                    "evallog/samples/cfg.parquet", *parts])
    assert [k for k in child if child[k] != here[k]] == []
    assert child["staging"].count(b"\n") == SAMPLES
    assert all(SECRET.encode() not in blob and SECRET[8:].encode() not in blob for blob in child.values())
    assert (b"the rule's line 4.5" in child["staging"]) is prompts


def _one(i: int = 1) -> dict:
    return _result(i, raw=False)


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_a_child_that_dies_fails_the_waiting_sample_naming_run_and_config(tmp_path: Path) -> None:
    log = EvalLog(tmp_path, secrets=[])
    cfg = log.config("sextuple_window_api")
    cfg.emit("1", _one()).result(60)
    pid = log._child.pid  # type: ignore[union-attr]
    os.kill(pid, signal.SIGKILL)
    t0 = time.monotonic()
    with pytest.raises(EvalLogError) as err:
        cfg.emit("2", _one(2)).result(30)
    assert time.monotonic() - t0 < 30
    assert str(err.value) == (f"eval log of run {tmp_path}: the writer process (pid {pid}) ended with exit code -9, "
                              f"before config sextuple_window_api, sample 2 was written")
    with pytest.raises(EvalLogError, match="config sextuple_window_api, its finish"):
        cfg.finish([SimpleNamespace(id="1", input={}, target=[])], {"1": {"events": []}})
    log.close()
    assert _gone(pid)
    # the line of sample 1 was written before the kill: a resumed run compacts it
    resumed = EvalLog(tmp_path)
    assert not (tmp_path / "evallog" / "staging" / "sextuple_window_api.jsonl").exists()
    assert (tmp_path / "evallog" / "attempts" / "sextuple_window_api.parquet").exists()
    resumed.close()


def test_an_error_in_the_child_names_the_sample_and_the_child_goes_on(tmp_path: Path) -> None:
    log = EvalLog(tmp_path, secrets=[])
    cfg = log.config("cfg")
    bad = {"ok": True, "log": {"calls": [], "texts": ["not a mapping"]}}
    with pytest.raises(EvalLogError) as err:
        cfg.emit("bad", bad).result(60)
    message = str(err.value)
    assert message.startswith(f"eval log of run {tmp_path}: writing config cfg, sample bad failed in the writer "
                              f"process (pid {log._child.pid}):\nTraceback")  # type: ignore[union-attr]
    assert message.rstrip().endswith("AttributeError: 'list' object has no attribute 'items'")
    with pytest.raises(EvalLogError, match="sample bad failed"):  # raised to the next sample too: nobody waits
        cfg.emit("good", _one())  # for a line on the run's path (test_evallog_behind.py), so the run stops there
    cfg.emit("good", _one()).result(60)
    pid = log._child.pid  # type: ignore[union-attr]
    cfg.finish([SimpleNamespace(id="good", input={}, target=[])], {"good": {"events": []}})
    assert log._child is None and _gone(pid)  # the last open config finished: the child ended


def test_no_child_outlives_an_error_or_a_dropped_log(tmp_path: Path) -> None:
    log = EvalLog(tmp_path / "a", secrets=[])
    cfg = log.config("cfg")
    with pytest.raises(ValueError, match="the solver broke"):
        with sink.active(cfg):
            cfg.emit("1", _one()).result(60)
            pid = log._child.pid  # type: ignore[union-attr]
            raise ValueError("the solver broke")
    assert log._child is None and _gone(pid)
    assert (tmp_path / "a" / "evallog" / "staging" / "cfg.jsonl").read_text().count("\n") == 1  # kept for a resume

    dropped = EvalLog(tmp_path / "b", secrets=[])
    dropped.config("cfg").emit("1", _one()).result(60)
    pid = dropped._child.pid  # type: ignore[union-attr]
    del dropped
    gc.collect()
    assert _gone(pid)


def test_a_script_without_a_main_guard_keeps_a_log(tmp_path: Path) -> None:
    """The child is a fresh interpreter, not multiprocessing's spawn (which runs the parent's main script again in the
    child: a script with no `__name__ == "__main__"` guard, as a notebook's, failed there)."""
    import subprocess
    import sys

    script = tmp_path / "script.py"
    script.write_text(
        "import sys\n"
        "from types import SimpleNamespace\n"
        "from emocaustics.evallog.writer import EvalLog\n"
        f"log = EvalLog({str(tmp_path)!r}, secrets=[])\n"
        "cfg = log.config('cfg')\n"
        "cfg.emit('1', {'ok': True, 'log': {'calls': [], 'texts': {}}}).result(60)\n"
        "cfg.finish([SimpleNamespace(id='1', input={'q': 1}, target=['A'])], {'1': {'answer': ['A']}})\n"
        "print('child gone' if log._child is None else 'child left')\n", encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "child gone\n"
    import polars as pl

    assert pl.read_parquet(tmp_path / "evallog" / "attempts" / "cfg.parquet")["sample_id"].to_list() == ["1"]


def test_a_run_whose_writer_dies_stops_with_the_named_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys) -> None:
    """`emocaustics run` (the AER job against the HTTP stand-in): the writer process is killed at the third sample;
    the run stops with the error naming the run folder and config instead of waiting, and leaves no child."""
    from evallog.aer_job import dataset, run_job, server

    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    emit, pids = writer.ConfigLog.emit, []

    def killing_emit(self, sample_id, result):  # type: ignore[no-untyped-def]
        if self.log._child is not None:
            pids.append(self.log._child.pid)
            if len(pids) == 2:
                os.kill(pids[-1], signal.SIGKILL)
        return emit(self, sample_id, result)

    monkeypatch.setattr(writer.ConfigLog, "emit", killing_emit)
    dataset(tmp_path / "data")
    t0 = time.monotonic()
    with server() as srv:
        with pytest.raises(EvalLogError) as err:
            run_job(tmp_path, srv)
    assert time.monotonic() - t0 < 120
    # raised to the next sample handed over, or to the config's finish when the samples were all handed over before
    # the death was seen (nobody waits for a line on the run's path)
    assert re.match(f"eval log of run {re.escape(str(tmp_path / 'run'))}: the writer process \\(pid {pids[1]}\\) "
                    "ended with exit code -9, before config aer_llm_api_context=full, (sample q-|its finish)",
                    str(err.value))
    assert _gone(pids[1])
    capsys.readouterr()
