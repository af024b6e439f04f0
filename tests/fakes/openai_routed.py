"""The fake OpenAI-compatible endpoint (fakes/openai_chat.py) with per-dialogue faults and arrival times.

Stands in for a remote chat API that misbehaves for some requests only. `routes` maps a marker text (for example the
first sentence of a dialogue, which is in every prompt about that dialogue) to the behaviour that every request
carrying it gets: "429", "500", "hang", "drop", "invalid", "truncated" or "ok". Requests without a marker fall back to
the base server's rates (`Faults`). Every request is logged with its arrival time, marker and behaviour, so a test can
count attempts per dialogue and measure the back-off between retries of the same request.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any

from fakes.openai_chat import BEHAVIOURS, FakeOpenAIServer, Faults, _Handler


@dataclass(frozen=True)
class Arrival:
    at: float  # time.monotonic() when the request was read
    marker: str | None  # the route that matched, if any
    behaviour: str
    body_key: str  # the request body as canonical JSON: client-level retries resend it byte for byte


class RoutedFakeServer(FakeOpenAIServer):
    def __init__(self, faults: Faults | None = None, *, routes: dict[str, str] | None = None, **kw: Any) -> None:
        super().__init__(faults, **kw)
        self.routes = dict(routes or {})
        bad = {b for b in self.routes.values() if b not in BEHAVIOURS}
        if bad:
            raise ValueError(f"unknown behaviours {bad}; allowed: {BEHAVIOURS}")
        self.arrivals: list[Arrival] = []
        self._local = threading.local()  # the body of the request this handler thread is serving

    def start(self) -> "RoutedFakeServer":
        super().start()
        assert self._httpd is not None
        base = self._httpd.RequestHandlerClass
        server = self

        class Routed(base):  # type: ignore[misc, valid-type]
            def _handle(self, raw: bytes) -> None:
                try:
                    server._local.body = json.loads(raw or b"{}")
                except ValueError:
                    server._local.body = {}
                _Handler._handle(self, raw)

        self._httpd.RequestHandlerClass = Routed
        return self

    def _choose(self) -> str:
        body = getattr(self._local, "body", {}) or {}
        text = json.dumps(body.get("messages", []), ensure_ascii=False)
        marker = next((m for m in self.routes if m in text), None)
        if marker is None:
            behaviour = super()._choose()
        else:
            behaviour = self.routes[marker]
            with self._lock:
                self.seen.append(behaviour)
        with self._lock:
            self.arrivals.append(Arrival(time.monotonic(), marker, behaviour,
                                         json.dumps(body, sort_keys=True, ensure_ascii=False)))
        return behaviour

    def arrivals_for(self, marker: str | None) -> list[Arrival]:
        with self._lock:
            return [a for a in self.arrivals if a.marker == marker]

    def retry_gaps(self, marker: str | None) -> list[float]:
        """Seconds between consecutive arrivals of the same body (a client-level retry) for one route."""
        last: dict[str, float] = {}
        gaps = []
        for a in self.arrivals_for(marker):
            if a.body_key in last:
                gaps.append(a.at - last[a.body_key])
            last[a.body_key] = a.at
        return gaps
