"""A dead endpoint stops the job: the stand-in answers 10 requests, then drops every connection
(tests/fakes/openai_chat: a stand-in for a remote OpenAI-compatible API). The 50-sample job stops within 30 s with exit status 4 and the
endpoint named, the 10 finished samples are kept, and `--resume` continues once the endpoint is back. A dead
endpoint at the start is caught by the pre-flight check: one line, nothing written."""

from __future__ import annotations

import json
import threading
import time

from count_task import write_job
from fakes.openai_chat import FakeOpenAIServer, Faults

from emocaustics.cli import main
from emocaustics.core.task import Failure

JOB = """
name: dead-endpoint
dataset: {{n: 50}}
models:
  remote:
    spec: openai:fake@{url}
    concurrency: 4
    max_connection_failures: 3
    engine: {{max_retries: 1, timeout: 5}}
runs:
  - {{task: count, method: ask, model: remote}}
scoring: {{embedder: minilm}}
"""


def _predicted(run_dir) -> set[str]:
    path = run_dir / "predictions" / "count_ask_remote" / "predictions.jsonl"
    return {json.loads(line)["id"] for line in path.read_text().splitlines() if line.strip()}


def test_a_dead_endpoint_stops_the_job_and_resume_continues(count_task, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))
    with FakeOpenAIServer(Faults(rate_drop=1.0, latency=0.02), script=["ok"] * 10) as server:
        job = write_job(tmp_path / "job.yaml", JOB.format(url=server.base_url))
        run_dir = tmp_path / "run"
        t0 = time.monotonic()
        assert main(["run", str(job), "--out", str(run_dir)]) == 4
        elapsed = time.monotonic() - t0
        err = capsys.readouterr().err
        assert elapsed < 30, elapsed
        assert f"openai:fake@{server.base_url}" in err and "endpoint down" in err and "--resume" in err
        assert len(_predicted(run_dir)) == 10  # the finished samples are kept
        # a typed stop: the other 40 are simply not done (no failure row with a made-up reason), and the stop is
        # named once
        found = count_task.store.read_predictions(run_dir / "predictions" / "count_ask_remote")
        assert not [v for v in found.values() if isinstance(v, Failure)], found
        assert len([line for line in err.splitlines() if "endpoint down" in line]) == 1, err
        drops = server.counts["drop"]
        # Without the breaker every one of the 40 other samples would pay its own retries (2 requests each).
        assert drops < 40, drops
        assert not (run_dir / "scores.parquet").exists()
        stopped = json.loads((run_dir / "run.json").read_text())
        assert stopped["state"] == "running"
        # the stopped attempt's time is kept for the resume's sum, and its clock does not outlive the job (left
        # running, it went on rewriting run.json with this attempt's record)
        assert len(stopped["wall_parts"]["count_ask_remote"]) == 1 and stopped["wall_parts"]["count_ask_remote"][0] > 0
        assert not [t.name for t in threading.enumerate() if t.name.startswith("wallclock")]

        server.faults = Faults()  # the endpoint is back
        server.script = []
        assert main(["run", str(job), "--out", str(run_dir), "--resume"]) == 0
        out = capsys.readouterr().out
        assert "resume: count_ask_remote: 10 of 50 samples done (skipped); 40 to run" in out
        assert len(_predicted(run_dir)) == 50
        resumed = json.loads((run_dir / "run.json").read_text())
        # the stopped attempt's part is kept, and the resume adds its own (its solving and its scoring)
        parts = resumed["wall_parts"]["count_ask_remote"]
        assert resumed["state"] == "finished" and parts[0] == stopped["wall_parts"]["count_ask_remote"][0], parts
        assert len(parts) > 1, parts


def test_preflight_names_a_dead_endpoint_and_writes_nothing(count_task, tmp_path, capsys):
    job = write_job(tmp_path / "job.yaml", JOB.format(url="http://127.0.0.1:9/v1"))
    out = tmp_path / "run"
    t0 = time.monotonic()
    assert main(["run", str(job), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "models.remote: endpoint openai:fake@http://127.0.0.1:9/v1: cannot connect" in err[0]
    assert time.monotonic() - t0 < 30 and not out.exists()


# An endpoint that misbehaves without refusing connections: a server that accepts every request and never answers, and
# one that answers HTTP 500 to everything. Each is declared dead (exit 4, endpoint named, finished samples kept)
# within a bound set by the job's own deadlines, and `--resume` continues once it is back.
MISBEHAVING_JOB = """
name: misbehaving-endpoint
dataset: {{n: 30}}
models:
  remote:
    spec: openai:fake@{url}
    concurrency: 4
    stall_seconds: 2
    max_server_errors: 3
    engine: {{max_retries: 1, timeout: {timeout}}}
runs:
  - {{task: count, method: ask, model: remote}}
scoring: {{embedder: minilm}}
"""


def _run_until_dead(job, run_dir, capsys) -> tuple[float, str, str]:
    t0 = time.monotonic()
    assert main(["run", str(job), "--out", str(run_dir)]) == 4
    elapsed = time.monotonic() - t0
    captured = capsys.readouterr()
    return elapsed, captured.out, captured.err


def test_a_hanging_endpoint_is_declared_dead_after_its_stall_deadline(count_task, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))
    # The client's own timeout (60 s, as by default) is far beyond the test's bound: only the stall deadline can end it.
    with FakeOpenAIServer(Faults(rate_hang=1.0, hang_seconds=120), script=["ok"] * 6) as server:
        job = write_job(tmp_path / "job.yaml", MISBEHAVING_JOB.format(url=server.base_url, timeout=60))
        run_dir = tmp_path / "run"
        elapsed, out, err = _run_until_dead(job, run_dir, capsys)
        assert elapsed < 30, elapsed
        assert f"openai:fake@{server.base_url}" in err and "endpoint down" in err and "no answer" in err, err
        # while it waited, progress said on what and for how long
        assert f"waiting on openai:fake@{server.base_url}: " in out and " requests in flight, no answer for " in out
        assert len(_predicted(run_dir)) == 6  # the finished samples are kept
        assert server.counts["hang"] <= 8, server.counts  # the 4 in flight (and their one retry), nothing after

        server.faults = Faults()  # the endpoint is back
        assert main(["run", str(job), "--out", str(run_dir), "--resume"]) == 0
        assert len(_predicted(run_dir)) == 30


def test_an_endpoint_answering_500_to_everything_is_declared_dead(count_task, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))
    with FakeOpenAIServer(Faults(rate_500=1.0), script=["ok"] * 6) as server:
        job = write_job(tmp_path / "job.yaml", MISBEHAVING_JOB.format(url=server.base_url, timeout=5))
        run_dir = tmp_path / "run"
        elapsed, _, err = _run_until_dead(job, run_dir, capsys)
        assert elapsed < 30, elapsed
        assert f"openai:fake@{server.base_url}" in err and "endpoint down" in err and "HTTP 500" in err, err
        assert len(_predicted(run_dir)) == 6
        # Without the limit every one of the 24 other samples pays 3 asks x 2 tries (144 requests) and the job ends
        # with exit 3; with it the job stops after the few requests in flight when the 3rd one failed.
        assert server.counts["500"] <= 24, server.counts

        server.faults = Faults()
        assert main(["run", str(job), "--out", str(run_dir), "--resume"]) == 0
        assert len(_predicted(run_dir)) == 30
