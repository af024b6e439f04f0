"""The providers' error paths (issue 53's mutation area `errors`): the kind of a failed answer from its status, code or
exception (models/base.py's `ErrorKind`, models/http.py, anthropic's and litellm's `_failure`), what a failure says,
when and how long the JSON transport waits before it asks again, and the secrets no error shows (core/redact.py).
Fast: plain values, the SDKs' own exception types, a stand-in endpoint in this process for the transport."""

from __future__ import annotations

import asyncio
import base64
import email.utils
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from emocaustics.core import redact
from emocaustics.core.errors import UsageError
from emocaustics.models import http
from emocaustics.models.base import Completion, ErrorKind
from emocaustics.models.http import (HTTPFailure, JSONPoster, error_message, retry_delay, server_wait, should_retry,
                                     strip_credentials, url_auth)

K = ErrorKind


@pytest.mark.parametrize("status, code, kind", [
    (None, None, K.OTHER), (200, None, K.OTHER), (399, None, K.OTHER), (400, None, K.BAD_REQUEST),
    (401, None, K.AUTH), (403, None, K.AUTH), (404, None, K.BAD_REQUEST), (429, None, K.THROTTLED),
    (499, None, K.BAD_REQUEST), (500, None, K.SERVER), (501, None, K.SERVER), (599, None, K.SERVER),
    (429, False, K.THROTTLED), (400, {"code": "context_length_exceeded"}, K.CONTEXT_LENGTH),
    (None, {"code": "context_length_exceeded"}, K.CONTEXT_LENGTH), (400, {"param": "input_tokens"}, K.CONTEXT_LENGTH),
    (400, {"param": "input_text"}, K.CONTEXT_LENGTH), (413, {"param": "input_tokens"}, K.BAD_REQUEST),
    (400, {"param": "messages", "code": "other"}, K.BAD_REQUEST), (400, "context_length_exceeded", K.BAD_REQUEST),
])
def test_the_kind_of_a_status_and_code(status, code, kind):
    assert K.of_status(status, code) is kind


def test_the_kinds_words_are_the_records():
    assert [k.value for k in K] == ["connection", "timeout", "server", "throttled", "auth", "bad_request",
                                    "context_length", "answer", "other"]


def test_a_completion_with_an_error_is_scrubbed_and_has_a_kind(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "sk-abcdefgh-12345")
    c = Completion("", error="refused sk-abcdefgh-12345")
    assert (c.error, c.kind, c.ok) == ("refused [redacted]", K.OTHER, False)
    assert Completion("", error="x", kind=K.AUTH).kind is K.AUTH
    ok = Completion("sk-abcdefgh-12345")  # an answer is the model's: left as it is
    assert (ok.text, ok.error, ok.kind, ok.ok) == ("sk-abcdefgh-12345", None, None, True)


class Headers(dict):
    """Headers as aiohttp gives them: `headers[name]` raises KeyError where there is none."""


def test_the_servers_wait():
    assert server_wait(Headers({"retry-after-ms": "1500", "retry-after": "9"})) == 1.5
    assert server_wait(Headers({"retry-after-ms": "soon", "retry-after": "9"})) == 9.0
    assert server_wait(Headers({"retry-after": "2.5"})) == 2.5
    assert server_wait(Headers({})) is None
    assert server_wait(Headers({"retry-after": "not a date"})) is None
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 28.0 < server_wait(Headers({"retry-after": when})) <= 30.0


@pytest.mark.parametrize("wait, used", [(0.001, True), (60, True), (60.01, False), (0, False), (-1, False)])
def test_the_servers_wait_is_taken_up_to_a_minute(monkeypatch, wait, used):
    monkeypatch.setattr(http.random, "random", lambda: 0.0)
    assert retry_delay(2, Headers({"retry-after": str(wait)})) == (wait if used else 2.0)


@pytest.mark.parametrize("retries, jitter, delay", [
    (0, 0.0, 0.5), (1, 0.0, 1.0), (3, 0.0, 4.0), (4, 0.0, 8.0), (5, 0.0, 8.0), (10**6, 0.0, 8.0),
    (0, 1.0, 0.375), (4, 1.0, 6.0), (2, 0.5, 1.75),
])
def test_the_backoff(monkeypatch, retries, jitter, delay):
    monkeypatch.setattr(http.random, "random", lambda: jitter)
    assert retry_delay(retries) == delay and retry_delay(retries, Headers({})) == delay


