"""Dollars (issue 32): a price per model (the shipped table or the job's `price:`), `cost_usd` per config in every
summary, dollars in the dry run, and `max_cost_usd`, which stops the job before a call could cross it (exit 6,
finished samples kept) so that `--resume` completes it. Against the OpenAI stand-in (tests/fakes/openai_chat.py),
whose usage figures are the characters of the prompt and of the answer."""

from __future__ import annotations

import json

import polars as pl
from count_task import write_job
from fakes.openai_chat import FakeOpenAIServer

from emocaustics.cli import main
from emocaustics.core.errors import EXIT_BUDGET_REACHED
from emocaustics.core.task import Failure
from emocaustics.models.budget import Ledger
from emocaustics.models.prices import Price, PriceOverride, price_for, sample_cost
from emocaustics.models.spec import parse_llm_spec as _spec  # a job's model as its resolution hands it on

JOB = """
name: budget
dataset: {{n: 30}}
models:
  remote:
    spec: openai:fake@{url}
    concurrency: 4
{price}
{budget}
runs:
  - {{task: count, method: ask, model: remote}}
  - {{task: count, method: right}}
scoring: {{embedder: minilm}}
"""
PRICE = "    price: {input: 10000, output: 10000}"  # USD per 1M tokens: a cent a token, so a call costs ~$0.5
LABEL = "count_ask_remote"


def _job(tmp_path, url: str, *, price: str = PRICE, budget: float | None = None):
    return write_job(tmp_path / "job.yaml", JOB.format(url=url, price=price,
                                                        budget="" if budget is None else f"max_cost_usd: {budget}"))


def _stats(run_dir) -> list[dict]:
    path = run_dir / "predictions" / LABEL / "stats.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _predicted(run_dir) -> set[str]:
    path = run_dir / "predictions" / LABEL / "predictions.jsonl"
    return {json.loads(line)["id"] for line in path.read_text().splitlines() if line.strip()}


def test_prices_come_from_the_table_or_the_job_and_unknown_is_never_zero():
    assert price_for(_spec("openai:gpt-4o-mini@https://api.openai.com/v1")) == price_for(
        _spec("openai:gpt-4o-mini-2024-07-18@http://x"))
    assert price_for(_spec("openai:gpt-4o-mini@https://api.openai.com/v1")).input == 0.15
    assert price_for(_spec("anthropic:claude-3-5-haiku-latest")).output == 4.0
    assert price_for(_spec("openai:gpt-4o-mini-foo@http://x/v1")) is None  # not a dated name of a listed model
    assert price_for(_spec("openai:llama3.1:8b@http://localhost:11434/v1")) is None
    assert price_for(_spec("smoke")) is None
    mine = price_for(_spec("openai:mine@http://x/v1"), PriceOverride(input=1.0, output=2.0))
    assert mine is not None and mine.cost(1_000_000, 500_000) == 2.0
    assert price_for(_spec("openai:mine@http://x/v1"), PriceOverride(input=1.0)) is None  # no output price: unknown
    cheaper = price_for(_spec("openai:gpt-4o@http://x/v1"), PriceOverride(output=1.0))
    assert cheaper is not None and (cheaper.input, cheaper.output) == (2.5, 1.0)
    assert Price(input=2, output=4).cost(1_000_000, 1_000_000, batch=True) == 3.0  # batch: half by default
    assert sample_cost(None, {"prompt_tokens": 10, "generated_tokens": 1}) is None
    assert sample_cost(None, {"prompt_tokens": 0, "generated_tokens": 0}) == 0.0  # nothing called: nothing paid


def test_the_ledger_counts_reservations_in_flight():
    ledger = Ledger(1.0)
    assert ledger.reserve(0.6)
    assert not ledger.reserve(0.6)  # 0.6 in flight + 0.6 would cross 1.0
    ledger.settle(0.6, 0.1)
    assert not ledger.reserve(0.1)  # once stopped, stays stopped: no sample is half-run past the stop
    assert ledger.spent == 0.1 and ledger.reserved == 0.0


