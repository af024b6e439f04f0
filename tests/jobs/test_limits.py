"""Per-sample limits (`token_limit`, `time_limit`) and a config's `config_time_limit`, through the job runner: a
sample over its limit is a failure row naming the limit while the others finish, `--resume` keeps it a failure and
`--resume --retry-limits` solves it again; bad values are refused naming the key. The model is a stand-in for a remote
endpoint (no Ray): it answers each call with the tokens and after the pause the sample's input asks for."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from emocaustics.core.errors import UsageError
from emocaustics.core.task import (DatasetOptions, Loaded, Methods, Options, Sample, ScoreContext, Scored, Task,
                                   register, rows_frame, unregister)
from emocaustics.jobs.spec import JobSpec
from emocaustics.models.base import ChatRequest, Completion, ModelBase

SAMPLES = {  # id -> (calls, tokens per call, seconds per call)
    "ok": (2, 10, 0.0), "big": (2, 30, 0.0), "slow": (3, 5, 0.4), "stuck": (1, 5, 30.0)}


class Scripted(ModelBase):
    """Stands in for an endpoint: a call's answer has the tokens its prompt asks for, after the pause it asks for."""

    name = "scripted"

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        out = []
        for r in requests:
            sid, tokens, pause = r.messages[-1]["content"].split(":")
            self.calls.append(sid)
            await asyncio.sleep(float(pause))
            out.append(Completion(text=sid, generated_tokens=int(tokens), prompt_tokens=1))
        return out


class LimitsTask(Task):
    name = "limits-test"
    methods = Methods(solver=("ask",))
    Dataset = DatasetOptions

    def load(self, dataset: DatasetOptions, options: Options) -> Loaded:
        return Loaded([Sample(k, {"calls": c, "tokens": t, "pause": p}, target=k) for k, (c, t, p) in SAMPLES.items()])

    async def solve(self, llm: Any, sample: Sample, options: Options) -> Any:
        for _ in range(sample.input["calls"]):
            await llm.generate([ChatRequest(messages=({"role": "user", "content":
                                                      f"{sample.id}:{sample.input['tokens']}:{sample.input['pause']}"},))])
        return sample.id

    def score(self, samples: list[Sample], predictions: dict[str, Any], options: Options, ctx: ScoreContext) -> Scored:
        from emocaustics.core.task import Failure

        rows = [{"sample_id": s.id, "metric": "score", "value": float(predictions.get(s.id) == s.target),
                 "status": "failed" if isinstance(predictions.get(s.id), Failure) else "ok",
                 "reason": str(predictions[s.id]) if isinstance(predictions.get(s.id), Failure) else None}
                for s in samples]
        return Scored(rows_frame(rows), {"score": sum(r["value"] for r in rows) / len(rows)})


@pytest.fixture
def scripted(monkeypatch):
    import emocaustics.models.factory as factory

    task = register(LimitsTask())
    model = Scripted()
    monkeypatch.setattr(factory, "make_llm", lambda *a, **k: model)
    yield model
    unregister(task.name)


def _job(tmp: Path) -> JobSpec:
    run = {"task": "limits-test", "model": "m", "options": {"method": "ask"}}
    return JobSpec.model_validate({
        "name": "limits", "output": str(tmp / "runs"), "cache_dir": str(tmp / "cache"),
        "models": {"m": {"spec": "openai:m@http://127.0.0.1:9/v1"}},
        "runs": [{**run, "name": "tokens", "token_limit": 50, "select": {"ids": ["ok", "big"]}},
                 {**run, "name": "time", "time_limit": 0.6, "select": {"ids": ["ok", "slow"]}},
                 {**run, "name": "config", "config_time_limit": 1.0, "select": {"ids": ["ok", "stuck"]}}]})


def _failures(run_dir: Path) -> dict[tuple[str, str], str]:
    scores = pl.read_parquet(run_dir / "scores.parquet")
    return {(r["run"], r["sample_id"]): r["reason"] for r in scores.filter(pl.col("failed")).iter_rows(named=True)}


