"""The eval log of `emocaustics run` (an AER job on the default plan, against the OpenAI-compatible stand-in over real
HTTP): every call of every sample with its prompt and answer, parse errors and re-asks, gold and prediction; shared
text stored once; `--resume` adds the re-solved samples without duplicating any call; no secret in it; prompt logging
switched off by the job."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import polars as pl
import pytest

from benchmarks.evallog_bench import size_report
from emocaustics.evallog.read import RunLog
from emocaustics.evallog.writer import EvalLog
from evallog.aer_job import DOOMED, N, dataset, document_text, marker, run_job, server
from tasks.aer.aer_fixtures import question

SECRET = "sk-test-EVALLOG-5e1f0c9a7b3d2e84-never-logged"


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")


def _files(root: Path) -> list[Path]:
    return [Path(d) / n for d, _, names in os.walk(root) for n in names]


def test_every_call_is_logged_with_prompt_answer_gold_and_prediction(tmp_path: Path, capsys) -> None:
    dataset(tmp_path / "data")
    with server() as srv:
        rc, run_dir = run_job(tmp_path, srv)
        requests = len(srv.bodies)
    assert rc == 3  # question 5 failed
    log = RunLog(run_dir)
    assert log.labels() == ["aer_oracle", "aer_llm_api_context=full"]
    calls = log.calls("aer_llm_api_context=full")
    # one call per question, and question 5's re-ask (the client's own re-asks of invalid JSON are HTTP requests
    # inside one call: the log is at the model-interface level)
    assert calls.height == N + 1 and requests > calls.height
    for n in range(1, N + 1):
        s = log.sample("aer_llm_api_context=full", f"q-{n}")
        t = 1 + (n - 1) // 4
        assert s["target"] == ["A"] and s["input"]["target_event"] == question(n, t)["target_event"]
        first = s["calls"][0]
        prompt = "".join(m["content"] for m in first["messages"])
        assert marker(n) in prompt and document_text(t, 2) in prompt  # the question and its topic's documents
        assert first["messages"][0]["role"] == "system" and first["schema"]["type"] == "object"
        assert first["sampling"]["max_tokens"] > 0 and first["prompt_tokens"] > 0 and first["latency"] >= 0
        assert first["step"] == "answer" and first["cached"] is False
        if f"q-{n}" == DOOMED:
            assert s["status"] == "failed" and "unreadable answer" in s["reason"]
            assert [c["retry"] for c in s["calls"]] == [0, 1]
            assert all(c["parse_error"] and c["error"].startswith("invalid JSON") for c in s["calls"])
            assert s["prediction"] is None
        else:
            assert s["status"] == "ok" and len(s["calls"]) == 1 and first["parse_error"] is None
            assert json.loads(first["text"]) == first["parsed"] == {"answer": ["A"]}
            assert s["prediction"]["answer"] == ["A"] and s["scores"]["score"] == 1.0
    oracle = log.sample("aer_oracle", "q-3")  # calibration: no calls, gold and prediction all the same
    assert oracle["calls"] == [] and oracle["prediction"]["answer"] == oracle["target"] == ["A"]
    # A topic's documents (in the prompt of each of its 4 questions) are stored once, and the system prompt once.
    texts = list(log.texts.values())
    for t in (1, 2, 3):
        assert sum(document_text(t, 1) in x for x in texts) == 1
    system = log.sample("aer_llm_api_context=full", "q-1")["calls"][0]["messages"][0]["content"]
    assert sum(system in x for x in texts) == 1
    size = size_report(log)
    assert size["text_chars_stored"] < size["prompt_chars_sent"] / 2, size
    assert not list((run_dir / "evallog" / "staging").iterdir())  # compacted into Parquet at the config's end
    capsys.readouterr()


def test_resume_adds_the_resolved_sample_and_duplicates_no_call(tmp_path: Path, capsys) -> None:
    dataset(tmp_path / "data")
    with server() as srv:
        assert run_job(tmp_path, srv)[0] == 3
        srv.routes.clear()  # the endpoint answers question 5 now
        rc, run_dir = run_job(tmp_path, srv, resume=True)
    assert rc == 0
    log = RunLog(run_dir)
    attempts = pl.read_parquet(run_dir / "evallog" / "attempts" / "aer_llm_api_context=full.parquet")
    per_sample = dict(attempts.group_by("sample_id").len().iter_rows())
    assert per_sample == {f"q-{n}": 2 if f"q-{n}" == DOOMED else 1 for n in range(1, N + 1)}
    calls = log.calls("aer_llm_api_context=full")
    assert calls.height == N + 1 + 1  # the first run's 13 calls, and question 5 once more
    assert calls.unique(["sample_id", "attempt", "seq"]).height == calls.height
    again = log.sample("aer_llm_api_context=full", DOOMED)
    assert again["status"] == "ok" and again["attempts"] == 2 and len(again["calls"]) == 1  # the latest attempt
    assert again["prediction"]["answer"] == ["A"]
    assert log.table("aer_llm_api_context=full").height == N
    capsys.readouterr()


def test_a_killed_run_keeps_its_staged_samples(tmp_path: Path) -> None:
    """Samples are staged as they finish; the next run (a resume) compacts what a killed one left, and a sample
    solved again shows its latest attempt."""
    from emocaustics.evallog.record import Recorder
    from emocaustics.models.base import ChatRequest, Completion

    def result(text: str, ok: bool) -> dict:
        rec = Recorder()
        shared = "the same long system prompt\n" * 20
        rec.add(ChatRequest(messages=({"role": "system", "content": shared}, {"role": "user", "content": text})),
                Completion(text="{}", parsed={}), 0.0, 0.1)
        return {"ok": ok, "step": None if ok else "answer", "reason": None if ok else "bad", "log": rec.to_json()}

    first = EvalLog(tmp_path)
    cfg = first.config("cfg")
    cfg.emit("a", result("question a", True)).result(60)  # written once the writer process says so
    cfg.emit("b", result("question b", False)).result(60)
    assert (tmp_path / "evallog" / "staging" / "cfg.jsonl").exists()
    assert RunLog(tmp_path).sample("cfg", "b")["status"] == "failed"  # readable while staged
    os.kill(first._child.pid, signal.SIGKILL)  # type: ignore[union-attr]  # the run is killed (its writer too)
    second = EvalLog(tmp_path)  # the resumed run: what was staged is compacted first
    assert not (tmp_path / "evallog" / "staging" / "cfg.jsonl").exists()
    second.config("cfg").emit("b", result("question b", True)).result(60)
    second.close()
    log = RunLog(tmp_path)
    assert log.sample("cfg", "a")["calls"][0]["messages"][1]["content"] == "question a"
    b = log.sample("cfg", "b")
    assert b["status"] == "ok" and b["attempts"] == 2 and len(b["calls"]) == 1
    assert sum("the same long system prompt" in t for t in log.texts.values()) == 1  # across samples and runs


def test_no_secret_reaches_the_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """The key is in the environment and travels in the endpoint's Authorization header (the stand-in refuses any
    other); it is also planted in a question's text, so it is in prompts: the log holds it nowhere, the viewer's
    export neither."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    dataset(tmp_path / "data", plant=SECRET)
    with server(expected_key=SECRET) as srv:
        rc, run_dir = run_job(tmp_path, srv)
        assert srv.counts["ok"] > 0  # requests were authorised: the key was sent
    assert rc == 3
    from emocaustics.cli import main

    assert main(["view", str(run_dir), "--export", str(tmp_path / "export")]) == 0
    files = _files(run_dir / "evallog") + _files(tmp_path / "export")
    leaks = [str(p) for p in files if SECRET.encode() in p.read_bytes() or SECRET[8:].encode() in p.read_bytes()]
    assert leaks == []
    s = RunLog(run_dir).sample("aer_llm_api_context=full", "q-7")
    prompt = "".join(m["content"] for m in s["calls"][0]["messages"])
    assert "A bridge was painted by [redacted]." in prompt and s["input"]["options"]["D"].endswith("[redacted].")
    capsys.readouterr()


def test_prompt_logging_switched_off(tmp_path: Path, capsys) -> None:
    dataset(tmp_path / "data")
    with server() as srv:
        rc, run_dir = run_job(tmp_path, srv, log="log: {prompts: false}")
    assert rc == 3
    log = RunLog(run_dir)
    calls = log.calls("aer_llm_api_context=full")
    assert calls.height == N + 1 and calls["prompt_tokens"].min() > 0  # counts and timings are kept
    assert calls["messages"].null_count() == calls["text"].null_count() == calls.height
    s = log.sample("aer_llm_api_context=full", "q-2")
    assert s["prompts"] is False and s["calls"][0]["messages"] == [] and s["calls"][0]["text"] is None
    blob = b"".join(p.read_bytes() for p in _files(run_dir / "evallog"))
    assert b"word1x1n" not in blob and marker(2).encode() not in blob  # no document, no question text
    capsys.readouterr()
