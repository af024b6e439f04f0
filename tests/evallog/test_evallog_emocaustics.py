"""The eval log of EmoCaustics extraction (the task's own plan: each dialogue's state machine, run here for an
endpoint or inside a model replica, records its calls and returns them with its result row): every call of a
dialogue with its step, prompt and answer, against the OpenAI-compatible stand-in."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from emocaustics.cli import main
from emocaustics.evallog.read import RunLog
from fakes.openai_chat import FakeOpenAIServer

pytestmark = pytest.mark.slow


def test_extraction_calls_are_logged_per_dialogue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from emocaustics.tasks.longdialogue.data.load import load_sample

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    dialogues = load_sample().dialogues
    with FakeOpenAIServer() as server:
        job = {"name": "evallog-emo", "dataset": {"subset": "sample", "ids": [1, 2]},
               "models": {"api": {"spec": f"openai:fake-model@{server.base_url}", "concurrency": 8}},
               "runs": [{"task": "sextuple", "options": {"method": "direct"}, "model": "api"}],
               "scoring": {"judge": "none"}, "cache_dir": str(tmp_path / "cache")}
        spec = tmp_path / "job.yaml"
        spec.write_text(yaml.safe_dump(job), encoding="utf-8")
        rc = main(["run", str(spec), "--out", str(tmp_path / "run"), "--allow-failures"])
        requests = len(server.bodies)
    assert rc == 0
    log = RunLog(tmp_path / "run")
    assert log.labels() == ["sextuple_direct_api"]
    assert log.calls("sextuple_direct_api").height == requests > 0
    for did in (1, 2):
        s = log.sample("sextuple_direct_api", str(did))
        assert s["calls"] and all(c["step"] for c in s["calls"])  # each call names its step of the method
        prompts = "".join(m["content"] for c in s["calls"] for m in c["messages"])
        assert dialogues[did].utterances[0].sentence in prompts
        assert s["input"] is not None and s["prediction"] is not None and s["status"] == "ok"  # gold: in the input
        assert s["items"] and {i["dialogue"] for i in s["items"]} == {did}  # the scorer's decisions, this dialogue's
    capsys.readouterr()
