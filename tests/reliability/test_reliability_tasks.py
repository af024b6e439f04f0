"""Reliability of the LLM tasks other than EmoCaustics (`aer`, `ecpe`, `narrative`) against an OpenAI-compatible
stand-in on loopback (tests/fakes/openai_chat.py: a real HTTP server that answers like the API; not a model), without
the engine and without Ray. For each task, on small datasets of our own built from tests/badinput/<task>/_base:

- an endpoint answering 429 (Retry-After), 500, a hang past the client's timeout, a dropped connection and garbage
  for the first requests: the job finishes with tables identical to an undisturbed run's;
- an endpoint answering 500 to everything after a few answers: the job stops (exit 4, endpoint named), the finished
  samples are kept, and `--resume` once it is back gives tables identical to an undisturbed run's;
- the driver SIGKILLed mid-run (a child `emocaustics run`): `--resume` gives identical tables, and the stand-in sees
  no request twice beyond those in flight at the kill (the response cache answers the rest);
- an API key in the environment that the stand-in demands: no file of the run folder or the cache holds it.

"Identical tables": scores.parquet (score, status, reason and every c_<metric> per config and sample), summary.csv
(scores, intervals, failures) and every tables/*.parquet; cost and timing columns (llm_calls, cache_hits, tokens,
seconds) differ by nature between a fresh and a resumed run and are left out.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from fakes.child_run import cleanup, start_cli
from fakes.openai_chat import FakeOpenAIServer, Faults

from emocaustics.cli import main

BASE = Path(__file__).resolve().parents[1] / "badinput"
STORIES = Path(__file__).resolve().parents[2] / "datasets" / "narrative" / "gt"
SECRET = "sk-test-TASKS-91c4e07a2b-do-not-log"
TASKS = ("aer", "ecpe", "narrative")
# cost_usd too: the stand-in is unpriced (cost unknown, None), but a sample the resume answers wholly from the
# response cache made no call and costs 0.0, and how many do depends on where the kill lands.
VOLATILE = ("llm_calls", "cache_hits", "tokens", "generated_tokens", "prompt_tokens", "seconds", "wall_s",
            "startup_s", "note", "cost_usd")


# -- data: the corpus bases, enlarged so that a run has samples before and after a fault ---------------------------
def _aer(root: Path, n: int) -> tuple[dict, dict]:
    shutil.copytree(BASE / "aer" / "_base" / "data", root)
    q = root / "sample_data" / "questions.jsonl"
    rows = [json.loads(x) for x in q.read_text(encoding="utf-8").splitlines()]
    out = []
    for i in range(n):
        rec = dict(rows[i % len(rows)], id=f"q-{i + 1}")
        rec["target_event"] = f"{rec['target_event']} (case {i + 1})"
        out.append(json.dumps(rec))
    q.write_text("\n".join(out) + "\n", encoding="utf-8")
    return {"aer": {"split": "sample", "data": str(root)}}, {"method": "llm", "prompt": "zero-shot",
                                                              "context": "full", "max_context_tokens": 4096}


def _ecpe(root: Path, n: int) -> tuple[dict, dict]:
    root.mkdir(parents=True)
    for st in (1, 2):
        convs = json.loads((BASE / "ecpe" / "_base" / "gold" / f"Subtask_{st}_test.json").read_text(encoding="utf-8"))
        out = []
        for i in range(n):  # every conversation its own text (same content would share its requests)
            conv = json.loads(json.dumps(convs[i % len(convs)]))
            conv["conversation_ID"] = i + 1
            conv["conversation"][0]["text"] += f" ( case {i + 1} )"
            out.append(conv)
        (root / f"Subtask_{st}_test.json").write_text(json.dumps(out), encoding="utf-8")
    return {"ecpe": {"ids": list(range(1, n + 1)), "data": str(root)}}, {"method": "direct", "max_pairs": 4}


def _narrative(root: Path, n: int) -> tuple[dict, dict]:
    """The shipped sample stories (datasets/narrative/gt, ours): each its own text in every window (copies of one story
    would share their windows' requests)."""
    (root / "gt").mkdir(parents=True)
    stories = sorted(STORIES.glob("*.json"))
    assert n <= len(stories), f"{len(stories)} sample stories"
    for path in stories[:n]:
        shutil.copy(path, root / "gt" / path.name)
    return {"narrative": {"data": str(root)}}, {"method": "llm", "window_sentences": 3}


BUILD = {"aer": _aer, "ecpe": _ecpe, "narrative": _narrative}


def _job(task: str, tmp: Path, url: str, n: int, *, cache: Path, concurrency: int = 4, **model: object) -> Path:
    dataset, options = BUILD[task](tmp / "data", n)
    spec = {"name": f"faults-{task}", "dataset": dataset,
            "models": {"api": {"spec": f"openai:fake@{url}", "concurrency": concurrency,
                               "engine": {"timeout": 1, "max_retries": 3}, **model}},
            "runs": [{"task": task, "options": options, "model": "api"}],
            "scoring": {"judge": "none"}, "cache_dir": str(cache), "output": str(tmp / "runs")}
    path = tmp / "job.yaml"
    path.write_text(json.dumps(spec), encoding="utf-8")  # JSON is YAML
    return path


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)


