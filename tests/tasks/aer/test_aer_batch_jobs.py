"""`emocaustics run` of AER with `batch: true` against the batch API stand-ins (tests/fakes/openai_batch.py,
tests/fakes/anthropic_batch.py: OpenAI's Batch API and Anthropic's Message Batches, which cannot be reached from
here), beside the same job run live: the same predictions and scores, every question answered through a batch (no
live call), the batch ids kept beside the run's response cache, and the cost billed at the batch price (half the
live price). The stand-ins answer a letter that depends on the question, so the scores are not all alike.
No engine, no Ray.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from emocaustics.cli import main
from fakes.anthropic_batch import FakeAnthropicBatchServer
from fakes.openai_batch import FakeOpenAIBatchServer
from tasks.aer.aer_fixtures import question, topic, write_dataset

N = 8
JOB = """
name: aer-batch
dataset:
  aer: {{split: sample, data: {data}}}
models:
  oa:
    spec: openai:fake-chat@{openai}
    batch: {batch}
    price: {{input: 2.0, output: 8.0}}
    engine: {{batch_poll: 0.02, batch_quiet: 0.1}}
  an:
    spec: anthropic:claude-fake@{anthropic}
    batch: {batch}
    price: {{input: 3.0, output: 15.0}}
    engine: {{batch_poll: 0.02, batch_quiet: 0.1}}
grid:
  task: [aer]
  model: [oa, an]
  prompt: [zero-shot, cot]
  context: [none]
  options: {{method: llm}}
scoring: {{judge: none}}
cache_dir: {cache}
output: {out}
"""


def _letter(body: dict[str, Any]) -> str:
    """The stand-ins' answer: a letter picked by the question's number (gold is always A)."""
    text = json.dumps(body.get("messages", []), ensure_ascii=False)
    n = int(re.search(r"question (\d+)\)", text).group(1))
    return "ABCA"[n % 4]


def _openai_answer(body: dict[str, Any]) -> str:
    return json.dumps({"answer": [_letter(body)], **({"reasoning": "because"} if "reasoning" in json.dumps(
        body.get("response_format", {})) else {})})


def _anthropic_answer(body: dict[str, Any]) -> str:
    schema = json.dumps((body.get("output_config") or {}).get("format", {}))
    return json.dumps({"answer": [_letter(body)], **({"reasoning": "because"} if "reasoning" in schema else {})})


def _predictions(run: Path) -> dict[str, list[Any]]:
    out = {}
    for folder in sorted((run / "predictions").iterdir()):
        rows = [json.loads(x) for x in (folder / "predictions.jsonl").read_text().splitlines() if x.strip()]
        out[folder.name] = sorted((r["id"], r.get("prediction", r)) for r in rows)
    return out


@pytest.mark.slow
def test_batch_job_scores_as_live_at_half_the_price(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key")
    data = write_dataset(tmp_path / "data", {"sample": ([question(n, 1 + (n - 1) // 4, "A") for n in range(1, N + 1)],
                                                        [topic(1), topic(2)])})
    with FakeOpenAIBatchServer(seed=4) as oa, FakeAnthropicBatchServer(seed=5, answer_text=_anthropic_answer) as an:
        oa.answer_text = _openai_answer  # type: ignore[method-assign]
        runs = {}
        for mode in ("live", "batch"):
            job = tmp_path / f"{mode}.yaml"
            job.write_text(JOB.format(data=data, openai=oa.base_url, anthropic=an.base_url,
                                      batch=str(mode == "batch").lower(), cache=tmp_path / f"cache-{mode}",
                                      out=tmp_path / "runs"), encoding="utf-8")
            calls = (oa.chat_calls, an.live_calls)
            runs[mode] = tmp_path / mode
            assert main(["run", str(job), "--out", str(runs[mode])]) == 0
            asked_live = (oa.chat_calls - calls[0], an.live_calls - calls[1])
            if mode == "live":
                assert asked_live == (2 * N, 2 * N) and oa.creates == an.creates == 0
            else:
                assert asked_live == (0, 0)  # every question through a batch
                assert len(oa.lines) == len(an.requests) == 2 * N
        out = capsys.readouterr().out
    assert "requests submitted" in out and "completed" in out and "ended" in out  # the batches' progress lines
    assert _predictions(runs["batch"]) == _predictions(runs["live"])
    scores = {m: pl.read_parquet(runs[m] / "scores.parquet").sort("run", "sample_id") for m in runs}
    assert scores["batch"]["score"].to_list() == scores["live"]["score"].to_list()
    assert 0 < sum(scores["live"]["score"].to_list()) < len(scores["live"])  # the answers differ by question
    assert scores["batch"]["prompt_tokens"].to_list() == scores["live"]["prompt_tokens"].to_list()
    cost = {m: {r["run"]: r["cost_usd"] for r in json.loads((runs[m] / "configs.json").read_text())} for m in runs}
    assert set(cost["batch"]) == set(cost["live"]) and len(cost["live"]) == 4
    for label, usd in cost["live"].items():
        assert usd > 0 and cost["batch"][label] == pytest.approx(usd / 2, rel=1e-3), label
    rows = [json.loads(x) for x in (tmp_path / "cache-batch" / "batches.jsonl").read_text().splitlines()]
    assert {r["event"] for r in rows} == {"submitted", "finished"}
    assert len([r for r in rows if r["event"] == "submitted"]) == oa.creates + an.creates
