"""A stand-in for a remote OpenAI-compatible chat API (DeepSeek, GLM, a hosted `vllm serve`), on 127.0.0.1.

It is NOT a model: answers are made up from the request (a JSON instance of the requested schema whose strings echo
the last user message). It exists to put real network behaviour in front of our client, at configurable rates or in a
scripted order: 429 with Retry-After, 500, hangs past the client's timeout, dropped connections, truncated JSON (sent
with finish_reason "length", as an answer cut at max_tokens) and invalid JSON content, and an endpoint that rejects
`response_format` json_schema. It records what it saw (per-request behaviour, peak concurrency, Authorization headers)
so tests can check retries, the concurrency limit and that the
key was sent to the server (and nowhere else).

    with FakeOpenAIServer(Faults(rate_429=0.2, seed=1)) as server:
        llm = OpenAIChatLLM("fake-model", server.base_url, timeout=0.5)
"""

from __future__ import annotations

import json
import random
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

BEHAVIOURS = ("ok", "429", "500", "hang", "drop", "truncated", "invalid")


@dataclass
class Faults:
    """Probability of each fault per HTTP request (the rest answer correctly); `seed` makes a run repeatable."""

    rate_429: float = 0.0
    rate_500: float = 0.0
    rate_hang: float = 0.0
    rate_drop: float = 0.0
    rate_truncated: float = 0.0
    rate_invalid: float = 0.0
    retry_after_ms: int = 20  # sent with 429 and 500 (`retry-after-ms`, as OpenAI does) so tests stay fast
    hang_seconds: float = 30.0
    latency: float = 0.0  # seconds every answer takes (lets concurrency build up)
    # A provider's rate limit: above this many requests in any 1 s window, 429 with the wait until the window has
    # room (`retry-after-ms`, and `Retry-After` in whole seconds); rejected requests do not count. 0: no limit.
    max_rps: float = 0.0
    seed: int = 0