@pytest.mark.parametrize("status, say, retry", [
    (400, "TRUE", True), (500, "False", False), (500, "maybe", True), (404, "maybe", False), (408, None, True),
    (409, None, True), (410, None, False), (429, "", True), (499, None, False), (500, None, True), (600, None, True),
])
def test_which_answers_are_asked_again(status, say, retry):
    assert should_retry(status, Headers({} if say is None else {"x-should-retry": say})) is retry


def test_the_servers_words():
    assert error_message({"error": {"message": "quota"}, "message": "other"}, "t") == "quota"
    assert error_message({"error": {"message": 5}}, "t") == "5"
    assert error_message({"error": {"message": ""}, "message": "top"}, "t") == "top"
    assert error_message({"error": {}}, " body ") == "body"
    assert error_message({"error": "plain"}, "t") == "plain"
    assert error_message({"message": 7}, "t") == "7"
    assert error_message({"message": ""}, "") == "(empty body)"
    assert error_message(["error"], " t ") == "t"


def test_url_credentials_become_a_basic_header_and_are_learned(monkeypatch):
    monkeypatch.setattr(redact, "_LEARNED", set())
    monkeypatch.setattr(http, "_URL_AUTH", {})
    assert strip_credentials("https://h.example/v1") == "https://h.example/v1" and http._URL_AUTH == {}
    clean = strip_credentials("https://us%40er:p%3Ass-word@h.example:8443/v1/")
    assert clean == "https://h.example:8443/v1/"
    header = "Basic " + base64.b64encode(b"us@er:p:ss-word").decode()
    assert url_auth("https://h.example:8443/v1") == {"Authorization": header}
    assert url_auth("https://h.example:8443/v1/") == {"Authorization": header}
    assert url_auth("https://other/v1") == {} and url_auth(None) == {}
    assert redact._LEARNED == {"us@er:p:ss-word", header[len("Basic "):], "p:ss-word"}


def test_url_credentials_with_an_at_sign_or_no_user(monkeypatch):
    monkeypatch.setattr(redact, "_LEARNED", set())
    monkeypatch.setattr(http, "_URL_AUTH", {})
    assert strip_credentials("https://u:p@ss-word@h.example/v1") == "https://h.example/v1"  # the last @ ends them
    assert url_auth("https://h.example/v1") == {"Authorization": "Basic " + base64.b64encode(b"u:p@ss-word").decode()}
    assert strip_credentials("https://:token-only-1@h2.example/API/X") == "https://h2.example/API/X"
    assert url_auth("https://h2.example/API/X/") == {"Authorization": "Basic " + base64.b64encode(b":token-only-1")
                                                     .decode()}  # no user: none made up; only the slash taken off
    assert strip_credentials("https://key-as-user-1@h3.example/v1") == "https://h3.example/v1"
    assert url_auth("https://h3.example/v1") == {"Authorization": "Basic " + base64.b64encode(b"key-as-user-1:")
                                                 .decode()}  # no password: none made up


def test_short_credentials_are_not_learned_as_secrets(monkeypatch):
    monkeypatch.setattr(redact, "_LEARNED", set())
    assert redact.learn_credentials("u", "pw") == "Basic " + base64.b64encode(b"u:pw").decode()  # 4 characters
    assert redact._LEARNED == {base64.b64encode(b"u:pw").decode()}  # the header's 8 are
    redact.learn_credentials("user", "pass1234")
    assert {"user:pass1234", "pass1234"} <= redact._LEARNED and "pass123" not in redact._LEARNED


def test_a_spec_as_a_message_shows_it():
    assert redact.redacted("openai:m@https://u:pw@h/v1?api_key=abc&model=x&Token=t&key=") == \
        "openai:m@https://u:***@h/v1?api_key=***&model=x&Token=***&key=***"
    assert redact.redacted("vllm:Qwen/Q?max_model_len=8&x-api-key=s") == "vllm:Qwen/Q?max_model_len=8&x-api-key=***"
    assert redact.redacted("https://h/v1?a=1") == "https://h/v1?a=1"


def test_the_secrets_a_process_knows(monkeypatch):
    monkeypatch.setattr(redact, "_LEARNED", {"learned-secret-1"})
    monkeypatch.setattr(redact, "KEY_VARIABLES", {"ODD_NAME"})
    env = {"ODD_NAME": " 12345678 ", "OPENAI_API_KEY": "sk-0123456789", "GH_TOKEN": "short", "HOME": "/home/someone",
           "my_password": "hunter2hunter2", "DB_CREDENTIALS": "c" * 30, "AUTH_HEADER": "Bearer xyzxyzxyzxyz",
           "PADDED_SECRET": " 1234567 ", "OTHER_NAME": "not-a-key-by-its-name", "X_KEY": "sk-0123456789"}
    assert redact.secrets(env) == ["c" * 30, "Bearer xyzxyzxyzxyz", "learned-secret-1", "hunter2hunter2",
                                   "sk-0123456789", "12345678"]
    monkeypatch.setenv("SOME_SECRET", "from-the-environment")
    assert "from-the-environment" in redact.secrets()


