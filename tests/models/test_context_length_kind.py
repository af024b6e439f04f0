"""A prompt over the model's context is a failure of kind `ErrorKind.CONTEXT_LENGTH`, set by the client that sees it
(issue 54 item 2), and the solvers report it (`ContextExceeded`, never retried) from the kind alone: the servers'
messages here hold none of the words a text match would look for.

The HTTP clients talk to a stand-in endpoint (http.server in a thread) that answers every POST with one status and body.
"""

from __future__ import annotations

import asyncio
import json
import pickle
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest
from pydantic import BaseModel

from emocaustics.models.base import ChatRequest, Completion, ErrorKind, Sampling
from emocaustics.solve.ask import Ask, Asker, ContextExceeded, StepFailed

REQUEST = ChatRequest(messages=({"role": "user", "content": "hi"},), sampling=Sampling(max_tokens=8))
# vLLM's server (vllm/entrypoints/serve/exception_handling/error_response.py) for a VLLMValidationError raised by its
# renderer's length checks (vllm/renderers/params.py): type BadRequestError, the parameter it names, code 400.
VLLM_BODY = {"error": {"message": "rejected", "type": "BadRequestError", "param": "input_tokens", "code": 400}}
OPENAI_BODY = {"error": {"message": "rejected", "type": "invalid_request_error", "param": "messages",
                         "code": "context_length_exceeded"}}
ANTHROPIC_BODY = {"type": "error", "error": {"type": "invalid_request_error",
                                             "message": "prompt is too long: 208424 tokens > 200000 maximum"}}


class _Answer(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.posts += 1  # type: ignore[attr-defined]
        raw = json.dumps(self.server.body).encode()  # type: ignore[attr-defined]
        self.send_response(self.server.status)  # type: ignore[attr-defined]
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def endpoint():
    """`start(status, body)` -> the stand-in server (its base URL in `.url`, the POSTs it got in `.posts`)."""
    servers: list[ThreadingHTTPServer] = []

    def start(status: int, body: dict) -> ThreadingHTTPServer:
        srv = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
        srv.status, srv.body, srv.posts = status, body, 0  # type: ignore[attr-defined]
        srv.url = f"http://127.0.0.1:{srv.server_address[1]}"  # type: ignore[attr-defined]
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def _openai(url: str):
    from emocaustics.models.openai_chat import OpenAIChatLLM

    return OpenAIChatLLM("m", url + "/v1", max_retries=0, timeout=5, json_mode="plain")


def _ask(llm) -> Completion:
    async def go():
        try:
            return (await llm.generate([REQUEST]))[0]
        finally:
            await llm.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("body", [VLLM_BODY, OPENAI_BODY], ids=["vllm-serve", "openai"])
def test_the_openai_compatible_client_sets_the_kind_from_the_servers_fields(endpoint, body):
    answer = _ask(_openai(endpoint(400, body).url))
    assert answer.kind is ErrorKind.CONTEXT_LENGTH and "rejected" in answer.error


@pytest.mark.parametrize("status,param", [(400, "max_tokens"), (400, None), (422, "input_tokens")])
def test_other_refusals_are_bad_requests(endpoint, status, param):
    body = {"error": {"message": "This model's maximum context length is 4096 tokens", "type": "BadRequestError",
                      "param": param, "code": status}}
    assert _ask(_openai(endpoint(status, body).url)).kind is ErrorKind.BAD_REQUEST


class _Item(BaseModel):
    x: int


_SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}


def _solve(llm) -> None:
    async def go():
        try:
            await Asker(llm, retries=2).ask(Ask(step="window 1", user="hi", model=_Item, schema=_SCHEMA))
        finally:
            if hasattr(llm, "aclose"):
                await llm.aclose()

    asyncio.run(go())


def test_the_solver_reports_a_context_overflow_from_the_kind_alone_and_asks_once(endpoint):
    srv = endpoint(400, VLLM_BODY)
    with pytest.raises(ContextExceeded, match="window 1: prompt exceeds the model's context: HTTP 400: rejected"):
        _solve(_openai(srv.url))
    assert srv.posts == 1  # never re-asked


class _Scripted:
    def __init__(self, answer: Completion) -> None:
        self.answer, self.calls = answer, 0

    async def generate(self, requests):
        self.calls += 1
        return [self.answer for _ in requests]


def test_the_words_of_a_context_overflow_without_its_kind_are_an_ordinary_failure():
    llm = _Scripted(Completion("", error="This model's maximum context length is 4096 tokens",
                               kind=ErrorKind.BAD_REQUEST))
    with pytest.raises(StepFailed) as err:
        _solve(llm)
    assert not isinstance(err.value, ContextExceeded) and llm.calls == 3  # asked again, as any failure


# ---- Anthropic


def _anthropic(url: str):
    pytest.importorskip("anthropic")
    from emocaustics.models.anthropic_chat import AnthropicChatLLM

    return AnthropicChatLLM("claude-x", url, max_retries=0, timeout=5, json_mode="plain")


def test_anthropic_prompt_too_long_is_a_context_overflow(endpoint):
    assert _ask(_anthropic(endpoint(400, ANTHROPIC_BODY).url)).kind is ErrorKind.CONTEXT_LENGTH
    other = {"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: too large"}}
    assert _ask(_anthropic(endpoint(400, other).url)).kind is ErrorKind.BAD_REQUEST


def test_anthropic_answer_cut_at_the_context_window_is_a_context_overflow():
    from emocaustics.models.anthropic_chat import completion_from

    usage = SimpleNamespace(input_tokens=10, output_tokens=0, cache_read_input_tokens=0, cache_creation_input_tokens=0)
    cut = SimpleNamespace(content=[], usage=usage, stop_reason="model_context_window_exceeded")
    assert completion_from(cut, REQUEST).kind is ErrorKind.CONTEXT_LENGTH
    done = SimpleNamespace(content=[SimpleNamespace(type="text", text="hello")], usage=usage,
                           stop_reason="model_context_window_exceeded")
    assert completion_from(done, REQUEST).ok  # an answer that came whole is an answer


# ---- the local vLLM replica


class _Tokenizer:
    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True):
        return " ".join(m["content"] for m in messages)

    def encode(self, text, add_special_tokens=False):
        return list(range(len(text.split())))


def test_the_vllm_replica_tells_a_prompt_over_max_model_len_by_its_tokens_before_the_engine():
    from emocaustics.models.vllm_actor import VLLMEngineActor

    actor = VLLMEngineActor("m", {}, "vllm:m")
    actor._engine, actor._tokenizer, actor._max_len = object(), _Tokenizer(), 8  # an engine never reached
    long = ChatRequest(messages=({"role": "user", "content": "w " * 8},))
    [c] = asyncio.run(actor.generate([long]))
    assert c.kind is ErrorKind.CONTEXT_LENGTH and c.prompt_tokens == 8
    assert pickle.loads(pickle.dumps(c)).kind is ErrorKind.CONTEXT_LENGTH  # as Ray ships it to the driver
