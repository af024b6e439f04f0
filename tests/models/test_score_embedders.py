"""Embedders: the packaged offline model, and an OpenAI-compatible endpoint over real HTTP (local stand-in server)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from emocaustics.core.errors import UsageError
from emocaustics.models.embedders import OpenAIEmbedder, make_embedder, parse_embedder_spec
from tests.fakes.openai_embeddings import FakeEmbeddingsServer, hashed_ngram_embedding


def test_minilm_is_offline_normalised_and_identity_is_one():
    emb = make_embedder("minilm")
    vecs = asyncio.run(emb.embed(["口服液是欺诈行为", "口服液是欺诈行为", "the weather is nice"]))
    assert vecs.dtype == np.float32 and vecs.shape[0] == 3
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert float(vecs[0] @ vecs[1]) == pytest.approx(1.0, abs=1e-5)
    assert float(vecs[0] @ vecs[2]) < 0.99


def test_bad_specs_are_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="openai:MODEL@BASE_URL"):
        parse_embedder_spec("openai:no-url")
    with pytest.raises(UsageError, match="not a directory"):
        parse_embedder_spec(str(tmp_path / "nope"))
    assert parse_embedder_spec("openai:bge@http://h:1/v1/").base_url == "http://h:1/v1"


def test_openai_endpoint_end_to_end_with_retries(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("EMOCAUSTICS_API_KEY", "sk-test-secret")
    texts = ["孩子的教育", "口服液", "欺诈行为", "孩子的教育方式", "虚伪"]
    with FakeEmbeddingsServer(api_key="sk-test-secret") as srv:
        srv.fail_next = [429, 500]  # the client's own retries must get through both
        emb = make_embedder(f"openai:fake-embed@{srv.base_url}", batch_size=2)
        assert isinstance(emb, OpenAIEmbedder)
        vecs = asyncio.run(emb.embed(texts))
        statuses = [r["status"] for r in srv.requests]
    expected = np.stack([hashed_ngram_embedding(t) for t in texts])
    assert np.allclose(vecs, expected, atol=1e-6)
    assert statuses.count(200) == 3 and sorted(s for s in statuses if s != 200) == [429, 500]
    assert float(vecs[0] @ vecs[3]) > float(vecs[0] @ vecs[1])  # shared characters -> more similar


def test_openai_endpoint_wrong_key_fails_loudly(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "wrong")
    with FakeEmbeddingsServer(api_key="right") as srv:
        emb = OpenAIEmbedder("m", srv.base_url, max_retries=0)
        with pytest.raises(Exception, match="401|api key"):
            asyncio.run(emb.embed(["x"]))


def test_a_hub_name_loads_from_its_snapshot_and_keeps_its_name(tmp_path, monkeypatch):
    from emocaustics.models import embedders, hub

    monkeypatch.setattr(hub, "cached_path", lambda name: tmp_path / name.replace("/", "--"))
    emb = make_embedder("BAAI/bge-m3")
    assert isinstance(emb, embedders.SentenceTransformerEmbedder)
    assert (emb.path, emb.name) == (str(tmp_path / "BAAI--bge-m3"), "BAAI/bge-m3")
    local = make_embedder(str(tmp_path))  # a folder: its resolved path is both
    assert (local.path, local.name) == (str(tmp_path.resolve()), str(tmp_path.resolve()))
