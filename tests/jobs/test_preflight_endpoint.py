"""The pre-flight's one request to an endpoint, per provider: the facts it uses (the key's variable, the URL of the
model list, the headers) come from the provider's registry entry (models/registry.py), not from its name."""

from __future__ import annotations

import io
import urllib.error
import urllib.request

import httpx
import pytest

from emocaustics.core.errors import PreflightError
from emocaustics.jobs.modelentry import ModelSpec
from emocaustics.jobs.preflight import placement
from emocaustics.models.registry import check_endpoint
from emocaustics.models import anthropic_chat, registry
from emocaustics.models.spec import parse_llm_spec


@pytest.fixture
def sent(monkeypatch):
    got: list[tuple[str, dict]] = []
    status = [200]

    def urlopen(request, timeout):  # headers compared as HTTP does, whatever their case (httpx.Headers)
        got.append((request.full_url, httpx.Headers(dict(request.header_items()))))
        if status[0] >= 400:
            raise urllib.error.HTTPError(request.full_url, status[0], "refused", {}, None)  # type: ignore[arg-type]
        return io.BytesIO(b"[]")

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    for var in ("OPENAI_API_KEY", "EMOCAUSTICS_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return got, status


def test_the_registry_reads_the_keys_the_clients_read():
    assert registry.provider("openai").key_variables == ("OPENAI_API_KEY", "EMOCAUSTICS_API_KEY")
    assert registry.provider("anthropic").key_variables == (anthropic_chat.KEY_VARIABLE,)
    assert registry.probed("openai:m@http://x/v1") and registry.probed("anthropic:claude-x")
    assert not any(registry.probed(s) for s in ("ollama:llama3", "litellm:gemini/x", "vllm:org/m", "smoke"))
    shown = [placement(ModelSpec(spec=s)) for s in ("anthropic:claude-x", "ollama:llama3", "vllm:org/m")]
    assert [s.startswith("remote endpoint, 64 requests in flight") for s in shown] == [True, True, False]


def test_each_provider_is_asked_for_its_model_list_with_its_own_key(sent, monkeypatch):
    got, status = sent
    monkeypatch.setenv("ANTHROPIC_API_KEY", " sk-ant ")
    monkeypatch.setenv("EMOCAUSTICS_API_KEY", "sk-emo")
    check_endpoint(parse_llm_spec("anthropic:claude-x"))
    check_endpoint(parse_llm_spec("anthropic:claude-x@http://proxy:1/v1"))
    check_endpoint(parse_llm_spec("openai:m@http://local:8000/v1"))
    assert got == [("https://api.anthropic.com/v1/models", {"x-api-key": "sk-ant", "anthropic-version": "2023-06-01"}),
                   ("http://proxy:1/v1/models", {"x-api-key": "sk-ant", "anthropic-version": "2023-06-01"}),
                   ("http://local:8000/v1/models", {"Authorization": "Bearer sk-emo"})]
    status[0] = 401
    with pytest.raises(PreflightError, match=r"refused \(HTTP 401\); set OPENAI_API_KEY or EMOCAUSTICS_API_KEY$"):
        check_endpoint(parse_llm_spec("openai:m@http://local:8000/v1"))
    with pytest.raises(PreflightError, match=r"refused \(HTTP 401\); set ANTHROPIC_API_KEY$"):
        check_endpoint(parse_llm_spec("anthropic:claude-x"))


def test_a_local_server_is_asked_without_a_key_the_providers_own_api_is_not(sent):
    got, _ = sent
    check_endpoint(parse_llm_spec("openai:m@http://local:8000/v1"))
    assert got == [("http://local:8000/v1/models", {})]
    with pytest.raises(PreflightError, match="no API key: set OPENAI_API_KEY$"):
        check_endpoint(parse_llm_spec("openai:m@https://api.openai.com/v1"))
    with pytest.raises(PreflightError, match="no API key: set ANTHROPIC_API_KEY$"):
        check_endpoint(parse_llm_spec("anthropic:claude-x"))
    assert len(got) == 1


def test_a_plug_in_provider_declares_the_same_facts(sent, monkeypatch):
    got, status = sent
    mine = registry.Provider("probeme", lambda spec: None, key_variables=("PROBEME_KEY",), models_path="/models",
                             auth=lambda key: {"X-Key": key})
    monkeypatch.setitem(registry._PROVIDERS, "probeme", mine)
    monkeypatch.setenv("PROBEME_KEY", "k1")
    check_endpoint(parse_llm_spec("probeme:m@http://host:1/v1"))
    assert got == [("http://host:1/v1/models", {"X-Key": "k1"})]
    status[0] = 403
    with pytest.raises(PreflightError, match=r"probeme:m@http://host:1/v1: the key was refused \(HTTP 403\); set "
                                             r"PROBEME_KEY$"):
        check_endpoint(parse_llm_spec("probeme:m@http://host:1/v1"))
