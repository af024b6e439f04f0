"""Typed error kinds and redaction where errors are made (issue 54 item 2, issue 53 findings 7 and 11).

- A failed request carries the kind its client gave it (`models.base.ErrorKind`), from the HTTP status, the server's
  error code or the exception's type; the breaker, the rate limit and the clients' retry decide on the kind. No module
  classifies a failure by matching its text (an AST scan of the package).
- A key the endpoint echoes in its error (a 401 "Incorrect API key provided: Bearer sk-...") and a base URL's
  credentials (in every form they are sent: the pair, HTTP Basic's base64) are removed from the Completion's error,
  for every client, and from the eval log's texts.
- `litellm:MODEL` without the backend (`litellm:openai/gpt-4o`) is a usage error when the spec is parsed.

A stand-in endpoint (http.server in a thread) answers every request with one status and a body that echoes the
request's Authorization / x-api-key header, as some servers do.
"""

from __future__ import annotations

import ast
import asyncio
import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from emocaustics.core.errors import UsageError
from emocaustics.models.base import ChatRequest, Completion, ErrorKind

PACKAGE = Path(__file__).resolve().parents[2] / "emocaustics"
KEY = "sk-test-0123456789abcdefSECRET"
REQUEST = ChatRequest(messages=({"role": "user", "content": "hi"},))


class _Echo(BaseHTTPRequestHandler):
    status = 401

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        sent = self.headers.get("Authorization") or self.headers.get("x-api-key") or ""
        words = f"Incorrect API key provided: {sent}. You can find your API key at https://example.invalid/keys."
        body = {"type": "error", "error": {"type": "authentication_error", "message": words,
                                          "code": "invalid_api_key"}}
        raw = json.dumps(body).encode()
        self.send_response(self.server.status)  # type: ignore[attr-defined]
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.send_header("x-should-retry", "false")
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def endpoint():
    """`start(status)` -> the base URL of a stand-in answering every POST with `status` and the echoed key."""
    servers: list[ThreadingHTTPServer] = []

    def start(status: int = 401) -> str:
        srv = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
        srv.status = status  # type: ignore[attr-defined]
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return f"http://127.0.0.1:{srv.server_address[1]}"

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def _ask(llm) -> Completion:
    async def go():
        try:
            return (await llm.generate([REQUEST]))[0]
        finally:
            await llm.aclose()

    return asyncio.run(go())


def _openai(url: str):
    from emocaustics.models.openai_chat import OpenAIChatLLM

    return OpenAIChatLLM("m", url + "/v1", max_retries=0, timeout=5)


def _anthropic(url: str):
    pytest.importorskip("anthropic")
    from emocaustics.models.anthropic_chat import AnthropicChatLLM

    return AnthropicChatLLM("claude-x", url, max_retries=0, timeout=5)


@pytest.mark.parametrize("client", [_openai, _anthropic])
def test_a_key_echoed_by_a_401_is_not_in_the_error_and_the_kind_is_auth(endpoint, monkeypatch, client):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    c = client(endpoint(401))
    answer = _ask(c)
    assert answer.kind is ErrorKind.AUTH
    assert "401" in answer.error and "Incorrect API key provided" in answer.error  # the server's words stay
    assert KEY not in answer.error and KEY[:16] not in answer.error and "[redacted]" in answer.error


def test_a_key_read_from_a_variable_of_any_name_the_registry_knows_is_scrubbed(endpoint, monkeypatch):
    from emocaustics.models import registry

    monkeypatch.setattr(registry.Provider, "key", lambda self: KEY)  # as if read from a plug-in's own variable
    monkeypatch.setenv("PLUGIN_VAR", KEY)
    monkeypatch.setattr("emocaustics.core.redact.KEY_VARIABLES", {"PLUGIN_VAR"})
    answer = _ask(_openai(endpoint(401)))
    assert KEY not in answer.error and answer.kind is ErrorKind.AUTH


def test_url_credentials_are_scrubbed_in_every_form_they_are_sent(endpoint):
    from emocaustics.models.openai_chat import OpenAIChatLLM
    from emocaustics.models.spec import parse_llm_spec

    url = endpoint(401)
    spec = parse_llm_spec(f"openai:m@{url.replace('://', '://alice:hunter2-long-password@')}/v1?max_retries=0")
    assert "hunter2" not in spec.canonical()
    answer = _ask(OpenAIChatLLM(spec.model, spec.base_url, max_retries=0, timeout=5))
    basic = base64.b64encode(b"alice:hunter2-long-password").decode()
    assert answer.kind is ErrorKind.AUTH and "Basic [redacted]" in answer.error and basic not in answer.error
    made = Completion("", error=f"echo: alice:hunter2-long-password, {basic}, hunter2-long-password")
    assert "hunter2" not in made.error and basic not in made.error


def test_the_eval_log_redacts_url_credentials_and_keys_in_every_encoding(tmp_path, monkeypatch):
    from emocaustics.evallog.writer import EvalLog
    from emocaustics.models.http import strip_credentials

    monkeypatch.setenv("SOME_TOKEN", KEY)
    strip_credentials("https://bob:s3cret-pass-word%2F1@llm.example/v1")
    basic = base64.b64encode(b"bob:s3cret-pass-word/1").decode()
    log = EvalLog(tmp_path)
    text = log.redact(f"Basic {basic} s3cret-pass-word/1 bob:s3cret-pass-word/1 {json.dumps(KEY)}")
    assert "s3cret" not in text and basic not in text and KEY not in text


