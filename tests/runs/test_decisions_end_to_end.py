"""The run's decisions driven end to end, where a unit test of one part cannot see them (issue 44): `emocaustics run`
on the `count` task (tests/runs/count_task.py) in process, in seconds, no Ray.

Stand-ins:
- `FakeOpenAIServer` (tests/fakes/openai_chat.py) stands in for a remote OpenAI-compatible API: it answers, hangs
  (`rate_hang`: an endpoint that accepts requests and never answers) or drops connections, after a `script` of first
  answers; it records every request, so a test knows which samples were asked and how often. Its usage figures are
  the characters of the prompt and of the answer.
- `EMOCAUSTICS_RESPONSE_CACHE` pointed at one folder or another stands in for a user's shared response cache: the
  same one across runs, or a fresh one (a run that must ask the endpoint again).
- Deleting a sample's lines from a run folder (predictions.jsonl, stats.jsonl, its eval-log rows) stands in for a
  sample whose rows were lost or never written; a dead endpoint's stop leaves samples with no row at all, as it does.

Decisions:
- a sample with no row is a failure ("no prediction was written"), never a silent gap or a success, in `emocaustics
  score`; `--resume` solves exactly the samples without a row, asks the endpoint for them alone, and ends with the
  tables of an uninterrupted run, whose counts the viewer shows (run state, resume: a finished run's lost sample, and
  a stopped run's); the viewer of a stopped run counts the samples the stop left without a row as `missing` (it
  counted only those with an eval-log line: found here, fixed in evallog/read.py);
- cached answers never count against `max_cost_usd` and cost 0 in the summary, while live ones in the same run are
  charged (cost, budget);
- a resume that meets the stall again stops again (exit 4 within the stall deadline, the endpoint and the resume
  command named), and a third run finishes with every sample once in predictions, stats and the eval log, no
  finished sample asked again, and the tables of an uninterrupted run, with which `compare` pairs it on every sample
  (breaker, resume, eval log, cross-run compare);
- the dry run's forecast of calls and generated tokens is what the endpoint then receives, and a dry run of a resume
  forecasts only the samples the resume solves (forecast).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import polars as pl
import pytest
from count_task import write_job
from fakes.openai_chat import FakeOpenAIServer, Faults

from emocaustics.cli import main
from emocaustics.evallog.read import NOT_SOLVED, RunLog
from emocaustics.view.data import ViewData

LABEL = "count_ask_remote"
JOB = """
name: decisions
dataset: {{n: {n}}}
models:
  remote:
    spec: openai:fake@{url}
    concurrency: {concurrency}
    stall_seconds: 1
    max_connection_failures: 1
    engine: {{max_retries: 0, timeout: 300}}
    price: {{input: 10000, output: 10000}}
{budget}
runs:
  - {{task: count, method: ask, model: remote}}
  - {{task: count, method: right}}
scoring: {{embedder: minilm}}
"""
TOKEN_USD = 10000 / 1e6  # the job's price: a cent a token, in and out
NOT_WRITTEN = "solve: no prediction was written for this sample"


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))


def _job(tmp_path: Path, url: str, *, n: int = 6, concurrency: int = 1, budget: float | None = None,
         name: str = "job.yaml") -> Path:
    return write_job(tmp_path / name, JOB.format(url=url, n=n, concurrency=concurrency,
                                                 budget="" if budget is None else f"max_cost_usd: {budget}"))


def _run(monkeypatch, job: Path, out: Path, cache: Path, *flags: str) -> int:
    """`emocaustics run` with `cache` as the shared response cache."""
    monkeypatch.setenv("EMOCAUSTICS_RESPONSE_CACHE", str(cache))
    return main(["run", str(job), "--out", str(out), *flags])


def _asked(server: FakeOpenAIServer, since: int = 0) -> list[str]:
    """The sample of each request the stand-in received (its prompt is 'Is N even?' for sample sN), in order."""
    found = (re.search(r"Is (\d+) even", b["messages"][-1]["content"]) for b in server.bodies[since:])
    return [f"s{m.group(1)}" for m in found]


def _ids(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text().splitlines() if line.strip()]


def _tables(run_dir: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """scores.parquet and summary.csv without the wall-clock columns, in a fixed order."""
    scores = pl.read_parquet(run_dir / "scores.parquet").drop("seconds").sort("run", "sample_id")
    return scores, pl.read_csv(run_dir / "summary.csv").drop("wall_s").sort("run")


def _uninterrupted(tmp_path: Path, monkeypatch, n: int, concurrency: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The tables of the same job run once on a healthy endpoint (its own stand-in and cache)."""
    with FakeOpenAIServer() as healthy:
        job = _job(tmp_path, healthy.base_url, n=n, concurrency=concurrency, name="reference.yaml")
        assert _run(monkeypatch, job, tmp_path / "reference", tmp_path / "reference-cache") == 0
        assert sorted(_asked(healthy)) == sorted(f"s{i}" for i in range(n))
    return _tables(tmp_path / "reference")


