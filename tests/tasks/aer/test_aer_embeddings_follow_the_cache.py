"""The embeddings of `context: retrieve` follow the run's `cache:` as its model answers do (one mechanism:
`ScoreContext.cache`, the run's `models.cacheplace.CacheChoice`): a job with `cache: off` (`--no-cache`) reads and
keeps no embedding, one with the default cache keeps them beside `responses.sqlite`, and its second run embeds
nothing. Stand-ins on loopback for the OpenAI-compatible chat and embeddings endpoints (tests/fakes); no engine, no
Ray."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from emocaustics.cli import main
from emocaustics.models.cacheplace import shared_folder
from emocaustics.models.embedstore import FILE_NAME
from fakes.openai_chat import FakeOpenAIServer
from fakes.openai_embeddings import FakeEmbeddingsServer
from tasks.aer.aer_fixtures import question, topic, write_dataset


def _job(tmp: Path, chat: str, embed: str, cache: str) -> Path:
    data = write_dataset(tmp / "data", {"sample": ([question(n, 1, "A") for n in (1, 2)], [topic(1)])})
    job = {"name": f"retrieve-{cache}", "dataset": {"aer": {"split": "sample", "data": str(data)}},
           "models": {"oa": {"spec": f"openai:fake-chat@{chat}"}},
           "runs": [{"task": "aer", "model": "oa", "options": {"method": "llm", "context": "retrieve"}}],
           "scoring": {"embedder": f"openai:fake-embed@{embed}", "judge": "none"}, "cache": cache,
           "output": str(tmp / "runs")}
    path = tmp / f"job-{cache}.yaml"
    path.write_text(yaml.safe_dump(job), encoding="utf-8")
    return path


def test_off_keeps_no_embedding_and_on_keeps_them_for_the_next_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    capsys) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    shared = shared_folder()  # this test's own (tests/conftest.py)
    with FakeOpenAIServer() as chat, FakeEmbeddingsServer() as emb:
        assert main(["run", str(_job(tmp_path, chat.base_url, emb.base_url, "off")), "--out",
                     str(tmp_path / "off")]) == 0
        assert emb.requests and not (shared / FILE_NAME).exists()  # embedded, nothing kept
        for n, out in enumerate(("on1", "on2")):
            asked = len(emb.requests)
            assert main(["run", str(_job(tmp_path, chat.base_url, emb.base_url, "on")), "--out",
                         str(tmp_path / out)]) == 0
            assert (shared / FILE_NAME).is_file()
            assert (len(emb.requests) > asked) == (n == 0), emb.requests  # the second run embeds nothing
    capsys.readouterr()
