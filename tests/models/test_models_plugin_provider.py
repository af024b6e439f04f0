"""A model provider in a package of its own, declared in the `emocaustics.providers` entry-point group (a module and a
`*.dist-info/entry_points.txt` on PYTHONPATH), runs through `emocaustics eval` and `emocaustics run` as a built-in
provider does, with no line of `emocaustics/` naming it: the response cache (a second eval makes no call), the retry
of a throttled answer (the breaker's adaptive queue), the eval log of every sample's calls, and the job's
`max_cost_usd` (a call that could cross it is never sent: exit 6)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import emocaustics as ec
from tasks.aer.aer_fixtures import standard_dataset

PROVIDER = '''
import os
from pathlib import Path

from emocaustics.models.base import Completion, ErrorKind, ModelBase
from emocaustics.models.registry import Provider


class EchoModel(ModelBase):
    """Answers every AER question "A"; writes a line per call it is asked; its very first call is throttled (429)."""

    def __init__(self, spec):
        self.name = spec.canonical()
        self.calls = Path(os.environ["ECHO_CALLS"])

    async def generate(self, requests):
        out = []
        for r in requests:
            first = not self.calls.exists()
            with self.calls.open("a") as fh:
                fh.write(r.messages[-1]["content"][:20].replace("\\n", " ") + "\\n")
            if first and os.environ.get("ECHO_THROTTLE_FIRST"):
                out.append(Completion(text="", error="HTTP 429 Too Many Requests (echo)", kind=ErrorKind.THROTTLED))
            else:
                out.append(Completion(text="Answer: A", prompt_tokens=120, generated_tokens=3))
        return out


provider = Provider("echo", EchoModel)
'''


@pytest.fixture
def plugin(tmp_path: Path) -> dict[str, str]:
    site = tmp_path / "site"
    (site / "echo_provider-0.1.dist-info").mkdir(parents=True)
    (site / "echo_provider.py").write_text(PROVIDER, encoding="utf-8")
    (site / "echo_provider-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: echo-provider\nVersion: 0.1\n", encoding="utf-8")
    (site / "echo_provider-0.1.dist-info" / "entry_points.txt").write_text(
        "[emocaustics.providers]\necho = echo_provider:provider\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "EMOCAUSTICS_CACHE")}
    env.update(PYTHONPATH=str(site), ECHO_CALLS=str(tmp_path / "calls.log"), EMOCAUSTICS_CACHE=str(tmp_path / "cache"))
    return env


def _emocaustics(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "emocaustics", *args], capture_output=True, text=True, env=env,
                          timeout=600)


def _calls(env: dict[str, str]) -> int:
    path = Path(env["ECHO_CALLS"])
    return len(path.read_text(encoding="utf-8").splitlines()) if path.exists() else 0


def test_a_plugin_provider_runs_through_eval_with_cache_retries_and_the_eval_log(plugin, tmp_path):
    data = standard_dataset(tmp_path / "aer")
    args = ("eval", "aer", "--method", "llm", "--model", "echo:x", "--split", "sample", "--limit", "3",
            "-T", "context=none", "-D", f"data={data}")
    first = _emocaustics(plugin | {"ECHO_THROTTLE_FIRST": "1"}, *args, "--out", str(tmp_path / "first"))
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-3000:]
    # three questions, and the throttled first call asked again behind the adaptive rate limit
    assert _calls(plugin) == 4
    run = ec.load_run(tmp_path / "first")
    assert sorted(run.scores["sample_id"].unique()) == ["q-1", "q-2", "q-3"] and run.failed == 0
    label = run.summary["run"][0]
    assert run.log.calls(label).height == 3  # the eval log: one call per question, as the solver saw it
    assert sorted(run.log.samples(label)["sample_id"]) == ["q-1", "q-2", "q-3"]
    again = _emocaustics(plugin, *args, "--out", str(tmp_path / "again"))
    assert again.returncode == 0, again.stderr[-3000:]
    assert _calls(plugin) == 4  # every answer from the response cache: not one call
    cols = ["sample_id", "score"]
    assert ec.load_run(tmp_path / "again").scores.select(cols).equals(run.scores.select(cols))


def test_a_plugin_provider_is_held_to_the_jobs_budget(plugin, tmp_path):
    data = standard_dataset(tmp_path / "aer")
    job = tmp_path / "job.yaml"
    job.write_text(textwrap.dedent(f"""\
        name: echo-budget
        dataset: {{aer: {{data: {data}, split: sample}}}}
        models:
          echo:
            spec: echo:y
            price: {{input: 10000, output: 10000}}
        max_cost_usd: 0.5
        runs:
          - {{task: aer, model: echo, options: {{method: llm, context: none}}}}
        """), encoding="utf-8")
    proc = _emocaustics(plugin, "run", str(job), "--out", str(tmp_path / "run"))
    # a question's reservation (its prompt and max_tokens at a cent a token) is over the limit: nothing is sent
    assert proc.returncode == 6, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "cost budget reached" in proc.stdout + proc.stderr
    assert _calls(plugin) == 0


def test_a_broken_plugin_provider_is_named(plugin, tmp_path):
    site = Path(plugin["PYTHONPATH"])
    (site / "echo_provider-0.1.dist-info" / "entry_points.txt").write_text(
        "[emocaustics.providers]\necho = echo_provider:nowhere\n", encoding="utf-8")
    proc = _emocaustics(plugin, "eval", "aer", "--method", "llm", "--model", "echo:x", "--split", "sample",
                        "--limit", "1", "-D", f"data={standard_dataset(tmp_path / 'aer')}", "--out",
                        str(tmp_path / "run"))
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "model provider plug-in 'echo' (echo_provider:nowhere" in proc.stderr