def test_every_form_of_a_secret_is_replaced():
    r = redact.Redactor(["ab\"cd/é-1234", "abc"])
    assert r('x ab"cd/é-1234 y') == "x [redacted] y"
    assert r(json.dumps({"k": 'ab"cd/é-1234'})) == '{"k": "[redacted]"}'  # JSON-escaped, non-ASCII as \u
    assert r(json.dumps({"k": 'ab"cd/é-1234'}, ensure_ascii=False)) == '{"k": "[redacted]"}'
    assert r("abcabc") == "[redacted][redacted]"
    # a secret inside a longer one: the longer is replaced first, whole (whatever their alphabetical order)
    assert redact.Redactor(["b-secret", "a-b-secret-long"])("x a-b-secret-long y") == "x [redacted] y"
    assert redact.Redactor([])("abc") == "abc"


def test_scrub_reads_the_secrets_now(monkeypatch):
    assert redact.scrub("key late-secret-99") == "key late-secret-99"
    monkeypatch.setenv("LATE_API_KEY", "late-secret-99")
    assert redact.scrub("key late-secret-99") == "key [redacted]"


def test_a_secret_key_in_a_spec_is_refused_naming_the_first():
    redact.refuse_secrets({"model": "x", "timeout": 3}, "spec")
    with pytest.raises(UsageError) as got:
        redact.refuse_secrets({"Token": "t", "API_KEY": "k", "model": "x"}, "openai:m@h?***")
    assert str(got.value).startswith("openai:m@h?***: 'API_KEY' would be stored with the run and printed; keys come "
                                     "from the environment only (OPENAI_API_KEY or EMOCAUSTICS_API_KEY, "
                                     "ANTHROPIC_API_KEY), or as https://USER:PASSWORD@HOST/... in the URL")
    assert "'t'" not in str(got.value) and "'k'" not in str(got.value)


# ---- the SDKs' exceptions


def _anthropic_errors():
    import anthropic
    import httpx

    request = httpx.Request("POST", "https://api.anthropic.com/v1/messages")

    def status(code: int, body) -> Exception:
        return anthropic.APIStatusError("message from the client", response=httpx.Response(code, request=request),
                                        body=body)

    return anthropic, request, status


def test_anthropic_failures():
    from emocaustics.models.anthropic_chat import _failure

    anthropic, request, status = _anthropic_errors()
    c = _failure(anthropic.APITimeoutError(request), 12.5)
    assert (c.error, c.kind) == ("timeout: no answer within 12.5s (after retries)", K.TIMEOUT)
    refused = anthropic.APIConnectionError(request=request)
    refused.__cause__ = ConnectionRefusedError()
    c = _failure(refused, 1)
    assert (c.error, c.kind) == ("connection error: ConnectionRefusedError (after retries)", K.CONNECTION)
    c = _failure(anthropic.APIConnectionError(message="dropped", request=request), 1)
    assert (c.error, c.kind) == ("connection error: dropped (after retries)", K.CONNECTION)
    c = _failure(status(400, {"error": {"type": "invalid_request_error", "message": "prompt is too long: 9 > 8"}}), 1)
    assert (c.error, c.kind) == ("HTTP 400 invalid_request_error: prompt is too long: 9 > 8", K.CONTEXT_LENGTH)
    c = _failure(status(413, {"error": {"type": "too_big", "message": "prompt is too long"}}), 1)
    assert c.kind is K.BAD_REQUEST  # the words count on a 400 only
    c = _failure(status(529, {"error": {"type": "overloaded_error", "message": "x" * 300}}), 1)
    assert (c.error, c.kind) == ("HTTP 529 overloaded_error: " + "x" * 200, K.SERVER)
    c = _failure(status(401, {"error": {"message": "bad key"}}), 1)
    assert (c.error, c.kind) == ("HTTP 401: bad key", K.AUTH)
    c = _failure(status(500, None), 1)
    assert (c.error, c.kind) == ("HTTP 500: message from the client", K.SERVER)
    c = _failure(status(429, {"error": "slow down"}), 1)
    assert (c.error, c.kind) == ("HTTP 429: slow down", K.THROTTLED)
    c = _failure(ValueError("y" * 300), 1)
    assert (c.error, c.kind) == ("ValueError: " + "y" * 200, K.OTHER)


