"""`emocaustics run` of ECPE (both LLM methods: `direct`, one call per conversation; `utterance`, one call per
utterance) with `batch: true` against the batch API stand-ins (tests/fakes/openai_batch.py, tests/fakes/
anthropic_batch.py: OpenAI's Batch API and Anthropic's Message Batches, which cannot be reached from here), beside the
same job run live: the same predictions and scores, every call answered through a batch (no live call), and the cost
billed at the batch price (half the live price). The stand-ins answer pairs that depend on the conversation, so the
scores are not all alike. Our own three-conversation data (tests/badinput/ecpe/_base), no engine, no Ray.
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

BASE = Path(__file__).resolve().parents[2] / "badinput" / "ecpe" / "_base" / "gold"
N = 6
EMOTIONS = ("sadness", "surprise", "anger")  # by case: right for cases 1 and 4, not for the others
JOB = """
name: ecpe-batch
dataset:
  ecpe: {{ids: {ids}, data: {data}}}
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
  task: [ecpe]
  model: [oa, an]
  method: [direct, utterance]
scoring: {{judge: none}}
cache_dir: {cache}
output: {out}
"""


def write_data(root: Path, n: int) -> Path:
    """n conversations, each its own text (a copy would share its requests) and numbered by its case."""
    root.mkdir(parents=True)
    for st in (1, 2):
        convs = json.loads((BASE / f"Subtask_{st}_test.json").read_text(encoding="utf-8"))
        out = []
        for i in range(n):
            conv = json.loads(json.dumps(convs[i % len(convs)]))
            conv["conversation_ID"] = i + 1
            conv["conversation"][0]["text"] += f" ( case {i + 1} )"
            out.append(conv)
        (root / f"Subtask_{st}_test.json").write_text(json.dumps(out), encoding="utf-8")
    return root


def _user_text(messages: list[dict[str, Any]]) -> str:
    content = next((m.get("content", "") for m in reversed(messages) if m.get("role") == "user"), "")
    if isinstance(content, list):  # Anthropic's content blocks
        content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return str(content)


def answer(body: dict[str, Any]) -> str:
    """Utterance 2's emotion, caused by utterance 1's first four words; the emotion picked by the conversation's
    case number, so some answers match the gold and some do not."""
    text = _user_text(body.get("messages", []))
    case = int(re.search(r"\( case (\d+) \)", text).group(1))
    first = re.search(r"^\[1\] [^:]+: (.*)$", text, re.M).group(1).split()
    emotion, span = EMOTIONS[(case - 1) % 3], " ".join(first[:4])
    look = re.search(r"Look at utterance \[(\d+)\]", text)
    if look is None:  # direct: the whole conversation
        return json.dumps({"pairs": [{"emotion_utterance": 2, "emotion": emotion, "cause_utterance": 1,
                                      "cause_span": span}]})
    if look.group(1) != "2":
        return json.dumps({"emotion": "neutral", "causes": []})
    return json.dumps({"emotion": emotion, "causes": [{"cause_utterance": 1, "cause_span": span}]})


def _predictions(run: Path) -> dict[str, list[Any]]:
    out = {}
    for folder in sorted((run / "predictions").iterdir()):
        rows = [json.loads(x) for x in (folder / "predictions.jsonl").read_text().splitlines() if x.strip()]
        out[folder.name] = sorted((r["id"], json.dumps(r.get("prediction", r), sort_keys=True)) for r in rows)
    return out


@pytest.mark.slow
def test_batch_ecpe_job_scores_as_live_at_half_the_price(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key")
    data = write_data(tmp_path / "data", N)
    convs = json.loads((data / "Subtask_1_test.json").read_text(encoding="utf-8"))
    calls_per_config = {"direct": N, "utterance": sum(len(c["conversation"]) for c in convs)}
    with FakeOpenAIBatchServer(seed=4) as oa, FakeAnthropicBatchServer(seed=5, answer_text=answer) as an:
        oa.answer_text = answer  # type: ignore[method-assign]
        runs = {}
        for mode in ("live", "batch"):
            job = tmp_path / f"{mode}.yaml"
            job.write_text(JOB.format(ids=list(range(1, N + 1)), data=data, openai=oa.base_url,
                                      anthropic=an.base_url, batch=str(mode == "batch").lower(),
                                      cache=tmp_path / f"cache-{mode}", out=tmp_path / "runs"), encoding="utf-8")
            calls = (oa.chat_calls, an.live_calls)
            runs[mode] = tmp_path / mode
            assert main(["run", str(job), "--out", str(runs[mode])]) == 0, capsys.readouterr().err[-2000:]
            asked_live = (oa.chat_calls - calls[0], an.live_calls - calls[1])
            every = sum(calls_per_config.values())
            if mode == "live":
                assert asked_live == (every, every) and oa.creates == an.creates == 0
            else:
                assert asked_live == (0, 0)  # every conversation and utterance through a batch
                assert len(oa.lines) == len(an.requests) == every
                assert oa.creates >= 1 and an.creates >= 1
        out = capsys.readouterr().out
    assert "requests submitted" in out and "ended" in out  # the batches' progress lines
    preds = {m: _predictions(runs[m]) for m in runs}
    assert preds["batch"] == preds["live"] and len(preds["live"]) == 4
    scores = {m: pl.read_parquet(runs[m] / "scores.parquet").sort("run", "sample_id") for m in runs}
    assert len(scores["live"]) == 4 * N and (scores["live"]["status"] == "ok").all()
    assert scores["batch"]["score"].to_list() == scores["live"]["score"].to_list()
    metrics = [c for c in scores["live"].columns if c.startswith("c_")]
    assert metrics and scores["batch"].select(metrics).equals(scores["live"].select(metrics))
    assert len(set(scores["live"]["score"].to_list())) > 1  # the answers differ by conversation
    assert scores["batch"]["prompt_tokens"].to_list() == scores["live"]["prompt_tokens"].to_list()
    summary = {m: pl.read_csv(runs[m] / "summary.csv").sort("run") for m in runs}
    assert summary["batch"]["score"].to_list() == summary["live"]["score"].to_list()
    cost = {m: {r["run"]: r["cost_usd"] for r in json.loads((runs[m] / "configs.json").read_text())} for m in runs}
    assert set(cost["batch"]) == set(cost["live"]) and len(cost["live"]) == 4
    for label, usd in cost["live"].items():
        assert usd > 0 and cost["batch"][label] == pytest.approx(usd / 2, rel=1e-3), label