def example_of(schema: dict[str, Any], text: str) -> Any:
    """A small instance of a JSON schema; strings echo `text` (bounded by maxLength)."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: example_of(v, text) for k, v in props.items()}
    if kind == "array":
        n = max(1, int(schema.get("minItems", 1)))
        return [example_of(schema.get("items", {"type": "string"}), text) for _ in range(n)]
    if kind == "string":
        return text[: int(schema.get("maxLength", 16))]
    if kind == "integer":
        return int(schema.get("minimum", 0))
    if kind == "number":
        return float(schema.get("minimum", 0))
    if kind == "boolean":
        return True
    return None


class FakeOpenAIServer:
    handler: type  # the request handler (set below the class: `_Handler`; the Azure stand-in's checks more first)

    def __init__(
        self,
        faults: Faults | None = None,
        *,
        supports_json_schema: bool = True,
        script: list[str] | None = None,
        expected_key: str | None = None,
    ) -> None:
        self.faults = faults or Faults()
        self.supports_json_schema = supports_json_schema
        self.script = list(script or [])  # behaviours for the first requests, in order, before the rates apply
        self.expected_key = expected_key
        self.seen: list[str] = []  # behaviour of every request, in arrival order
        self.auth_headers: list[str] = []
        self.bodies: list[dict[str, Any]] = []
        self.inflight = 0
        self.max_inflight = 0
        self.accepted: list[float] = []  # monotonic times of the requests the rate limit let through
        self._rng = random.Random(self.faults.seed)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> "FakeOpenAIServer":
        server = self

        class Handler(self.handler):  # type: ignore[name-defined]
            fake = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()  # releases hanging handlers
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def counts(self) -> Counter[str]:
        with self._lock:
            return Counter(self.seen)

    # -- behaviour ------------------------------------------------------------------------------------------
    def _over_limit(self) -> float | None:
        """None: the request is within `max_rps` (and counted); else seconds until the window has room."""
        now = time.monotonic()
        with self._lock:
            recent = [t for t in self.accepted[-int(self.faults.max_rps) - 1:] if now - t < 1.0]
            if len(recent) >= self.faults.max_rps:
                self.seen.append("429-limit")
                return recent[0] + 1.0 - now
            self.accepted.append(now)
            return None

    def _choose(self) -> str:
        with self._lock:
            if self.script:
                behaviour = self.script.pop(0)
            else:
                f, x, behaviour = self.faults, self._rng.random(), "ok"
                for name, rate in (("429", f.rate_429), ("500", f.rate_500), ("hang", f.rate_hang),
                                   ("drop", f.rate_drop), ("truncated", f.rate_truncated), ("invalid", f.rate_invalid)):
                    if x < rate:
                        behaviour = name
                        break
                    x -= rate
            self.seen.append(behaviour)
            return behaviour

    def answer_text(self, body: dict[str, Any]) -> str:
        last = next((m.get("content", "") for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            return json.dumps(example_of(fmt["json_schema"]["schema"], last), ensure_ascii=False)
        # Plain mode: what chat models tend to send, JSON inside a fence with chatter and a trailing comma.
        return f'好的，结果如下：\n```json\n{{"answer": {json.dumps(last[:16], ensure_ascii=False)},}}\n```'


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAIServer
    protocol_version = "HTTP/1.1"  # keep-alive, like real endpoints

    def log_message(self, format: str, *args: Any) -> None:  # quiet; tests read server.seen instead
        pass

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        fake = self.fake
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
        with fake._lock:
            fake.inflight += 1
            fake.max_inflight = max(fake.max_inflight, fake.inflight)
            fake.auth_headers.append(self.headers.get("Authorization", ""))
        try:
            self._handle(raw)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout) before we answered
        finally:
            with fake._lock:
                fake.inflight -= 1

    def _handle(self, raw: bytes) -> None:
        fake = self.fake
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        if fake.expected_key is not None and self.headers.get("Authorization") != f"Bearer {fake.expected_key}":
            self._send(401, {"error": {"message": "invalid api key"}})
            return
        body = json.loads(raw or b"{}")
        with fake._lock:
            fake.bodies.append(body)
        if not fake.supports_json_schema and body.get("response_format"):
            self._send(400, {"error": {"message": "response_format json_schema is not supported by this endpoint"}})
            return
        f = fake.faults
        if f.max_rps:
            wait = fake._over_limit()
            if wait is not None:
                self._send(429, {"error": {"message": "rate limit reached for requests", "type": "requests"}},
                           {"retry-after-ms": str(max(1, int(wait * 1000))), "Retry-After": str(max(1, round(wait))),
                            # as OpenAI's own rate-limit answers: the limit, nothing left, when it resets
                            "x-ratelimit-limit-requests": str(int(f.max_rps)), "x-ratelimit-remaining-requests": "0",
                            "x-ratelimit-reset-requests": f"{max(1, int(wait * 1000))}ms"})
                return
        behaviour = fake._choose()
        if f.latency:
            time.sleep(f.latency)
        retry = {"retry-after-ms": str(f.retry_after_ms), "Retry-After": str(max(1, f.retry_after_ms // 1000))}
        if behaviour == "429":
            self._send(429, {"error": {"message": "rate limit reached", "type": "rate_limit"}}, retry)
            return
        if behaviour == "500":
            self._send(500, {"error": {"message": "internal server error"}}, retry)
            return
        if behaviour == "drop":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)  # no status line at all: the client sees a dropped connection
            return
        if behaviour == "hang":
            fake._stop.wait(f.hang_seconds)
            if fake._stop.is_set():
                return
        text = fake.answer_text(body)
        finish = "stop"
        if behaviour == "truncated":
            text = text[: max(1, len(text) * 3 // 4)]  # cut like a max_tokens stop, inside a string
            finish = "length"  # as a real endpoint reports an answer cut at max_tokens
        elif behaviour == "invalid":
            text = "抱歉，我无法给出 JSON。" + text[:3]
        self._send(
            200,
            {
                "id": f"chatcmpl-{len(fake.seen)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "fake"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
                "usage": {
                    "prompt_tokens": sum(len(m.get("content", "")) for m in body.get("messages", [])),
                    "completion_tokens": len(text),
                    "total_tokens": 0,
                },
            },
        )


FakeOpenAIServer.handler = _Handler