def _tables(run_dir: Path) -> dict[str, pl.DataFrame]:
    def keep(df: pl.DataFrame) -> pl.DataFrame:
        cols = [c for c in df.columns if not any(c == v or c.endswith(v) for v in VOLATILE)]
        return df.select(cols).sort(df.columns[: min(2, len(df.columns))])

    out = {"scores": keep(pl.read_parquet(run_dir / "scores.parquet")),
           "summary": keep(pl.read_csv(run_dir / "summary.csv"))}
    for p in sorted((run_dir / "tables").glob("*.parquet")):
        out[p.stem] = keep(pl.read_parquet(p))
    return out


def _same_tables(a: Path, b: Path) -> None:
    ta, tb = _tables(a), _tables(b)
    assert ta.keys() == tb.keys()
    for name in ta:
        x, y = ta[name], tb[name]
        differing = [c for c in x.columns if c not in y.columns or x.height != y.height or not x[c].equals(y[c])]
        shown = {c: (x[c].to_list()[:10], y[c].to_list()[:10] if c in y.columns else None) for c in differing[:5]}
        assert x.equals(y), f"{name} differs in {differing}: (undisturbed, killed) {shown}"


def _undisturbed(task: str, tmp: Path, n: int, capsys) -> tuple[Path, int, int]:
    """(run folder, exit status, requests made) of the job on a stand-in that answers every request."""
    work = tmp / "undisturbed"
    with FakeOpenAIServer(expected_key=SECRET) as server:
        job = _job(task, work, server.base_url, n, cache=work / "cache")
        rc = main(["run", str(job), "--out", str(work / "run")])
        requests = len(server.seen)
    capsys.readouterr()
    assert rc in (0, 3), f"{task}: the undisturbed run exited {rc}"
    assert requests > 0
    scores = pl.read_parquet(work / "run" / "scores.parquet")
    assert (scores["status"] == "ok").any(), f"{task}: no sample scored in the undisturbed run: a vacuous comparison"
    return work / "run", rc, requests


@pytest.mark.parametrize("task", TASKS)
def test_transient_endpoint_faults_leave_the_tables_unchanged(task, tmp_path, capsys) -> None:
    reference, rc_ref, _ = _undisturbed(task, tmp_path, 4, capsys)
    work = tmp_path / "faulty"
    script = ["429", "500", "drop", "hang", "invalid", "ok", "429", "drop", "500"]
    with FakeOpenAIServer(Faults(hang_seconds=5, retry_after_ms=10), script=script, expected_key=SECRET) as server:
        job = _job(task, work, server.base_url, 4, cache=work / "cache")
        rc = main(["run", str(job), "--out", str(work / "run")])
        seen = server.counts
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert all(seen[b] >= 1 for b in ("429", "500", "drop", "hang", "invalid")), seen
    assert rc == rc_ref, err[-2000:]
    _same_tables(reference, work / "run")


