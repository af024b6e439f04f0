"""A stand-in for a hosted OpenAI-compatible chat endpoint (a `vllm serve` or a provider's API) with a fixed per-call
latency and a limited number of slots, for benchmarks that measure *our* side of a run.

It is NOT a model. Each answer is a small instance of the requested JSON schema whose strings echo the last user
message, so every extraction method parses it and goes on to its next step. What it stands in for is the timing of a
real server: a call holds one of `slots` for `latency` seconds; calls beyond the slots queue (first come, first
served) as they do in a real server's scheduler, so the server's capacity is `slots / latency` calls per second.

It records what a benchmark needs to judge the client: the arrival time of the first request, the time the last
answer left, the seconds during which at least one call was being served (busy), peak calls in service and waiting.

    python -m benchmarks.standin_server --latency 0.2 --slots 256 [--port 0]
        prints `URL http://127.0.0.1:PORT/v1` once it listens; GET /stats, POST /reset.

It runs in its own process (its asyncio loop must not share a GIL with the client it measures).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any


def schema_instance(schema: dict[str, Any], text: str) -> Any:
    """A small valid instance of a JSON schema: first enum value, `minItems` items, strings echo `text`."""
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return schema_instance(schema[key][0], text)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        return {k: schema_instance(v, text) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        n = max(1, int(schema.get("minItems", 1)))
        return [schema_instance(schema.get("items", {"type": "string"}), text) for _ in range(n)]
    if kind == "string":
        return text[: int(schema.get("maxLength", 16))]
    if kind == "integer":
        return int(schema.get("minimum", 0))
    if kind == "number":
        return float(schema.get("minimum", 0))
    if kind == "boolean":
        return True
    return None


class Standin:
    def __init__(self, latency: float, slots: int) -> None:
        self.latency, self.slots = latency, slots
        self.reset()

    def reset(self) -> None:
        self.sem = asyncio.Semaphore(self.slots)
        self.calls = 0
        self.first_request: float | None = None  # epoch seconds
        self.last_answer: float | None = None
        self.serving = self.waiting = self.max_serving = self.max_waiting = 0
        self.busy = 0.0  # seconds with at least one call in service
        self._busy_since: float | None = None
        self.cpu0 = time.process_time()  # this server's own CPU (it shares the machine with the client it measures)
        self.in_service_by_second: list[float] = []  # mean calls in service per second since the first request

    def stats(self) -> dict[str, Any]:
        busy = self.busy + (time.time() - self._busy_since if self._busy_since is not None else 0.0)
        span = (self.last_answer - self.first_request) if self.first_request and self.last_answer else 0.0
        return {"latency": self.latency, "slots": self.slots, "calls": self.calls,
                "first_request_epoch": self.first_request, "last_answer_epoch": self.last_answer,
                "busy_span_seconds": round(span, 3), "busy_seconds": round(busy, 3),
                "max_in_service": self.max_serving, "max_waiting": self.max_waiting,
                "server_cpu_seconds": round(time.process_time() - self.cpu0, 3),
                "mean_in_service_by_second": [round(x, 1) for x in self.in_service_by_second]}

    def _account(self, start: float, end: float) -> None:
        """Add one call's service interval to the per-second in-service means (seconds since the first request)."""
        a, b = start - (self.first_request or start), end - (self.first_request or start)
        while a < b:
            sec = int(a)
            while len(self.in_service_by_second) <= sec:
                self.in_service_by_second.append(0.0)
            step = min(b, sec + 1) - a
            self.in_service_by_second[sec] += step
            a += step

    async def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        now = time.time()
        if self.first_request is None:
            self.first_request = now
        self.waiting += 1
        self.max_waiting = max(self.max_waiting, self.waiting)
        async with self.sem:
            self.waiting -= 1
            if self.serving == 0:
                self._busy_since = time.time()
            self.serving += 1
            self.max_serving = max(self.max_serving, self.serving)
            started = time.time()
            try:
                await asyncio.sleep(self.latency)
            finally:
                self._account(started, time.time())
                self.serving -= 1
                self.calls += 1
                self.last_answer = time.time()
                if self.serving == 0 and self._busy_since is not None:
                    self.busy += self.last_answer - self._busy_since
                    self._busy_since = None
        last = next((m.get("content", "") for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            text = json.dumps(schema_instance(fmt["json_schema"]["schema"], last), ensure_ascii=False)
        else:
            text = json.dumps({"answer": last[:16]}, ensure_ascii=False)
        prompt = sum(len(m.get("content", "")) for m in body.get("messages", []))
        return {"id": f"chatcmpl-{self.calls}", "object": "chat.completion", "created": int(now),
                "model": body.get("model", "standin"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": prompt, "completion_tokens": len(text), "total_tokens": prompt + len(text)}}


async def serve(latency: float, slots: int, port: int, kind: type[Standin] = Standin) -> None:
    """`kind`: a Standin that answers otherwise (peer_race's multiple-choice stand-in)."""
    from aiohttp import web

    standin = kind(latency, slots)

    import orjson  # the stand-in shares this machine's cores with the client it measures: keep its own CPU small

    async def chat(request: web.Request) -> web.Response:
        body = await standin.answer(orjson.loads(await request.read()))
        return web.Response(body=orjson.dumps(body), content_type="application/json")

    async def stats(_: web.Request) -> web.Response:
        return web.json_response(standin.stats())

    async def reset(_: web.Request) -> web.Response:
        standin.reset()
        return web.json_response({"ok": True})

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.add_routes([web.post("/v1/chat/completions", chat), web.get("/stats", stats), web.post("/reset", reset)])
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, backlog=4096)
    await site.start()
    bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    print(f"URL http://127.0.0.1:{bound}/v1", flush=True)
    await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.standin_server", description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.2, help="seconds each call holds a slot")
    ap.add_argument("--slots", type=int, default=256, help="calls served at once; more wait in a queue")
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        asyncio.run(serve(args.latency, args.slots, args.port))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
