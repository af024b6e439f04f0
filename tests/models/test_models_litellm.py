"""The long-tail provider (`litellm:`, models/litellm_chat.py) through `emocaustics eval` and `run`, against stand-ins
for two of LiteLLM's backends: Azure OpenAI (its `api-key` header, its `api-version` query, its deployments route:
tests/fakes/azure_openai.py) and Mistral (OpenAI-compatible, Bearer key: tests/fakes/openai_chat.py). Each goes
through the layers every remote model has: the response cache (a second eval asks nothing), the retry of a throttled
answer, the eval log of every call, the job's budget (exit 6, nothing sent), and the key stays out of everything the
run writes."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import emocaustics as ec
from fakes.azure_openai import FakeAzureOpenAIServer
from fakes.openai_chat import FakeOpenAIServer
from tasks.aer.aer_fixtures import standard_dataset

if importlib.util.find_spec("litellm") is None:  # importing it here would fetch its price map from the network
    pytest.skip("litellm is not installed", allow_module_level=True)
AZURE_KEY = "azure-secret-key-0123456789"
MISTRAL_KEY = "mistral-secret-key-0123456789"
VERSION = "2024-10-21"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    drop = ("RAY_ADDRESS", "EMOCAUSTICS_CACHE", "EMOCAUSTICS_RESPONSE_CACHE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(EMOCAUSTICS_CACHE=str(tmp_path / "cache"), **extra)
    return env


def _eval(env: dict[str, str], model: str, data: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "emocaustics", "eval", "aer", "--method", "llm", "--model", model,
                           "--split", "sample", "--limit", "3", "-T", "context=none", "-D", f"data={data}",
                           "--out", str(out)], capture_output=True, text=True, env=env, timeout=600)


def _no_key_in(folder: Path, key: str) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), f"the key was written into {path}"


def _answer_a(body: dict) -> str:
    return '{"answer": ["A"]}'  # AER's answer schema (tasks/aer/solver.py): the letters of the causes


def test_azure_openai_through_eval_with_its_header_version_cache_and_eval_log(tmp_path):
    data = standard_dataset(tmp_path / "aer")
    env = _env(tmp_path, AZURE_API_KEY=AZURE_KEY)
    with FakeAzureOpenAIServer("exam-deploy", VERSION, key=AZURE_KEY, script=["429"]) as server:
        server.answer_text = _answer_a  # type: ignore[method-assign]
        model = f"litellm:azure/exam-deploy@{server.base_url}?api_version={VERSION}"
        first = _eval(env, model, data, tmp_path / "first")
        assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-3000:]
        # three questions, the throttled first one asked again: Azure's header and version on every request
        assert server.counts["ok"] == 3 and server.counts["429"] == 1
        assert set(server.api_keys) == {AZURE_KEY} and set(server.versions) == {VERSION}
        run = ec.load_run(tmp_path / "first")
        assert sorted(run.scores["sample_id"].unique()) == ["q-1", "q-2", "q-3"] and run.failed == 0
        label = run.summary["run"][0]
        assert run.log.calls(label).height == 3  # the eval log: one call per question
        again = _eval(env, model, data, tmp_path / "again")
        assert again.returncode == 0, again.stderr[-3000:]
        assert server.counts["ok"] == 3  # every answer from the response cache: not one request
    for out in (tmp_path / "first", tmp_path / "again"):
        _no_key_in(out, AZURE_KEY)
    assert AZURE_KEY not in first.stdout + first.stderr + again.stdout + again.stderr


def test_a_wrong_azure_version_fails_the_samples_by_name(tmp_path):
    data = standard_dataset(tmp_path / "aer")
    env = _env(tmp_path, AZURE_API_KEY=AZURE_KEY)
    with FakeAzureOpenAIServer("exam-deploy", VERSION, key=AZURE_KEY) as server:
        model = f"litellm:azure/exam-deploy@{server.base_url}?api_version=2023-01-01"
        proc = _eval(env, model, data, tmp_path / "run")
    assert set(server.versions) == {"2023-01-01"}
    run = ec.load_run(tmp_path / "run")
    reasons = run.scores.filter(run.scores["status"] == "failed")["reason"].to_list()
    assert len(reasons) == 3 and all("HTTP 404" in r for r in reasons), (proc.stderr[-2000:], reasons)
    _no_key_in(tmp_path / "run", AZURE_KEY)


def test_mistral_through_a_job_with_its_bearer_key_and_the_jobs_budget(tmp_path):
    data = standard_dataset(tmp_path / "aer")
    env = _env(tmp_path, MISTRAL_API_KEY=MISTRAL_KEY)
    with FakeOpenAIServer(expected_key=MISTRAL_KEY) as server:
        server.answer_text = _answer_a  # type: ignore[method-assign]

        def job(name: str, budget: float) -> Path:
            path = tmp_path / f"{name}.yaml"
            path.write_text(textwrap.dedent(f"""\
                name: {name}
                dataset: {{aer: {{data: {data}, split: sample}}}}
                models:
                  mistral:
                    spec: litellm:mistral/mistral-small@{server.base_url}
                    price: {{input: 2, output: 6}}
                max_cost_usd: {budget}
                runs:
                  - {{task: aer, model: mistral, options: {{method: llm, context: none}}}}
                """), encoding="utf-8")
            return path

        def run(name: str, budget: float) -> subprocess.CompletedProcess:
            return subprocess.run([sys.executable, "-m", "emocaustics", "run", str(job(name, budget)), "--out",
                                   str(tmp_path / name)], capture_output=True, text=True, env=env, timeout=600)

        broke = run("broke", 1e-9)  # one question's reservation is over the limit: nothing is sent
        assert broke.returncode == 6, broke.stdout[-2000:] + broke.stderr[-3000:]
        assert "cost budget reached" in broke.stdout + broke.stderr and server.counts["ok"] == 0
        paid = run("paid", 5.0)
        assert paid.returncode == 0, paid.stdout[-2000:] + paid.stderr[-3000:]
        assert server.counts["ok"] == 6 and set(server.auth_headers) == {f"Bearer {MISTRAL_KEY}"}
    scores = ec.load_run(tmp_path / "paid").scores
    assert scores.height == 6 and scores["cost_usd"].sum() > 0
    _no_key_in(tmp_path / "paid", MISTRAL_KEY)