def test_a_failure_carries_no_answer_text():
    """A failed Completion's text is "" (never None, never words of its own): the solvers and the records read it."""
    from emocaustics.models.anthropic_chat import _failure
    from emocaustics.models.litellm_chat import LiteLLMChat

    anthropic, request, status = _anthropic_errors()
    refused = anthropic.APIConnectionError(request=request)
    made = [_failure(e, 1) for e in (anthropic.APITimeoutError(request), refused, status(500, None), ValueError("v"))]
    llm = LiteLLMChat("openai/m", None, name="litellm:openai/m")
    made += [llm._failure(LITELLM, e) for e in (_Context("c", 400), _Timeout("t"), _Error("e", 503), _Error("n"))]
    assert [c.text for c in made] == [""] * 8 and all(c.error for c in made)


class _Error(Exception):
    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        if status is not None:
            self.status_code = status


class _Connection(_Error):
    pass


class _Timeout(_Connection):
    pass


class _Context(_Error):
    pass


LITELLM = type("litellm", (), {"APIConnectionError": _Connection, "Timeout": _Timeout,
                               "ContextWindowExceededError": _Context})


def test_litellm_failures():
    from emocaustics.models.litellm_chat import LiteLLMChat

    llm = LiteLLMChat("openai/m", None, name="litellm:openai/m")
    llm.timeout = 7.5
    cases = [
        (_Context("too long", 400), "HTTP 400 _Context: too long", K.CONTEXT_LENGTH),
        (_Timeout("late", 408), "timeout after 7.5 s: late", K.TIMEOUT),
        (_Error("z" * 400, 503), "HTTP 503 _Error: " + "z" * 300, K.SERVER),
        (_Error("bad", 400), "HTTP 400 _Error: bad", K.BAD_REQUEST),
        (_Error("redirect", 399), "connection error: _Error: redirect", K.CONNECTION),
        (_Connection("refused", 500), "connection error: _Connection: refused", K.CONNECTION),
        (_Error("no status"), "connection error: _Error: no status", K.CONNECTION),
        (_Error("text status", "500"), "connection error: _Error: text status", K.CONNECTION),
    ]
    for exc, error, kind in cases:
        c = llm._failure(LITELLM, exc)
        assert (c.error, c.kind) == (error, kind), exc


# ---- the JSON transport against a stand-in endpoint


class Endpoint(BaseHTTPRequestHandler):
    answers: list[tuple[int, dict, bytes]] = []
    seen: list[bytes] = []
    paths: list[str] = []  # the request line's target: a path, or the whole URL when asked as a proxy

    def do_POST(self):  # noqa: N802
        Endpoint.paths.append(self.path)
        Endpoint.seen.append(self.rfile.read(int(self.headers["Content-Length"])))
        status, headers, body = Endpoint.answers.pop(0) if len(Endpoint.answers) > 1 else Endpoint.answers[0]
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def endpoint():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    Endpoint.seen, Endpoint.paths = [], []
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/"
    finally:
        server.shutdown()
        server.server_close()


def _post(url: str, answers, *, max_retries: int = 0, retry_throttled: bool = True, timeout: float = 5, seen=None):
    Endpoint.answers = list(answers)
    got: list = []

    def on_response(status, headers):
        got.append(status)
        if seen is not None:
            seen.append(headers)

    async def go():
        poster = JSONPoster(url, {}, timeout=timeout, max_retries=max_retries, connections=2, retry_throttled=
                            retry_throttled, on_response=on_response)
        try:
            return await poster.post("/chat/completions", {"q": "é"})
        finally:
            await poster.close()

    try:
        return asyncio.run(go()), got
    except HTTPFailure as failure:
        return failure, got


FAST = {"retry-after-ms": "1"}


def test_an_answer_is_parsed_and_the_body_sent_as_json(endpoint):
    headers: list = []
    answer, statuses = _post(endpoint, [(200, {"x-ratelimit-remaining-requests": "7"}, b'{"a": [1]}')], seen=headers)
    assert answer == {"a": [1]} and statuses == [200] and json.loads(Endpoint.seen[0]) == {"q": "é"}
    assert Endpoint.paths == ["/v1/chat/completions"]  # the base URL's slash and the path's, one
    assert headers[0]["x-ratelimit-remaining-requests"] == "7"  # the rate limit reads the response's headers


def test_the_environments_proxy_carries_the_request(endpoint, monkeypatch):
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", endpoint.removesuffix("/v1/"))
    monkeypatch.setenv("http_proxy", endpoint.removesuffix("/v1/"))
    answer, _ = _post("http://upstream.invalid/v1", [(200, {}, b"[2]")])
    assert answer == [2] and Endpoint.paths == ["http://upstream.invalid/v1/chat/completions"]


