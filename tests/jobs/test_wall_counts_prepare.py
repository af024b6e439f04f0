"""A config's wall time (`wall.json`, summary.csv's `wall_s`) counts its solver's prepare: AER's default retrieval
embeds the topics' documents there, which took minutes on a loaded machine while `wall_s` said 0.9 (issue 53 item 16).
A model through an OpenAI-compatible stand-in on loopback; no Ray, no engine."""

from __future__ import annotations

import json
import time

from emocaustics.cli import main
from emocaustics.tasks.aer.task import AerTask
from fakes.openai_chat import FakeOpenAIServer
from tasks.aer.aer_fixtures import standard_dataset


def test_the_prepare_of_a_config_is_in_its_wall_time(tmp_path, monkeypatch):
    data = standard_dataset(tmp_path / "aer")
    run = tmp_path / "run"
    prepare = AerTask.prepare  # a slow prepare, as retrieval's embedding is

    def slow_prepare(self, samples, options, ctx):
        time.sleep(0.8)
        return prepare(self, samples, options, ctx)

    monkeypatch.setattr(AerTask, "prepare", slow_prepare)
    monkeypatch.setenv("EMOCAUSTICS_RESPONSE_CACHE", str(tmp_path / "cache"))
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        assert main(["eval", "aer", "--model", "openai:fake-chat", "--limit", "2", "-T", "context=none",
                     "-D", f"data={data}", "--out", str(run)]) == 0
    (wall,) = json.loads((run / "wall.json").read_text()).values()
    assert wall >= 0.8