def test_a_sample_over_each_limit_is_a_named_failure_and_resume_retries_it_only_when_asked(scripted, tmp_path):
    from emocaustics.jobs.runner import run_job

    job = _job(tmp_path)
    with contextlib.redirect_stdout(io.StringIO()):
        run_dir = run_job(job, out=str(tmp_path / "run"), check=False)
    failures = _failures(run_dir)
    assert set(failures) == {("tokens", "big"), ("time", "slow"), ("config", "stuck")}  # `ok` finished in each
    assert failures[("tokens", "big")] == "token_limit: 60 > 50 tokens"  # the second call took it over
    assert failures[("time", "slow")].startswith("time_limit: 0.6 > 0.6 s from the sample's first call")
    assert failures[("config", "stuck")] == "time_limit: config time_limit: 1 s reached while the sample ran"
    assert scripted.calls.count("slow") == 2  # stopped in its second call; the third never asked
    # the eval log has the failed sample's calls and reason
    assert json.loads((run_dir / "run.json").read_text())["failed_samples"] == 3

    scripted.calls.clear()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        run_job(job, out=str(run_dir), resume=True, check=False)
    assert scripted.calls == []  # a resume keeps them as failures
    assert "1 failed over a limit, kept as failures (--retry-limits tries them again)" in out.getvalue()
    assert _failures(run_dir) == failures

    with contextlib.redirect_stdout(io.StringIO()):
        run_job(job, out=str(run_dir), resume=True, check=False, retry_limits=True)
    assert sorted(set(scripted.calls)) == ["big", "slow", "stuck"]  # each solved again (and over its limit again)
    assert set(_failures(run_dir)) == set(failures)


def test_retry_limits_needs_resume(scripted, tmp_path):
    from emocaustics.jobs.runner import run_job

    with pytest.raises(UsageError, match="--retry-limits applies to --resume"):
        run_job(_job(tmp_path), out=str(tmp_path / "run"), check=False, retry_limits=True)


@pytest.mark.parametrize("key, value, needle", [
    ("token_limit", -4000, "greater than or equal to 1"), ("time_limit", -1, "greater than 0"),
    ("time_limit", 0, "greater than 0"), ("config_time_limit", -5, "greater than 0"),
    ("epochs", 0, "greater than or equal to 1"), ("reducer", "median", "unknown reducer 'median'"),
    ("reducer", "pass@4", "k = 4 is more than the 3 epoch")])
def test_bad_values_name_the_key(key, value, needle) -> None:
    from emocaustics.jobs.oneline import eval_job

    epochs = {"epochs": 3} if key != "epochs" else {}
    where = f"runs.0.{key}" if key != "reducer" else "reducer"
    with pytest.raises(UsageError, match=f"{where}.*{needle}"):  # a job file: the key
        _validate({"task": "aer", "model": "m", "options": {"method": "llm"}, key: value, **epochs})
    flag = "--" + key.replace("_", "-") if key != "reducer" else "reducer"
    with pytest.raises(UsageError, match=f"{flag}.*{needle}"):  # the command line: the flag
        eval_job("aer", model="smoke", **{key: value, **epochs})


def _validate(run: dict) -> None:
    from pydantic import ValidationError

    from emocaustics.jobs.spec import _format_error

    try:
        JobSpec.model_validate({"name": "j", "models": {"m": {"spec": "smoke"}}, "runs": [run]})
    except ValidationError as exc:
        raise UsageError(_format_error("job.yaml", exc)) from None


def test_limits_on_a_calibration_method_are_refused() -> None:
    from emocaustics.jobs.oneline import eval_job

    with pytest.raises(UsageError, match="token_limit applies to a method that calls a model"):
        eval_job("aer", method="oracle", token_limit=100)


def test_the_dry_run_forecasts_every_epoch() -> None:
    """Each epoch asks every sample again: the dry run's calls and tokens of a 3-epoch config are 3 times one's."""
    from emocaustics.jobs.oneline import eval_job
    from emocaustics.jobs.runner import plan_job

    root = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "aer"
    if not (root / "sample_data" / "questions.jsonl").is_file():
        pytest.skip(f"the public AER data is not here ({root})")

    def row(epochs: int) -> list[str]:
        job = eval_job("aer", model="smoke", limit=2, options={"context": "none"}, dataset={"data": str(root)},
                       epochs=epochs)
        line = next(x for x in plan_job(job, out="/nonexistent/run").text.splitlines() if x.startswith("| aer_llm"))
        return [c.strip().replace(",", "") for c in line.strip("|").split("|")]

    one, three = row(1), row(3)
    assert int(three[5]) == 3 * int(one[5]) and int(three[6]) == 3 * int(one[6])  # calls, prompt tokens


def test_a_config_others_build_on_keeps_one_epoch(tmp_path) -> None:
    """An emotion chain builds on the same model's sextuple window config (its predictions are the chain's input): of
    N epochs, none would be the one to hand on, so that config in epochs is refused naming both (epochs check)."""
    from emocaustics.jobs.runner import plan_job

    job = JobSpec.model_validate({
        "name": "chain", "dataset": {"subset": "sample"}, "models": {"m": {"spec": "smoke"}},
        "runs": [{"task": "sextuple", "model": "m", "options": {"method": "window"}, "epochs": 2},
                 {"task": "emotion", "model": "m", "options": {"method": "window"}}]})
    with pytest.raises(UsageError, match=r"builds on config sextuple_window_m_\S*epochs=2, which has epochs: 2"):
        plan_job(job, out=str(tmp_path / "run"))
