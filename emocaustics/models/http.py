"""POST a JSON body to an HTTP API and read a JSON answer, with the retry policy of the official OpenAI SDK, on aiohttp.

Why not the SDK's own client: at hundreds of calls per second its httpx transport (connection-pool scans, header
models, anyio wrappers) cost about 1 ms of driver CPU per call, most of the whole driver's work in a 400-dialogue
run (1.6 ms per call in all), and made our process, not the server, the limit. aiohttp does the same exchange for a fraction.

The policy, as the SDK's (`openai._base_client`), so that `max_retries` and `timeout` mean what users know them to mean:
- each attempt is bounded by `timeout` seconds (connect, send, answer and body together);
- retried: timeouts, dropped or refused connections, and HTTP 408, 409, 429 and 5xx, unless the server says
  `x-should-retry: false` (and any status when it says `x-should-retry: true`), at most `max_retries` times;
- the wait before a retry is the server's `retry-after-ms` / `retry-after` when it is given and at most 60 s, else
  0.5 s doubling per retry up to 8 s, shortened by up to 25 % at random (jitter), so that many clients do not retry
  in step.
Final failures raise `HTTPFailure` with its `kind` (models/base.py: `ErrorKind`, what the layers above decide on) and a
`reason` of one line ("HTTP 429: ...", "timeout: ...", "connection error: ...") that never contains the request's
headers, so never the key (an echoed one is scrubbed as every error is). `on_response(status)` is told of every response
read, retried ones included, with its headers (the dead-endpoint breaker's sign of life: models/breaker.py; the
adaptive rate limit's signal: models/ratelimit.py).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from collections.abc import Callable
from typing import Any

import orjson

from emocaustics.models.base import ErrorKind

INITIAL_RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 8.0
RETRY_STATUSES = frozenset({408, 409, 429})


def _dumps(body: Any) -> bytes:
    """orjson, a C encoder (with the decoder: ~10 % of the driver's CPU per call with the standard library's)."""
    try:
        return orjson.dumps(body)
    except TypeError:  # a type orjson does not know: the standard library's encoder decides
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


# Credentials a spec gave in its base URL (`https://user:password@host/v1`): aiohttp refuses such a URL, and a run
# would store it in its records. `strip_credentials` keeps them in this process's memory only, keyed by the URL
# without them, and every client of that URL sends them as its Authorization header (`url_auth`, HTTP Basic, as a
# browser or curl would for that URL); specs, run records and messages carry the URL without them.
_URL_AUTH: dict[str, str] = {}


def strip_credentials(url: str) -> str:
    """`url` without its `user:password@` (remembered for `url_auth`, and by `core.redact` so that no error or log
    shows them in any form); a URL without credentials as it is."""
    from urllib.parse import unquote, urlsplit, urlunsplit

    from emocaustics.core.redact import learn_credentials

    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    clean = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    _URL_AUTH[clean.rstrip("/")] = learn_credentials(unquote(parts.username or ""), unquote(parts.password or ""))
    return clean


def url_auth(url: str | None) -> dict[str, str]:
    """The Authorization header of the credentials given in `url`'s spec (`strip_credentials`), else {}."""
    header = _URL_AUTH.get((url or "").rstrip("/"))
    return {"Authorization": header} if header else {}


class HTTPFailure(Exception):
    """The final failure of a request (after its retries)."""

    def __init__(self, kind: ErrorKind, reason: str, status: int | None = None, body: Any = None) -> None:
        super().__init__(reason)
        self.kind, self.reason, self.status, self.body = kind, reason, status, body


def server_wait(headers: Any) -> float | None:
    """The server's `retry-after-ms` / `retry-after` (seconds or an HTTP date) in seconds, if it gave one."""
    try:
        return float(headers["retry-after-ms"]) / 1000
    except (KeyError, ValueError):
        pass
    after = headers.get("retry-after")
    try:
        return float(after) if after is not None else None
    except ValueError:
        when = email.utils.parsedate_tz(after)
        return (email.utils.mktime_tz(when) - time.time()) if when else None


