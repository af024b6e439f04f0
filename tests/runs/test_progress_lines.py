"""A job's output: one progress line per config (never a second stream of the same work), that counts failed samples
as failed, and a resume hint that is the real command with the real job file and run folder.

Models are stand-ins for remote OpenAI-compatible APIs (tests/fakes): no Ray, no engine."""

from __future__ import annotations

import re
from typing import Any

import pytest
from count_task import CountTask, write_job
from fakes.openai_chat import FakeOpenAIServer, Faults
from fakes.openai_embeddings import FakeEmbeddingsServer

from emocaustics.cli import main
from emocaustics.core.task import Sample, SolveFailed, register, unregister
from emocaustics.jobs.runner import resume_command


class OddFails(CountTask):
    """`count`, except that the solver gives up on every odd number (a failure row, as a bad answer would)."""

    name = "count_odd"

    async def solve(self, llm: Any, sample: Sample, options: Any) -> Any:
        if sample.input["number"] % 2:
            raise SolveFailed("answer", f"{sample.input['number']} is odd; no answer")
        return await super().solve(llm, sample, options)


@pytest.fixture
def odd_task():
    task = register(OddFails())
    yield task
    unregister(task.name)


JOB = """
name: progress
dataset: {{n: {n}}}
models:
  remote: {{spec: "openai:fake@{url}", max_connection_failures: {mcf}, engine: {{max_retries: 0, timeout: 5}}}}
runs:
  - {{task: {task}, method: ask, model: remote}}
scoring: {{embedder: minilm}}
"""


def _solve_lines(out: str, label: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(f"[solve {label}]")]


def test_the_progress_line_counts_failures(odd_task, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))
    with FakeOpenAIServer() as server:
        job = write_job(tmp_path / "job.yaml", JOB.format(n=6, url=server.base_url, mcf=5, task="count_odd"))
        run_dir = tmp_path / "run"
        assert main(["run", str(job), "--out", str(run_dir)]) == 3  # 3 of 6 failed
        lines = _solve_lines(capsys.readouterr().out, "count_odd_ask_remote")
        assert lines and lines[-1].startswith("[solve count_odd_ask_remote] 6/6, 3 failed"), lines
        # A resume tries the 3 failed samples again; they fail again, and the line says so.
        assert main(["run", str(job), "--out", str(run_dir), "--resume"]) == 3
        lines = _solve_lines(capsys.readouterr().out, "count_odd_ask_remote")
        assert lines and lines[-1].startswith("[solve count_odd_ask_remote] 6/6, 3 failed"), lines


def test_the_resume_hint_is_the_real_command(count_task, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("EMOCAUSTICS_SUBMITTED", raising=False)
    with FakeOpenAIServer(Faults(rate_drop=1.0), script=["ok"] * 2) as server:
        job = write_job(tmp_path / "my job.yaml", JOB.format(n=8, url=server.base_url, mcf=2, task="count"))
        run_dir = tmp_path / "run"
        assert main(["run", str(job), "--out", str(run_dir)]) == 4
        err = capsys.readouterr().err
    assert "run JOB" not in err
    assert f"emocaustics run '{job}' --resume --out {run_dir}" in err, err


def test_a_submitted_job_is_resumed_by_submitting_it_again(tmp_path, monkeypatch):
    """In a job sent by jobs/submit.sh the job file lives in Ray's copy of the project: the hint sends it again."""
    monkeypatch.setenv("EMOCAUSTICS_SUBMITTED", "1")  # what submit.sh puts in the job's runtime env
    assert (resume_command("jobs/aer-quickstart.yaml", tmp_path / "run")
            == f"jobs/submit.sh jobs/aer-quickstart.yaml -- --resume --out {tmp_path / 'run'}")


def test_an_emocaustics_job_prints_one_progress_stream(tmp_path, capfd, monkeypatch):
    """Extraction inside a job reports through the job's `[solve …]` line only (it once also printed its own
    `[extract …]` line on standard error: every dialogue counted twice, on two streams)."""
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))
    with FakeOpenAIServer() as chat, FakeEmbeddingsServer() as emb:
        job = write_job(tmp_path / "job.yaml", f"""
name: one-stream
dataset: {{subset: sample, ids: [1, 2]}}
models:
  remote: {{spec: "openai:fake@{chat.base_url}"}}
runs:
  - {{task: sextuple, method: direct, model: remote}}
scoring: {{embedder: "openai:fake-embed@{emb.base_url}", judge: none}}
""")
        main(["run", str(job), "--out", str(tmp_path / "run"), "--allow-failures"])
    out, err = capfd.readouterr()
    assert not re.search(r"^\[extract ", out + err, re.M), err[-3000:]
    lines = _solve_lines(out, "sextuple_direct_remote")
    assert lines and re.match(r"\[solve sextuple_direct_remote\] 2/2", lines[-1]), (out + err)[-3000:]

