"""`emocaustics extract ... --json` prints exactly one JSON document on standard output, nothing else, for every
method; progress and logs go to standard error. Each method runs as a new process (as a user runs it) against the
fake OpenAI-compatible chat endpoint and the fake embeddings endpoint (stand-ins for remote APIs), so no engine
starts; the summary carries the run's phase marks (the fixed-cost breakdown the startup benchmark reads)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fakes.openai_chat import FakeOpenAIServer
from fakes.openai_embeddings import FakeEmbeddingsServer

REPO = Path(__file__).resolve().parents[2]
METHODS = [("sextuple", "direct"), ("sextuple", "rag"), ("sextuple", "window"), ("emotion", "direct"),
           ("emotion", "window")]


@pytest.fixture(scope="module")
def endpoints():
    with FakeOpenAIServer() as chat, FakeEmbeddingsServer() as emb:
        yield chat, emb


@pytest.mark.parametrize("task,method", METHODS, ids=[f"{t}-{m}" for t, m in METHODS])
def test_json_output_is_one_document_for_every_method(endpoints, tmp_path: Path, task: str, method: str) -> None:
    chat, emb = endpoints
    cmd = [sys.executable, "-m", "emocaustics", "extract", task, "--method", method, "--subset", "sample",
           "--llm", f"openai:fake-model@{chat.base_url}?concurrency=32",
           "--embedder", f"openai:fake-embed@{emb.base_url}", "--out", str(tmp_path / "out"), "--no-cache", "--json"]
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "EMOCAUSTICS_API_KEY")}
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout)  # the whole of stdout: one document, no log line before or after it
    assert proc.stdout.strip().count("\n") == 0, proc.stdout[:2000]
    assert (summary["task"], summary["method"]) == (task, method)
    assert summary["dialogues"] > 0 and summary["predicted"] == summary["dialogues"], summary["failures"]
    assert summary["llm_calls"] > 0
    marks = summary["timings"]
    assert marks["handler"] <= marks["data_loaded"] <= marks["first_submitted"] <= marks["extract_done"]
    assert "ray_start" not in marks, "an endpoint run must not start Ray"
    assert f"extract {task}/{method}" in proc.stderr  # the project's own progress line, on stderr
    # Provenance: the folder says what it was made for, so `score` needs no --subset and scores the right dialogues.
    rec = json.loads((tmp_path / "out" / "provenance.json").read_text(encoding="utf-8"))
    assert (rec["task"], rec["method"], rec["dataset"]["subset"]) == (task, method, "sample")
    assert len(rec["samples"]) == summary["dialogues"]
