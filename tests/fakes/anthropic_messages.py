"""A stand-in for Anthropic's Messages API (`POST /v1/messages`) on 127.0.0.1.

It is NOT a model: an answer is made up from the request (a JSON instance of `output_config.format.schema` when the
request has one, else `answer_text(body)`, which a test may replace). It puts the real API's network behaviour in
front of our client, at configurable rates, in a scripted order or per marker text found in the messages:

- "429"  rate_limit_error with `retry-after` (seconds, as the API sends it; fractional here so tests stay fast)
- "500"  api_error;  "529"  overloaded_error (the API's "overloaded" status)
- "hang" no answer until the client's timeout;  "drop" connection closed without a status line
- "invalid" a 200 whose text is not JSON;  "cut" a 200 stopped at max_tokens mid-answer
- "ok"   a message: {"type": "message", "content": [{"type": "text", "text": ...}], "stop_reason": "end_turn",
         "usage": {"input_tokens", "output_tokens", "cache_read_input_tokens", ...}}

It checks what the real API checks first (the key -- x-api-key or Authorization: Bearer -- when `expected_key` is
set -> 401 authentication_error; a missing anthropic-version header -> 400), can reject `output_config` or
`temperature` with a 400 invalid_request_error naming them (endpoints without structured output / sampling
parameters), and records every request (behaviour, arrival time, body, the key sent, peak concurrency).

    with FakeAnthropicServer(AnthropicFaults(rate_429=0.2, seed=1)) as server:
        llm = AnthropicChatLLM("claude-fake", server.base_url, timeout=0.5)
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
from typing import Any, Callable

from fakes.openai_chat import example_of

BEHAVIOURS = ("ok", "429", "500", "529", "hang", "drop", "invalid", "cut")
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
               429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}


@dataclass
class AnthropicFaults:
    """Probability of each fault per HTTP request (the rest answer); `seed` makes a run repeatable."""

    rate_429: float = 0.0
    rate_500: float = 0.0
    rate_529: float = 0.0
    rate_hang: float = 0.0
    rate_drop: float = 0.0
    rate_invalid: float = 0.0
    retry_after: float = 0.02  # seconds, sent as `retry-after` with 429 and 529
    retry_after_on_500: bool = False  # also with 500 (keeps tests of errors that never clear fast)
    hang_seconds: float = 30.0
    latency: float = 0.0
    seed: int = 0


@dataclass(frozen=True)
class Arrival:
    at: float
    behaviour: str
    marker: str | None
    body_key: str  # canonical JSON of the body: the client's own retries resend it byte for byte


class FakeAnthropicServer:
    def __init__(self, faults: AnthropicFaults | None = None, *, script: list[str] | None = None,
                 routes: dict[str, str] | None = None, expected_key: str | None = None,
                 supports_output_config: bool = True, supports_temperature: bool = True,
                 answer_text: Callable[[dict[str, Any]], str] | None = None) -> None:
        self.faults = faults or AnthropicFaults()
        self.script = list(script or [])
        self.routes = dict(routes or {})
        bad = {b for b in [*self.script, *self.routes.values()] if b not in BEHAVIOURS}
        if bad:
            raise ValueError(f"unknown behaviours {bad}; allowed: {BEHAVIOURS}")
        self.expected_key = expected_key
        self.supports_output_config = supports_output_config
        self.supports_temperature = supports_temperature
        self.custom_answer = answer_text
        self.arrivals: list[Arrival] = []
        self.bodies: list[dict[str, Any]] = []
        self.api_keys: list[str] = []
        self.inflight = 0
        self.max_inflight = 0
        self._rng = random.Random(self.faults.seed)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None

    # -- lifecycle ---------------------------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def start(self) -> "FakeAnthropicServer":
        server = self

        class Handler(_Handler):
            fake = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, name="fake-anthropic", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def __enter__(self) -> "FakeAnthropicServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def counts(self) -> Counter[str]:
        with self._lock:
            return Counter(a.behaviour for a in self.arrivals)

    def arrivals_for(self, marker: str) -> list[Arrival]:
        with self._lock:
            return [a for a in self.arrivals if a.marker == marker]

    # -- behaviour ---------------------------------------------------------------------------------------------------
    def choose(self, body: dict[str, Any]) -> tuple[str, str | None]:
        text = json.dumps(body.get("messages", []), ensure_ascii=False) + json.dumps(body.get("system", ""))
        marker = next((m for m in self.routes if m in text), None)
        with self._lock:
            if marker is not None:
                behaviour = self.routes[marker]
            elif self.script:
                behaviour = self.script.pop(0)
            else:
                f, x, behaviour = self.faults, self._rng.random(), "ok"
                for name, rate in (("429", f.rate_429), ("500", f.rate_500), ("529", f.rate_529),
                                   ("hang", f.rate_hang), ("drop", f.rate_drop), ("invalid", f.rate_invalid)):
                    if x < rate:
                        behaviour = name
                        break
                    x -= rate
            self.arrivals.append(Arrival(time.monotonic(), behaviour, marker, json.dumps(body, sort_keys=True)))
            return behaviour, marker

    def answer_text(self, body: dict[str, Any]) -> str:
        if self.custom_answer is not None:
            return self.custom_answer(body)
        last = next((m["content"] for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
        if isinstance(last, list):
            last = " ".join(b.get("text", "") for b in last if isinstance(b, dict))
        fmt = (body.get("output_config") or {}).get("format") or {}
        if fmt.get("type") == "json_schema":
            return json.dumps(example_of(fmt["schema"], last[-16:]), ensure_ascii=False)
        return "Looking at the candidates, the first one came directly before the event.\nAnswer: A"


class _Handler(BaseHTTPRequestHandler):
    fake: FakeAnthropicServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", f"req_fake_{len(self.fake.arrivals)}")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def api_key(self) -> str:
        """The key as sent: `x-api-key`, or `Authorization: Bearer` (which newer clients send)."""
        auth = self.headers.get("Authorization", "")
        return self.headers.get("x-api-key") or (auth[7:] if auth.startswith("Bearer ") else "")

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        self._send(status, {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"),
                                                       "message": message}}, headers)

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        fake = self.fake
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
        with fake._lock:
            fake.inflight += 1
            fake.max_inflight = max(fake.max_inflight, fake.inflight)
            fake.api_keys.append(self.api_key())
        try:
            self._handle(raw)
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with fake._lock:
                fake.inflight -= 1

    def _handle(self, raw: bytes) -> None:
        fake = self.fake
        if self.path.split("?")[0].rstrip("/") != "/v1/messages":
            self._error(404, f"no route {self.path}")
            return
        if fake.expected_key is not None and self.api_key() != fake.expected_key:
            self._error(401, "invalid x-api-key")
            return
        if not self.headers.get("anthropic-version"):
            self._error(400, "anthropic-version header is required")
            return
        body = json.loads(raw or b"{}")
        with fake._lock:
            fake.bodies.append(body)
        if not fake.supports_output_config and "output_config" in body:
            self._error(400, "output_config: Extra inputs are not permitted")
            return
        if not fake.supports_temperature and ("temperature" in body or "top_p" in body):
            self._error(400, "temperature: Extra inputs are not permitted")
            return
        if not isinstance(body.get("max_tokens"), int) or not body.get("messages"):
            self._error(400, "max_tokens and messages are required")
            return
        behaviour, _ = fake.choose(body)
        f = fake.faults
        if f.latency:
            time.sleep(f.latency)
        retry = {"retry-after": f"{f.retry_after:g}"}
        if behaviour == "429":
            self._error(429, "Number of request tokens has exceeded your per-minute rate limit", retry)
            return
        if behaviour == "500":
            self._error(500, "Internal server error", retry if f.retry_after_on_500 else None)
            return
        if behaviour == "529":
            self._error(529, "Overloaded", retry)
            return
        if behaviour == "drop":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if behaviour == "hang":
            fake._stop.wait(f.hang_seconds)
            if fake._stop.is_set():
                return
        text = fake.answer_text(body)
        stop = "end_turn"
        if behaviour == "invalid":
            text = "I am sorry, I cannot answer in JSON. " + text[:3]
        elif behaviour == "cut":
            text, stop = text[: max(1, len(text) // 2)], "max_tokens"
        prompt_chars = sum(len(json.dumps(m.get("content", ""))) for m in body.get("messages", []))
        self._send(200, {
            "id": f"msg_fake_{len(fake.arrivals)}", "type": "message", "role": "assistant",
            "model": body.get("model", "claude-fake"),
            "content": [{"type": "text", "text": text}],
            "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": prompt_chars // 4 + len(str(body.get("system", ""))) // 4,
                      "output_tokens": max(1, len(text) // 4), "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0},
        })