def test_an_error_body_that_is_not_utf8_is_read_with_replacements(endpoint):
    failure, _ = _post(endpoint, [(500, {}, b"\xff\xfe broken")])
    assert (failure.kind, failure.reason) == (K.SERVER, "HTTP 500: \ufffd\ufffd broken")


def test_a_2xx_that_is_not_json_fails_at_once(endpoint):
    failure, statuses = _post(endpoint, [(200, {}, b"<html>"), (200, {}, b"{}")], max_retries=3)
    assert isinstance(failure, HTTPFailure) and failure.kind is K.OTHER and failure.status == 200
    assert failure.reason.startswith("invalid response body: ") and statuses == [200]


def test_an_error_answer_names_its_status_kind_and_words(endpoint):
    body = json.dumps({"error": {"message": "m" * 300, "code": "context_length_exceeded"}}).encode()
    failure, _ = _post(endpoint, [(400, {}, body)], max_retries=3)
    assert (failure.kind, failure.status, failure.reason) == (K.CONTEXT_LENGTH, 400, "HTTP 400: " + "m" * 200)
    assert failure.body == json.loads(body) and len(Endpoint.seen) == 1  # a 400 is not asked again
    failure, _ = _post(endpoint, [(401, {}, b"no key")])
    assert (failure.kind, failure.reason, failure.body) == (K.AUTH, "HTTP 401: no key", None)
    failure, _ = _post(endpoint, [(404, {}, b'{"error": "gone"}')])
    assert (failure.kind, failure.reason) == (K.BAD_REQUEST, "HTTP 404: gone")
    failure, _ = _post(endpoint, [(400, {}, b'{"error": {"code": "context_length_exceeded"}}')])
    assert failure.kind is K.CONTEXT_LENGTH


def test_a_server_error_is_asked_again_until_the_retries_are_spent(endpoint):
    answers = [(503, FAST, b"busy"), (503, FAST, b"busy"), (200, {}, b"[1]")]
    answer, statuses = _post(endpoint, answers, max_retries=2)
    assert answer == [1] and statuses == [503, 503, 200]
    failure, statuses = _post(endpoint, [(502, FAST, b"")] * 4, max_retries=2)
    assert (failure.kind, failure.reason, statuses) == (K.SERVER, "HTTP 502: (empty body)", [502, 502, 502])


def test_the_wait_before_asking_again_reads_the_answers_headers(endpoint, monkeypatch):
    asked: list = []
    monkeypatch.setattr(http, "retry_delay", lambda retries, headers=None: asked.append((retries, headers)) or 0.0)
    answer, _ = _post(endpoint, [(503, {"retry-after": "3"}, b""), (503, {"retry-after": "4"}, b""), (200, {}, b"5")],
                      max_retries=2)
    assert answer == 5 and [(n, h["retry-after"]) for n, h in asked] == [(0, "3"), (1, "4")]


def test_a_throttled_answer_goes_back_at_once_when_the_rate_limit_requeues_it(endpoint):
    failure, statuses = _post(endpoint, [(429, FAST, b"slow"), (200, {}, b"1")], max_retries=3, retry_throttled=False)
    assert (failure.kind, statuses) == (K.THROTTLED, [429])
    answer, statuses = _post(endpoint, [(429, FAST, b"slow"), (200, {}, b"1")], max_retries=3)
    assert (answer, statuses) == (1, [429, 200])
    failure, statuses = _post(endpoint, [(503, {**FAST, "x-should-retry": "false"}, b"")], max_retries=3,
                              retry_throttled=False)
    assert statuses == [503]


def test_no_answer_in_time_is_a_timeout(endpoint, monkeypatch):
    failure, _ = _post("http://127.0.0.1:9/v1", [(200, {}, b"")], timeout=0.25)
    assert failure.kind is K.CONNECTION and failure.reason == "connection error: ClientConnectorError (after retries)"
    import aiohttp

    monkeypatch.setattr(aiohttp.ClientSession, "post", lambda *a, **k: _Raising())
    monkeypatch.setattr(http, "retry_delay", lambda *a: 0.0)
    _Raising.entered = 0
    failure, _ = _post(endpoint, [(200, {}, b"")], timeout=0.25, max_retries=2)
    assert (failure.kind, failure.reason) == (K.TIMEOUT, "timeout: no answer within 0.25s (after retries)")
    assert _Raising.entered == 3  # asked again, as a dropped connection is


class _Raising:
    entered = 0

    async def __aenter__(self):
        _Raising.entered += 1
        raise asyncio.TimeoutError

    async def __aexit__(self, *exc):
        return False
