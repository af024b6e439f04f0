"""`emocaustics run` of an AER grid (every prompt x context mode) against an OpenAI-compatible and an Anthropic-compatible
stand-in on loopback (tests/fakes: they stand in for remote APIs that cannot be reached here), with faults injected:
429 (with retry-after), 500, 529 overloaded, hangs past the client's timeout, dropped connections and invalid answers
at random, plus two questions every request of which fails (one HTTP 500, one invalid answer).

No question is lost: in every config each question is in predictions.jsonl or named, with its reason, in
failures.jsonl; exactly the two doomed questions fail; the submission lists every question; the job exits 3 (samples
failed). A `--resume` once the endpoints behave answers the failed questions and leaves the others alone.
`retrieve` embeds through the OpenAI-compatible embeddings stand-in. No engine, no Ray.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emocaustics.cli import main
from fakes.anthropic_messages import AnthropicFaults, FakeAnthropicServer
from fakes.openai_chat import Faults
from fakes.openai_embeddings import FakeEmbeddingsServer
from fakes.openai_routed import RoutedFakeServer
from tasks.aer.aer_fixtures import question, topic, write_dataset

pytestmark = pytest.mark.slow

N = 12  # questions on sample: 4 per topic, all with gold "A" (what the stand-ins answer)
DOOMED_500, DOOMED_INVALID = "q-5", "q-9"
MODES = [(p, c) for p in ("zero-shot", "few-shot", "cot") for c in ("none", "full", "retrieve")]

JOB = """
name: aer-remote-faults
dataset:
  aer: {{split: sample, data: {data}}}
models:
  oa:
    spec: openai:fake-chat@{openai}
    concurrency: 8
    max_connection_failures: 20
    engine: {{timeout: 0.5, max_retries: 4}}
  an:
    spec: anthropic:claude-fake@{anthropic}
    concurrency: 8
    max_connection_failures: 20
    engine: {{timeout: 0.5, max_retries: 4}}
grid:
  task: [aer]
  model: [oa, an]
  prompt: [zero-shot, few-shot, cot]
  context: [none, full, retrieve]
  options: {{method: llm, max_context_tokens: 4096}}
scoring: {{embedder: "openai:fake-embed@{embed}", judge: none}}
output: {out}
"""
# No calibration row on purpose: the paired tests of the summary (scipy's exact Wilcoxon) cost seconds per pair of
# configs that differ on a few questions; the calibration rows have tests of their own.


def _marker(n: int) -> str:
    """A text that is in every prompt about question n and in no other (see aer_fixtures.question)."""
    return question(n, 1)["target_event"].split(" town 1 ")[1]  # "closed after event N."


def _dataset(root: Path) -> Path:
    sample = [question(n, 1 + (n - 1) // 4, "A") for n in range(1, N + 1)]
    dev = [question(n, 7, "A") for n in range(101, 105)]  # few-shot examples (another topic, no documents)
    return write_dataset(root, {"sample": (sample, [topic(t) for t in (1, 2, 3)]), "dev": (dev, None)})


def _by_config(run_dir: Path) -> dict[str, tuple[set[str], dict[str, str]]]:
    """config label -> (answered ids, failed id -> reason)."""
    out = {}
    for folder in sorted((run_dir / "predictions").iterdir()):
        if "_llm_" not in folder.name:
            continue
        answered = {json.loads(x)["id"] for x in (folder / "predictions.jsonl").read_text().splitlines() if x.strip()}
        fpath = folder / "failures.jsonl"
        failed = {}
        if fpath.exists():
            for line in fpath.read_text().splitlines():
                row = json.loads(line)
                failed[row["id"]] = row["reason"]
        out[folder.name] = (answered, failed)
    return out


def test_faulty_endpoints_lose_no_question(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))
    data = _dataset(tmp_path / "data")
    routes = {_marker(5): "500", _marker(9): "invalid"}
    oa_faults = Faults(rate_429=0.08, rate_500=0.06, rate_hang=0.03, rate_drop=0.03, rate_invalid=0.03,
                       retry_after_ms=10, hang_seconds=5, seed=3)
    an_faults = AnthropicFaults(rate_429=0.08, rate_500=0.04, rate_529=0.04, rate_hang=0.03, rate_drop=0.03,
                                rate_invalid=0.03, retry_after=0.01, retry_after_on_500=True, hang_seconds=5, seed=5)
    with RoutedFakeServer(oa_faults, routes=routes) as oa, \
            FakeAnthropicServer(an_faults, routes=routes) as an, FakeEmbeddingsServer() as emb:
        job = tmp_path / "job.yaml"
        job.write_text(JOB.format(data=data, openai=oa.base_url, anthropic=an.base_url, embed=emb.base_url,
                                  out=tmp_path / "runs"), encoding="utf-8")
        run_dir = tmp_path / "run"
        assert main(["run", str(job), "--out", str(run_dir)]) == 3  # finished, with failed samples
        configs = _by_config(run_dir)
        assert len(configs) == 2 * len(MODES)
        ids = {f"q-{n}" for n in range(1, N + 1)}
        for label, (answered, failed) in configs.items():
            assert answered | set(failed) == ids, label  # every question answered or named in failures.jsonl
            assert not answered & set(failed), label
            assert set(failed) == {DOOMED_500, DOOMED_INVALID}, (label, failed)
            assert ("HTTP 500" in failed[DOOMED_500]) and "unreadable answer" in failed[DOOMED_INVALID], failed
            sub = [json.loads(x) for x in (run_dir / "predictions" / label / "submission.jsonl").read_text()
                   .splitlines()]
            assert {x["id"] for x in sub} == ids  # a failed question is in the submission (empty answer, scored 0)
            res = json.loads((run_dir / "predictions" / label / "results.json").read_text())
            assert len(res["predictions"]) == N
        # every kind of fault really happened, on both endpoints
        assert all(oa.counts[b] for b in ("429", "500", "hang", "drop", "invalid")), oa.counts
        assert all(an.counts[b] for b in ("429", "500", "529", "hang", "drop", "invalid")), an.counts
        configs_json = json.loads((run_dir / "configs.json").read_text())
        llm = [r for r in configs_json if r["method"] == "llm"]
        assert all(r["summary"]["failed"] == 2 and r["summary"]["exact_match"] == N - 2 for r in llm)

        # The endpoints behave again: a resume answers the two failed questions of every config, nothing else.
        oa.routes.clear()
        an.routes.clear()
        oa.faults, an.faults = Faults(), AnthropicFaults()
        before = (len(oa.bodies), len(an.bodies))
        assert main(["run", str(job), "--out", str(run_dir), "--resume"]) == 0
        asked = oa.bodies[before[0]:] + an.bodies[before[1]:]
        # at least one request per failed question and config (more when a slow answer met the client's timeout),
        # and none about a question that was answered
        assert len(asked) >= 2 * len(configs)
        assert all(_marker(5) in json.dumps(b) or _marker(9) in json.dumps(b) for b in asked)
        for label, (answered, failed) in _by_config(run_dir).items():
            assert answered == ids, label
    capsys.readouterr()