def retry_delay(retries_done: int, headers: Any = None) -> float:
    """Seconds to wait before the next attempt: the server's Retry-After (<= 60 s), else backoff with jitter."""
    if headers is not None:
        wait = server_wait(headers)
        if wait is not None and 0 < wait <= 60:
            return wait
    return min(INITIAL_RETRY_DELAY * 2 ** min(retries_done, 1000), MAX_RETRY_DELAY) * (1 - 0.25 * random.random())


def should_retry(status: int, headers: Any) -> bool:
    say = (headers.get("x-should-retry") or "").lower()
    if say in ("true", "false"):
        return say == "true"
    return status in RETRY_STATUSES or status >= 500


def error_message(body: Any, text: str) -> str:
    """The server's own words about a failed request: `error.message` of an OpenAI-style body, else the text."""
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if isinstance(err, str):
            return err
        if body.get("message"):
            return str(body["message"])
    return text.strip() or "(empty body)"


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for `url` (HTTP_PROXY / HTTPS_PROXY, unless NO_PROXY covers its host)."""
    import urllib.parse
    import urllib.request

    parts = urllib.parse.urlsplit(url)
    if parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme or "http")


class JSONPoster:
    """One aiohttp session (one event loop) posting JSON to `base_url`; at most `connections` open connections."""

    def __init__(self, base_url: str, headers: dict[str, str], *, timeout: float, max_retries: int,
                 connections: int, on_response: Callable[..., None] | None = None,
                 retry_throttled: bool = True) -> None:
        import aiohttp

        self.base_url = base_url.rstrip("/")
        self.on_response = on_response
        # False: a 429 is returned at once, for the adaptive rate limit in front to requeue (models/ratelimit.py)
        self.retry_throttled = retry_throttled
        self.timeout = float(timeout)
        self.max_retries = max(0, int(max_retries))
        self._aiohttp = aiohttp
        self._session = aiohttp.ClientSession(
            headers={"Content-Type": "application/json", "Accept": "application/json", **headers},
            connector=aiohttp.TCPConnector(limit=max(1, int(connections)), ttl_dns_cache=300),
            timeout=aiohttp.ClientTimeout(total=self.timeout),
        )
        # HTTP(S)_PROXY / NO_PROXY, as the SDK honours them, looked up once: aiohttp's trust_env looks them (and
        # ~/.netrc) up in a worker thread on every request, two thread hand-offs per call.
        self._proxy = proxy_for(self.base_url)

    async def post(self, path: str, body: dict[str, Any]) -> Any:
        """The parsed JSON answer of a 2xx response; raises `HTTPFailure` once the retries are spent."""
        aiohttp = self._aiohttp
        data = _dumps(body)
        url = f"{self.base_url}/{path.lstrip('/')}"
        retries = 0
        while True:
            headers: Any = None
            try:
                async with self._session.post(url, data=data, proxy=self._proxy) as resp:
                    raw = await resp.read()
                    if self.on_response is not None:
                        self.on_response(resp.status, resp.headers)
                    if resp.status < 400:
                        try:
                            return orjson.loads(raw)
                        except ValueError as exc:
                            raise HTTPFailure(ErrorKind.OTHER, f"invalid response body: {exc}"[:240], resp.status) \
                                from None
                    headers = resp.headers
                    text = raw.decode("utf-8", "replace")
                    try:
                        parsed: Any = json.loads(text)
                    except ValueError:
                        parsed = None
                    failure = HTTPFailure(ErrorKind.of_status(resp.status, isinstance(parsed, dict)
                                                              and parsed.get("error")),
                                          f"HTTP {resp.status}: {error_message(parsed, text)[:200]}", resp.status,
                                          parsed)
                    retry = should_retry(resp.status, headers) and (self.retry_throttled or resp.status != 429)
            except (asyncio.TimeoutError, aiohttp.ServerTimeoutError):
                failure = HTTPFailure(ErrorKind.TIMEOUT, f"timeout: no answer within {self.timeout:g}s (after retries)")
                retry = True
            except (aiohttp.ClientError, OSError) as exc:  # refused, reset, dropped mid-answer, bad payload
                failure = HTTPFailure(ErrorKind.CONNECTION, f"connection error: {type(exc).__name__} (after retries)")
                retry = True
            if not retry or retries >= self.max_retries:
                raise failure
            await asyncio.sleep(retry_delay(retries, headers))
            retries += 1

    async def close(self) -> None:
        await self._session.close()