@pytest.mark.parametrize("task", TASKS)
def test_an_endpoint_that_dies_stops_the_job_and_resume_gives_identical_tables(task, tmp_path, capsys) -> None:
    reference, rc_ref, _ = _undisturbed(task, tmp_path, 6, capsys)
    work = tmp_path / "dying"
    with FakeOpenAIServer(Faults(rate_500=1.0, retry_after_ms=10), script=["ok"] * 3, expected_key=SECRET) as server:
        job = _job(task, work, server.base_url, 6, cache=work / "cache", concurrency=1, max_server_errors=2,
                   stall_seconds=5)
        rc = main(["run", str(job), "--out", str(work / "run")])
        err = capsys.readouterr().err
        assert rc == 4, err[-2000:]
        assert f"openai:fake@{server.base_url}" in err and "endpoint down" in err and "--resume" in err
        assert not (work / "run" / "scores.parquet").exists()
        server.faults = Faults()  # the endpoint is back
        rc = main(["run", str(job), "--out", str(work / "run"), "--resume"])
    capsys.readouterr()
    assert rc == rc_ref
    _same_tables(reference, work / "run")


def _requests_by_body(server: FakeOpenAIServer) -> Counter[str]:
    with server._lock:
        return Counter(json.dumps({k: v for k, v in b.items() if k != "seed"}, sort_keys=True) for b in server.bodies)


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_driver_killed_mid_run_then_resume_gives_identical_tables_and_no_repeated_call(task, tmp_path,
                                                                                        capsys) -> None:
    n, concurrency = 7, 2
    reference, rc_ref, _ = _undisturbed(task, tmp_path, n, capsys)
    work = tmp_path / "killed"
    run_dir = work / "run"
    with FakeOpenAIServer(Faults(latency=0.5), expected_key=SECRET) as server:
        job = _job(task, work, server.base_url, n, cache=work / "cache", concurrency=concurrency)
        env = {"OPENAI_API_KEY": SECRET}
        child = start_cli(["run", str(job), "--out", str(run_dir)], logs=work / "logs", env=env)
        try:
            deadline = time.monotonic() + 120
            preds = run_dir / "predictions"
            while time.monotonic() < deadline and child.proc.poll() is None:
                done = [p for p in preds.glob("*/predictions.jsonl") if p.read_text(encoding="utf-8").strip()]
                if done:
                    break
                time.sleep(0.05)
            assert child.proc.poll() is None, f"the run ended before the kill: {child.output()[1][-2000:]}"
            child.kill_driver()
        finally:
            cleanup(child)
        before_resume = _requests_by_body(server)
        with server._lock:
            in_flight_at_kill = server.inflight
        rc = main(["run", str(job), "--out", str(run_dir), "--resume"])
        after = _requests_by_body(server)
    out = capsys.readouterr().out
    assert "resume:" in out and "done (skipped)" in out, out[-2000:]
    assert rc == rc_ref
    _same_tables(reference, run_dir)
    assert after.total() > before_resume.total(), "the kill landed after the last request: nothing was resumed"
    # every request at most once, but those the kill cut off (at most the concurrency, and those still open then)
    repeated = sum(c - 1 for c in after.values() if c > 1)
    assert repeated <= concurrency + in_flight_at_kill, (task, repeated, before_resume.total(), after.total())


@pytest.mark.parametrize("task", TASKS)
def test_the_api_key_reaches_no_file_of_the_run(task, tmp_path, capsys) -> None:
    work = tmp_path / "secret"
    with FakeOpenAIServer(Faults(rate_500=0.2, rate_invalid=0.2, retry_after_ms=10, seed=5),
                          expected_key=SECRET) as server:
        job = _job(task, work, server.base_url, 3, cache=work / "cache")
        rc = main(["run", str(job), "--out", str(work / "run")])
        assert server.auth_headers and all(h == f"Bearer {SECRET}" for h in server.auth_headers)
    captured = capsys.readouterr()
    assert rc in (0, 3), captured.err[-2000:]
    needles = (SECRET.encode(), SECRET.encode("utf-16-le"), SECRET[8:].encode())
    leaks = [str(p) for p in work.rglob("*") if p.is_file() and any(x in p.read_bytes() for x in needles)]
    assert not leaks, leaks
    assert SECRET[8:] not in captured.out + captured.err
    assert os.environ["OPENAI_API_KEY"] == SECRET