def _drop_sample(run_dir: Path, sid: str) -> None:
    """Every per-sample row of `sid` in a finished run folder's config: predictions, stats, the eval log."""
    pred = run_dir / "predictions" / LABEL
    for name in ("predictions.jsonl", "stats.jsonl"):
        lines = (pred / name).read_text().splitlines(keepends=True)
        (pred / name).write_text("".join(line for line in lines if json.loads(line)["id"] != sid))
    for sub in ("attempts", "calls", "samples"):
        path = run_dir / "evallog" / sub / f"{LABEL}.parquet"
        pl.read_parquet(path).filter(pl.col("sample_id") != sid).write_parquet(path)


def _viewer_counts(run_dir: Path) -> dict[str, tuple[int, int]]:
    return {c["label"]: (c["samples"], c["failed"]) for c in ViewData(RunLog(run_dir)).index()["configs"]}


def _score_json(run_dir: Path, capsys) -> dict:
    assert main(["score", "count", "--pred", str(run_dir / "predictions" / LABEL), "--json",
                 "--allow-failures"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_sample_with_no_row_is_a_failure_and_resume_solves_it_alone(count_task, tmp_path, capsys, monkeypatch):
    reference = _uninterrupted(tmp_path, monkeypatch, n=6, concurrency=1)
    with FakeOpenAIServer() as server:
        job = _job(tmp_path, server.base_url)
        run_dir = tmp_path / "run"
        assert _run(monkeypatch, job, run_dir, tmp_path / "cache-1") == 0
        _drop_sample(run_dir, "s1")
        capsys.readouterr()
        # `score`: counted among the samples, as a failure naming why; never dropped, never a success
        assert main(["score", "count", "--pred", str(run_dir / "predictions" / LABEL)]) == 3
        capsys.readouterr()
        got = _score_json(run_dir, capsys)
        assert got["samples"] == 6 and got["failed"] == 1
        assert got["failures"] == [{"id": "s1", "reason": NOT_WRITTEN}]

        # the resume solves that sample alone and asks the endpoint for it alone (a fresh response cache: the
        # first run's would answer it for free)
        before = len(server.bodies)
        assert _run(monkeypatch, job, run_dir, tmp_path / "cache-2", "--resume") == 0
        assert "resume: count_ask_remote: 5 of 6 samples done (skipped); 1 to run\n" in capsys.readouterr().out
        assert _asked(server, before) == ["s1"]
    ids = _ids(run_dir / "predictions" / LABEL / "predictions.jsonl")
    assert sorted(ids) == [f"s{i}" for i in range(6)] and ids[-1] == "s1"  # added; nothing else written again
    scores, summary = _tables(run_dir)
    assert scores.equals(reference[0]), (scores, reference[0])
    assert summary.equals(reference[1]), (summary, reference[1])
    # the viewer's counts are the tables'
    assert _viewer_counts(run_dir) == {r["run"]: (r["samples"], r["failures"]) for r in summary.to_dicts()}
    assert RunLog(run_dir).all_attempts(LABEL)["sample_id"].sort().to_list() == [f"s{i}" for i in range(6)]


def _stopped_run(tmp_path: Path, monkeypatch, server: FakeOpenAIServer, lose: str | None) -> tuple[Path, Path]:
    """A run the dead endpoint stopped after 4 answers (s4 and s5: no row), and sample `lose`'s rows lost as well."""
    job = _job(tmp_path, server.base_url)
    run_dir = tmp_path / "run"
    assert _run(monkeypatch, job, run_dir, tmp_path / "cache-1") == 4
    pred = run_dir / "predictions" / LABEL
    staged = run_dir / "evallog" / "staging" / f"{LABEL}.jsonl"  # a stopped run's eval log: its staged lines
    for path, key in ((pred / "predictions.jsonl", "id"), (pred / "stats.jsonl", "id"), (staged, "sample_id")):
        lines = path.read_text().splitlines(keepends=True)
        assert len(lines) == 4
        path.write_text("".join(line for line in lines if json.loads(line)[key] != lose))
    return job, run_dir


def test_samples_a_stop_left_without_a_row_are_failures_in_score_and_resume_runs_them(count_task, tmp_path, capsys,
                                                                                     monkeypatch):
    reference = _uninterrupted(tmp_path, monkeypatch, n=6, concurrency=1)
    with FakeOpenAIServer(Faults(rate_drop=1.0), script=["ok"] * 4) as server:
        job, run_dir = _stopped_run(tmp_path, monkeypatch, server, "s1")
        assert not (run_dir / "scores.parquet").exists()
        capsys.readouterr()
        got = _score_json(run_dir, capsys)
        assert got["samples"] == 6 and got["failed"] == 3
        assert got["failures"] == [{"id": s, "reason": NOT_WRITTEN} for s in ("s1", "s4", "s5")]
        server.faults = Faults()  # the endpoint is back
        before = len(server.bodies)
        # the dry run of the resume forecasts the 3 samples it solves, not the job's 6, and says which are done
        assert _run(monkeypatch, job, run_dir, tmp_path / "cache-2", "--resume", "--dry-run") == 0
        dry = capsys.readouterr().out
        row = next(x for x in dry.splitlines() if x.startswith(f"| {LABEL} |"))
        samples, calls = (int(c.strip()) for c in row.split("|")[5:7])
        assert "  resume: count_ask_remote: 3 of 6 samples done (skipped); 3 to run\n" in dry, dry
        assert _run(monkeypatch, job, run_dir, tmp_path / "cache-2", "--resume") == 0
        assert "resume: count_ask_remote: 3 of 6 samples done (skipped); 3 to run\n" in capsys.readouterr().out
        assert sorted(_asked(server, before)) == ["s1", "s4", "s5"]
        assert (samples, calls) == (6, len(server.bodies) - before)
    scores, summary = _tables(run_dir)
    assert scores.equals(reference[0]) and summary.equals(reference[1]), (scores, summary)


def test_the_viewer_of_a_stopped_run_counts_the_samples_without_a_row(count_task, tmp_path, capsys, monkeypatch):
    with FakeOpenAIServer(Faults(rate_drop=1.0), script=["ok"] * 4) as server:
        _, run_dir = _stopped_run(tmp_path, monkeypatch, server, None)
    capsys.readouterr()
    got = _score_json(run_dir, capsys)
    assert (got["samples"], got["failed"]) == (6, 2)
    assert _viewer_counts(run_dir)[LABEL] == (6, 2)
    view = ViewData(RunLog(run_dir))
    rows = view.table(0)["rows"]
    missing = [j for j, r in enumerate(rows) if r["status"] == "missing"]
    assert [rows[j]["sample_id"] for j in missing] == ["s4", "s5"], rows  # the two the stop left unsolved
    assert view.sample(0, missing[0])["reason"] == NOT_SOLVED  # and its page says why, and what to do


def test_cached_answers_spend_no_budget_and_cost_nothing_while_live_ones_are_charged(count_task, tmp_path, capsys,
                                                                                   monkeypatch):
    """docs/exports.md, 'Cached answers cost nothing': the cache sits in front of the budget, a hit's cost_usd is 0."""
    shared = tmp_path / "shared-cache"
    with FakeOpenAIServer() as server:
        assert _run(monkeypatch, _job(tmp_path, server.base_url), tmp_path / "first", shared) == 0
        first = pl.read_csv(tmp_path / "first" / "summary.csv").filter(pl.col("run") == LABEL).row(0, named=True)
        cost = first["cost_usd"]
        # each live call reserves (prompt bytes / 2 + 8 per message + its max_tokens of 80) at a cent a token, about
        # $1.08, and costs about $0.49: this budget admits two live calls, not the six cached ones
        budget = 2.0
        assert first["llm_calls"] == 6 and cost > budget
        # the same job again, into a new folder over the same cache: answered by it alone, within any budget
        asked = len(server.bodies)
        assert _run(monkeypatch, _job(tmp_path, server.base_url, budget=budget), tmp_path / "again", shared) == 0
        assert len(server.bodies) == asked
        again = pl.read_csv(tmp_path / "again" / "summary.csv").filter(pl.col("run") == LABEL).row(0, named=True)
        assert (again["cost_usd"], again["llm_calls"], again["cache_hits"], again["tokens"]) == (0.0, 0, 6, 0)
        # a larger job over the same cache: the six cached answers are free, the two new samples are asked and paid
        more = _job(tmp_path, server.base_url, n=8, budget=budget, name="more.yaml")
        assert _run(monkeypatch, more, tmp_path / "more", shared) == 0
        assert sorted(_asked(server, asked)) == ["s6", "s7"]
    stats = [json.loads(line) for line in
             (tmp_path / "more" / "predictions" / LABEL / "stats.jsonl").read_text().splitlines()]
    paid = sum(s["prompt_tokens"] + s["generated_tokens"] for s in stats) * TOKEN_USD
    assert 0 < paid <= budget and sum(s["llm_calls"] for s in stats) == 2
    summary = pl.read_csv(tmp_path / "more" / "summary.csv").filter(pl.col("run") == LABEL).row(0, named=True)
    assert summary["cost_usd"] == pytest.approx(paid) and (summary["llm_calls"], summary["cache_hits"]) == (2, 6)
    capsys.readouterr()


def _stalled(monkeypatch, job: Path, run_dir: Path, cache: Path, capsys, server: FakeOpenAIServer, *flags: str) -> str:
    """A run the stall stops: exit 4 long before the client's timeout (300 s; the bound leaves room for a loaded
    machine), so its 1 s stall deadline stopped it, and one
    line naming the endpoint, the stall and the command that continues. Returns what it printed on stdout."""
    t0 = time.monotonic()
    assert _run(monkeypatch, job, run_dir, cache, *flags) == 4
    assert time.monotonic() - t0 < 100
    captured = capsys.readouterr()
    stop = [x for x in captured.err.splitlines() if "endpoint down" in x]
    assert len(stop) == 1 and f"openai:fake@{server.base_url}" in stop[0], captured.err
    assert re.search(r"gave no answer for \d+ s with \d+ requests in flight \(stall deadline 1 s", stop[0]), stop
    assert stop[0].endswith(f"emocaustics run {job} --resume --out {run_dir}"), stop
    return captured.out


def test_a_resume_that_meets_the_stall_again_stops_again_and_a_third_run_finishes_once_each(
        count_task, tmp_path, capsys, monkeypatch):
    reference = _uninterrupted(tmp_path, monkeypatch, n=12, concurrency=2)
    cache, run_dir = tmp_path / "cache-1", tmp_path / "run"
    pred = run_dir / "predictions" / LABEL
    # the endpoint answers 4 requests, then accepts every request and never answers
    with FakeOpenAIServer(Faults(rate_hang=1.0, hang_seconds=600), script=["ok"] * 4) as server:
        job = _job(tmp_path, server.base_url, n=12, concurrency=2)
        _stalled(monkeypatch, job, run_dir, cache, capsys, server)
        first = _ids(pred / "predictions.jsonl")
        assert len(first) == 4

        server.script, before = ["ok"] * 3, len(server.bodies)  # the resume: 3 answers, then the stall again
        out = _stalled(monkeypatch, job, run_dir, cache, capsys, server, "--resume")
        assert "resume: count_ask_remote: 4 of 12 samples done (skipped); 8 to run\n" in out
        assert not set(_asked(server, before)) & set(first)  # no finished sample asked again
        second = _ids(pred / "predictions.jsonl")
        assert len(second) == 7 and second[:4] == first

        server.faults, before = Faults(), len(server.bodies)  # the endpoint is healthy again
        assert _run(monkeypatch, job, run_dir, cache, "--resume") == 0
        assert "resume: count_ask_remote: 7 of 12 samples done (skipped); 5 to run\n" in capsys.readouterr().out
        assert sorted(_asked(server, before)) == sorted(set(f"s{i}" for i in range(12)) - set(second))
    # each sample once: its prediction, its stats row, its one attempt and its one call in the eval log
    every = sorted(f"s{i}" for i in range(12))
    assert sorted(_ids(pred / "predictions.jsonl")) == every and sorted(_ids(pred / "stats.jsonl")) == every
    log = RunLog(run_dir)
    assert sorted(log.all_attempts(LABEL)["sample_id"].to_list()) == every
    assert sorted(log.calls(LABEL)["sample_id"].to_list()) == every
    scores, summary = _tables(run_dir)
    assert scores.equals(reference[0]) and summary.equals(reference[1]), (scores, summary)
    # cross-run compare: the run pieced together by two resumes pairs with the uninterrupted one on every sample
    assert main(["compare", str(tmp_path / "reference"), str(run_dir), "--out", str(tmp_path / "pairs.csv")]) == 0
    pairs = pl.read_csv(tmp_path / "pairs.csv")
    assert sorted(pairs["config_a"].to_list()) == sorted(pairs["config_b"].to_list()) == ["count_ask_remote",
                                                                                          "count_right"]
    assert pairs.select("n_common", "n_only_a", "n_only_b", "diff").unique().rows() == [(12, 0, 0, 0.0)]
    capsys.readouterr()


def test_the_dry_runs_forecast_of_calls_is_what_the_endpoint_receives(count_task, tmp_path, capsys, monkeypatch):
    """docs/models.md and the dry run's own notes: generated tokens are each request's own max_tokens (an upper
    bound), and cache hits are not deducted."""
    with FakeOpenAIServer() as server:
        job = _job(tmp_path, server.base_url, n=7)
        cache = tmp_path / "cache-1"

        def forecast() -> list[str]:
            assert _run(monkeypatch, job, tmp_path / "dry", cache, "--dry-run") == 0
            row = next(x for x in capsys.readouterr().out.splitlines() if x.startswith(f"| {LABEL} |"))
            return [c.strip().replace(",", "") for c in row.split("|")[5:9]]

        samples, calls, _, generated = forecast()
        assert not server.bodies  # a dry run asks nothing
        assert _run(monkeypatch, job, tmp_path / "run", cache) == 0
        assert (int(samples), int(calls)) == (7, len(server.bodies))
        assert sorted(_asked(server)) == sorted(f"s{i}" for i in range(7))
        assert int(generated) == sum(b["max_tokens"] for b in server.bodies)
        summary = pl.read_csv(tmp_path / "run" / "summary.csv").filter(pl.col("run") == LABEL).row(0, named=True)
        assert summary["llm_calls"] == int(calls) and 0 < summary["generated_tokens"] <= int(generated)
        # with the cache warm, the forecast is the same (hits not deducted) while the run asks nothing
        assert forecast()[:2] == [samples, calls]
        assert _run(monkeypatch, job, tmp_path / "again", cache) == 0
        assert len(server.bodies) == int(calls)
