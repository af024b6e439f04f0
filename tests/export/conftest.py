"""The run every export test reads: one job over every task (see test_export.py's docstring), made once per session
on the session's vLLM CPU engine and the OpenAI-compatible stand-in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes.browser import REPO

SHARED = REPO.parent / "shared"
JOB = """name: exports
dataset:
  subset: sample
  aer: {{split: sample, ids: [q-1, q-2, q-3]}}
  ecpe: {{ids: [1401, 1403]}}
  human: {{file: hits_data_FreeTopicRound1.json}}
models:
  smoke: {{spec: smoke}}
  api: {{spec: "openai:fake-chat@{url}", concurrency: 4}}
runs:
  - {{task: aer, options: {{method: oracle}}}}
  - {{task: aer, options: {{method: llm, prompt: zero-shot, context: none}}, model: smoke,
     dataset: {{split: sample, ids: [q-1, q-2]}}}}
  - {{task: aer, options: {{method: llm, prompt: zero-shot, context: none}}, model: api}}
  - {{task: ecpe, options: {{method: oracle}}}}
  - {{task: sextuple, method: oracle, dataset: {{ids: [1, 2]}}}}
  - {{task: emotion, method: baseline, dataset: {{ids: [1, 2]}}}}
  - {{task: narrative, options: {{method: files}}}}
  - {{task: human, options: {{method: process}}}}
scoring: {{judge: none}}
"""


def _shared(name: str, probe: str) -> Path:
    path = SHARED / "datasets" / name
    if not (path / probe).exists():
        pytest.skip(f"the public {name} data is not beside the checkout ({path})")
    return path


@pytest.fixture(scope="session")
def run_dir(smoke_pool, published_root, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from emocaustics.jobs.runner import run_job
    from emocaustics.jobs.spec import load_job
    from fakes.openai_chat import Faults
    from fakes.openai_routed import RoutedFakeServer

    aer = _shared("aer", "sample_data/questions.jsonl")
    doomed = next(json.loads(line) for line in (aer / "sample_data" / "questions.jsonl").read_text().splitlines()
                  if json.loads(line)["id"] == "q-2")["target_event"]  # in every prompt about q-2, in no other
    tmp = tmp_path_factory.mktemp("exports")
    mp = pytest.MonkeyPatch()
    mp.setenv("EMOCAUSTICS_CACHE", str(tmp / "cache"))
    mp.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    mp.setenv("EMOCAUSTICS_AER_DATA", str(aer))
    mp.setenv("EMOCAUSTICS_ECAC_DATA", str(_shared("ecac", "Subtask_1_test.json")))
    mp.setenv("EMOCAUSTICS_HUMANEVAL_DATA", str(_shared("humaneval", "hits_data_FreeTopicRound1.json")))
    try:
        with RoutedFakeServer(Faults(), routes={doomed: "invalid"}) as srv:
            job = JOB.format(url=srv.base_url)
            (tmp / "job.yaml").write_text(job, encoding="utf-8")
            return run_job(load_job(tmp / "job.yaml", overrides={"output": str(tmp / "runs")}), out=str(tmp / "run"))
    finally:
        mp.undo()