def test_cost_usd_in_every_summary_and_the_dry_run(count_task, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))
    with FakeOpenAIServer() as server:
        job = _job(tmp_path, server.base_url)
        assert main(["run", str(job), "--dry-run", "--out", str(tmp_path / "dry")]) == 0
        text = capsys.readouterr().out
        assert "cost (USD)" in text and "| $0 |" in text  # the calibration row
        row = next(line for line in text.splitlines() if line.startswith(f"| {LABEL} "))
        assert row.split("|")[-2].strip().startswith("$") and row.split("|")[-2].strip() != "$0.0000"

        run_dir = tmp_path / "run"
        assert main(["run", str(job), "--out", str(run_dir)]) == 0
    stats = _stats(run_dir)
    expected = sum(s["prompt_tokens"] + s["generated_tokens"] for s in stats) * 10000 / 1e6
    assert expected > 0
    summary = pl.read_csv(run_dir / "summary.csv")
    got = dict(zip(summary["run"], summary["cost_usd"]))
    assert abs(got[LABEL] - expected) < 1e-6 and got["count_right"] == 0.0
    records = {r["run"]: r for r in json.loads((run_dir / "configs.json").read_text())}
    assert abs(records[LABEL]["cost_usd"] - expected) < 1e-6
    assert "cost_usd" in (run_dir / "summary.md").read_text() and "cost_usd" in (run_dir / "report.html").read_text()


def test_an_unpriced_model_costs_unknown_and_cannot_have_a_budget(count_task, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))
    with FakeOpenAIServer() as server:
        job = _job(tmp_path, server.base_url, price="")
        run_dir = tmp_path / "run"
        assert main(["run", str(job), "--out", str(run_dir)]) == 0
        records = {r["run"]: r for r in json.loads((run_dir / "configs.json").read_text())}
        assert records[LABEL]["cost_usd"] is None and records["count_right"]["cost_usd"] == 0.0
        md = (run_dir / "summary.md").read_text()
        assert next(line for line in md.splitlines() if line.startswith(f"| {LABEL}")).count("unknown") == 1
        capsys.readouterr()

        job = _job(tmp_path, server.base_url, price="", budget=5)
        out = tmp_path / "run2"
        assert main(["run", str(job), "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "models.remote" in err[0] and "max_cost_usd" in err[0] and "price" in err[0]
        assert not out.exists() and len(server.seen) == 30  # only the first job's calls


def test_max_cost_usd_stops_before_the_budget_and_resume_completes(count_task, tmp_path, capsys, caplog,
                                                                    monkeypatch):
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))
    with FakeOpenAIServer() as server:
        job = _job(tmp_path, server.base_url, budget=5)
        run_dir = tmp_path / "run"
        assert main(["run", str(job), "--out", str(run_dir)]) == EXIT_BUDGET_REACHED
        captured = capsys.readouterr()
        # the typed stop (issue 41 point 13): one line naming the budget, what was spent and the resume command; no
        # failure line for each sample the budget kept from running, and no failure row written for it (it is simply
        # not done: the resume runs it)
        stop = [line for line in captured.err.splitlines() if "budget" in line]
        assert len(stop) == 1, captured.err
        assert "cost budget reached: max_cost_usd 5 (spent " in stop[0] and f"--resume --out {run_dir}" in stop[0]
        said = captured.out + captured.err + caplog.text
        assert " failed at " not in said and "attempts" not in said, said
        found = count_task.store.read_predictions(run_dir / "predictions" / LABEL)
        assert not [v for v in found.values() if isinstance(v, Failure)], found
        kept = _predicted(run_dir)
        assert 0 < len(kept) < 30
        stats = _stats(run_dir)
        spent = sum(s["prompt_tokens"] + s["generated_tokens"] for s in stats) * 10000 / 1e6
        assert spent <= 5  # never crossed
        assert len(server.seen) == len(kept)  # no call past the budget, every paid call kept
        assert not (run_dir / "scores.parquet").exists()

        job = _job(tmp_path, server.base_url, budget=100)  # a new budget for the rest (not part of the job's hash)
        assert main(["run", str(job), "--out", str(run_dir), "--resume"]) == 0
        assert len(_predicted(run_dir)) == 30
        assert len(server.seen) == 30  # nothing asked twice