@pytest.mark.parametrize("status,kind", [(500, ErrorKind.SERVER), (503, ErrorKind.SERVER), (429, ErrorKind.THROTTLED),
                                         (403, ErrorKind.AUTH), (400, ErrorKind.BAD_REQUEST),
                                         (404, ErrorKind.BAD_REQUEST)])
def test_the_native_clients_set_the_kind_of_the_status(endpoint, monkeypatch, status, kind):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    url = endpoint(status)
    assert _ask(_openai(url)).kind is kind
    assert _ask(_anthropic(url)).kind is kind


def test_kinds_of_statuses_and_codes():
    of = ErrorKind.of_status
    assert [of(s) for s in (401, 403, 429, 500, 502, 529, 400, 408, 422, 200, None)] == [
        ErrorKind.AUTH, ErrorKind.AUTH, ErrorKind.THROTTLED, ErrorKind.SERVER, ErrorKind.SERVER, ErrorKind.SERVER,
        ErrorKind.BAD_REQUEST, ErrorKind.BAD_REQUEST, ErrorKind.BAD_REQUEST, ErrorKind.OTHER, ErrorKind.OTHER]
    assert of(400, {"code": "context_length_exceeded"}) is ErrorKind.CONTEXT_LENGTH  # OpenAI's
    assert of(400, {"param": "input_tokens", "code": 400}) is ErrorKind.CONTEXT_LENGTH  # vllm serve's
    assert of(400, {"param": "max_tokens"}) is of(400, "context_length_exceeded") is ErrorKind.BAD_REQUEST
    assert Completion("", error="x").kind is ErrorKind.OTHER and Completion("ok").kind is None


def test_a_connection_refused_is_a_connection_failure(monkeypatch):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    answer = _ask(_openai(f"http://127.0.0.1:{port}"))
    assert answer.kind is ErrorKind.CONNECTION


class _LiteLLMError(Exception):
    status_code = 0

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status or type(self).status_code


class _Connection(_LiteLLMError):
    status_code = 500  # as litellm's APIConnectionError says


class _Timeout(_Connection):
    status_code = 408  # litellm.Timeout derives from APIConnectionError


class _ContextWindow(_LiteLLMError):
    status_code = 400  # a BadRequestError


# litellm's exception types as `_failure` reads them (the real module costs 15 s to import on a busy machine)
_LITELLM = type("litellm", (), {"APIConnectionError": _Connection, "Timeout": _Timeout,
                                "ContextWindowExceededError": _ContextWindow})


def test_litellm_failures_have_kinds_from_the_exception_type(monkeypatch):
    from emocaustics.models.litellm_chat import LiteLLMChat

    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    llm = LiteLLMChat("openai/m", None, name="litellm:openai/m")
    cases = [(_LiteLLMError(f"bad key {KEY}", 401), ErrorKind.AUTH), (_LiteLLMError("slow", 429), ErrorKind.THROTTLED),
             (_ContextWindow("too long"), ErrorKind.CONTEXT_LENGTH), (_Timeout("late"), ErrorKind.TIMEOUT),
             (_LiteLLMError("boom", 503), ErrorKind.SERVER), (_Connection("refused"), ErrorKind.CONNECTION),
             (_LiteLLMError("bad", 400), ErrorKind.BAD_REQUEST), (ValueError("odd"), ErrorKind.CONNECTION)]
    for exc, kind in cases:
        c = llm._failure(_LITELLM, exc)
        assert c.kind is kind, (exc, c)
        assert KEY not in c.error


# ---- finding 11: litellm specs name their backend


@pytest.mark.parametrize("spec", ["litellm:gpt-4o", "litellm:/gpt-4o", "litellm:openai/", "litellm:gpt-4o@http://h/v1"])
def test_a_litellm_spec_without_its_backend_is_a_usage_error_when_parsed(spec):
    from emocaustics.models.spec import parse_llm_spec

    with pytest.raises(UsageError, match=r"expected litellm:PROVIDER/MODEL.*litellm:openai/gpt-4o"):
        parse_llm_spec(spec)


def test_a_litellm_spec_with_its_backend_parses():
    from emocaustics.models.spec import parse_llm_spec

    assert parse_llm_spec("litellm:openai/gpt-4o").model == "openai/gpt-4o"
    assert parse_llm_spec("litellm:azure/my-deploy?api_version=2024-06-01").model == "azure/my-deploy"


# ---- architecture: no failure is classified by its text (the scan: tests/core/test_error_text_scan.py)


def test_the_layers_that_decide_on_failures_use_no_regular_expression():
    for name in ("breaker", "chatclient", "batch", "comeback", "gate", "http", "openai_chat", "anthropic_chat",
                 "litellm_chat", "base"):
        tree = ast.parse((PACKAGE / "models" / f"{name}.py").read_text())
        imported = {a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                    for a in n.names} | {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert "re" not in imported, name
