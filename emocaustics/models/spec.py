"""Model spec strings -> typed specs (the LLM objects are made from them by `models.factory.make_llm`).

    smoke[?OPTION=VALUE&...]                     the tiny random model, served by the real vLLM engine
    vllm:PATH_OR_NAME[?replicas=2&tp=1&max_model_len=4096&OPTION=VALUE...]
    openai:MODEL@BASE_URL[?concurrency=16&timeout=60&max_retries=4&json_mode=auto&max_connection_failures=5
                          &max_server_errors=10&stall_seconds=120&max_throttled=20&batch=true]

Shorthands (`expand_shorthand`, applied where a job or `emocaustics eval` names a model), the SemEval baseline's types:
`openai:MODEL` (base URL $OPENAI_BASE_URL, else https://api.openai.com/v1; key $OPENAI_API_KEY), `anthropic:MODEL`
(key $ANTHROPIC_API_KEY), `ollama:MODEL` (Ollama's OpenAI-compatible API at $OLLAMA_HOST, else localhost:11434),
`vllm:MODEL` (the local engine), `smoke`.

Keys come from the environment only: a secret in the query (`?api_key=...`) is refused, and `user:password@` in a base
URL is taken out of the spec and sent as that URL's Authorization header (HTTP Basic, `models/http.py`), so no spec
string, record or message carries a secret.

For `smoke`/`vllm:` the pool keys are `replicas`, `tp` (tensor_parallel_size), `gpus` (per replica; default: tp when
the cluster has GPUs, else 0), `cpus` (Ray CPUs reserved per replica, default 0), `placement` (`spread`: replicas on
different nodes, round robin over the alive nodes that fit a replica; default: Ray's default placement); every other key is a vLLM engine
argument (`AsyncEngineArgs` field), checked when the engine is made. Values are JSON when they parse as JSON
(numbers, booleans, objects), else strings.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from emocaustics.core.errors import UsageError
from emocaustics.core.redact import redacted, refuse_secrets
from emocaustics.models.breaker import DEFAULT_LIMIT, DEFAULT_SERVER_ERRORS, REQUEUE_LIMIT
# A remote base URL without `user:password@`: those become the Authorization header its clients send, so that what
# the run records and prints has no secret in it; aiohttp would refuse the URL anyway.
from emocaustics.models.http import strip_credentials as without_credentials
from emocaustics.models.registry import find, is_remote, provider

ALLOWED = (
    "'smoke[?OPTION=VALUE...]', 'vllm:PATH_OR_NAME[?replicas=N&tp=N&OPTION=VALUE...]', "
    "'openai:MODEL@BASE_URL[?concurrency=N&timeout=SECONDS&max_retries=N&json_mode=auto|schema|plain]' or "
    "'anthropic:MODEL[@BASE_URL][?concurrency=N&timeout=SECONDS&max_retries=N&json_mode=...&sampling=auto|send|omit]'"
)
POOL_KEYS = ("replicas", "tp", "gpus", "cpus", "placement")

OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
OLLAMA_DEFAULT_HOST = "localhost:11434"


def expand_shorthand(spec: str) -> str:
    """A spec with the baseline's shorthands written out (see the module docstring); any other spec is returned as
    it is. The base URL of `openai:MODEL` and `ollama:MODEL` is read from the environment here, once, so the
    expanded spec (what the run records and hashes) names the server that answered. Every edge that takes a spec
    from a user passes it here first, so a secret in it is refused, and a URL's credentials taken out, before any
    of it is written."""
    head, sep, query = spec.strip().partition("?")
    refuse_secrets(dict(parse_qsl(query, keep_blank_values=True)), f"model spec {redacted(spec)!r}")
    kind, _, name = head.partition(":")
    if kind == "openai" and name and "@" not in name:
        base = os.environ.get("OPENAI_BASE_URL", "").strip() or OPENAI_DEFAULT_URL
        head = f"openai:{name}@{without_credentials(base.rstrip('/'))}"
    elif "@" in name and is_remote(kind):
        model, _, base = name.partition("@")
        head = f"{kind}:{model}@{without_credentials(base)}"
    elif kind == "ollama":
        if not name:
            raise UsageError(f"model spec {redacted(spec)!r}: expected 'ollama:MODEL' (e.g. ollama:llama3.1:8b)")
        host = os.environ.get("OLLAMA_HOST", "").strip() or OLLAMA_DEFAULT_HOST
        url = urlsplit(host if "://" in host else f"http://{host}")
        netloc = url.netloc if url.port else f"{url.hostname}:11434"
        head = f"openai:{name}@{url.scheme}://{netloc}{url.path.rstrip('/')}/v1"
    return head + sep + query


Number = int | float  # a value as given: `rpm=60` stays 60 in `canonical()` (a litellm endpoint's cache id holds it)


class Limits(BaseModel):
    """An endpoint's breaker (models/breaker.py) and its rate limit (models/ratelimit.py): the query keys (and a job's
    model keys) of the same names. Unset fields stay out of `canonical()`."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    concurrency: int = Field(16, ge=1)  # in-flight requests (the adaptive limit's ceiling)
    rpm: Number | None = Field(None, gt=0)  # requests / tokens per minute
    tpm: Number | None = Field(None, gt=0)
    max_connection_failures: int = Field(DEFAULT_LIMIT, ge=1)  # in a row: the endpoint is dead
    max_server_errors: int = Field(DEFAULT_SERVER_ERRORS, ge=1)  # HTTP 5xx in a row
    stall_seconds: Number | None = Field(None, gt=0)  # None: two client timeouts, at least 30 s
    max_throttled: int = Field(REQUEUE_LIMIT, ge=1)  # times one request answered 429 is requeued


class Batch(BaseModel):
    """Batch mode (models/batch.py): `batch=true` sends independent calls through the provider's batch API; the
    fields are named by their query keys (`batch_size`, ...)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
    on: bool = Field(False, alias="batch")
    size: int | None = Field(None, ge=1, alias="batch_size")  # None: the provider's limit
    poll: Number = Field(30.0, gt=0, alias="batch_poll")  # seconds between status reads (batch.POLL)
    quiet: Number = Field(2.0, gt=0, alias="batch_quiet")  # seconds without a new request: send (batch.QUIET)
    max_wait: Number = Field(60.0, gt=0, alias="batch_max_wait")  # ... at the latest (batch.MAX_WAIT)


LIMIT_KEYS = tuple(Limits.model_fields)  # the breaker's and rate limit's, not the client's: `LLMSpec.limits`
BATCH_KEYS = tuple(str(f.alias) for f in Batch.model_fields.values())
CLIENT_KEYS = ("timeout", "max_retries", "json_mode", "json_retries") + LIMIT_KEYS + BATCH_KEYS  # an endpoint's keys


class LLMSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str  # the provider's name (models/registry.py): smoke, vllm, openai, anthropic, ollama or a plug-in's
    # The provider's facts, read from the registry once, where the spec is parsed: every layer after reads these
    remote: bool = False  # a client of an endpoint: no Ray pool; breaker, rate limit and budget layers in front
    priced: bool = False  # its calls cost money (models/prices.py)
    model: str = ""
    base_url: str | None = None
    replicas: int = Field(1, ge=1)
    tp: int = Field(1, ge=1)
    gpus: int | None = Field(None, ge=0)
    cpus: float = Field(0.0, ge=0)
    # "spread": replicas round robin over the alive nodes that fit one (strict node affinity: see ModelPool);
    # "default": Ray's default, which keeps zero-resource actors (CPU engines) on the driver's node.
    placement: Literal["default", "spread"] = "default"
    engine: dict[str, Any] = Field(default_factory=dict)  # vLLM AsyncEngineArgs, open-ended
    # A remote endpoint's: its client's own options (timeout, max_retries, json_mode, json_retries, the provider's),
    # the breaker's and rate limit's, batch mode's.
    client: dict[str, Any] = Field(default_factory=dict)
    limits: Limits = Field(default_factory=Limits)
    batch: Batch = Field(default_factory=Batch)

    def canonical(self) -> str:
        """A stable string for this spec (registry key, reports). Equal specs give equal strings."""
        if self.remote:  # openai, anthropic, and a plug-in provider's endpoint
            head = f"{self.kind}:{self.model}" + (f"@{self.base_url}" if self.base_url else "")
            query = dict(sorted(self.endpoint_options().items()))
        else:
            head = "smoke" if self.kind == "smoke" else f"{self.kind}:{self.model}"
            query = {k: getattr(self, k) for k in POOL_KEYS if getattr(self, k) != LLMSpec.model_fields[k].default}
            query.update(sorted(self.engine.items()))
        if not query:
            return head
        return head + "?" + urlencode({k: v if isinstance(v, str) else json.dumps(v, sort_keys=True) for k, v in query.items()})

    def endpoint_options(self) -> dict[str, Any]:
        """A remote spec's options as given (its query's keys): the client's, the limits' and batch mode's."""
        return {**self.client, **self.limits.model_dump(exclude_unset=True),
                **self.batch.model_dump(exclude_unset=True, by_alias=True)}

    @property
    def identity(self) -> str:
        """The model as the response cache's keys and the provenance know it: an endpoint by its provider, model and
        URL; a local model by its spec without placement (outputs do not depend on replicas/tp/gpus/cpus) and, for
        weights on this machine, what they hold: the smoke model's recipe hash, a local folder's (or file's)
        `fingerprint`, so that replaced weights are a new model. A hub name stays its name (`revision=` pins it)."""
        if self.remote:
            return f"{self.kind}:{self.model}" + (f"@{self.base_url}" if self.base_url else "")
        unplaced = self.model_copy(update={"replicas": 1, "tp": 1, "gpus": None, "cpus": 0.0, "placement": "default"})
        head, sep, query = unplaced.canonical().partition("?")
        if self.kind == "smoke":
            from emocaustics.models.smoke import smoke_model_dir

            return f"{head}:{smoke_model_dir().name}{sep}{query}"
        weights = Path(self.model).expanduser()
        return f"{head}#{fingerprint(weights)}{sep}{query}" if weights.exists() else head + sep + query

    def with_options(self, **opts: Any) -> "LLMSpec":
        """This spec with query options (`KEY=VALUE` of a spec string) put where they belong, checked as in a query."""
        return _built(self.model_dump(exclude_unset=True, by_alias=True), opts, self.canonical())


def _value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _assign(data: dict[str, Any], opts: dict[str, Any], spec: str) -> None:
    for key, value in opts.items():
        if data["remote"]:
            allowed = CLIENT_KEYS + provider(data["kind"]).options
            if key not in allowed:
                raise UsageError(f"model spec {spec!r}: unknown option {key!r} ({data['kind']} options: "
                                 f"{', '.join(allowed)})")
            part = "limits" if key in LIMIT_KEYS else "batch" if key in BATCH_KEYS else "client"
            data[part] = {**data.get(part, {}), key: value}
        elif key in BATCH_KEYS:
            raise UsageError(f"model spec {spec!r}: {key} needs an openai: or anthropic: model (the providers' batch "
                             "APIs)")
        elif key in POOL_KEYS:
            data[key] = value
        else:
            data["engine"] = {**data.get("engine", {}), key: value}


def parse_llm_spec(spec: str) -> LLMSpec:
    """Parse a spec string; a malformed one is a UsageError that says what is allowed."""
    text = spec.strip()
    head, _, query = text.partition("?")
    spec = redacted(text)  # every message below names the spec without its secrets
    try:
        opts = {k: _value(v) for k, v in parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))}
    except ValueError:
        raise UsageError(f"model spec {spec!r}: bad option list {redacted('?' + query)[1:]!r}; "
                         f"expected {ALLOWED}") from None
    refuse_secrets(opts, f"model spec {spec!r}")
    kind, _, rest = head.partition(":")
    prov = find(kind)  # its provider, asked once: the spec keeps what it says (`LLMSpec.remote`, `.priced`)
    if head == "smoke":
        data: dict[str, Any] = {"kind": "smoke"}
    elif kind == "vllm" and rest:
        data = {"kind": "vllm", "model": rest}
    elif kind in ("hf", "huggingface"):  # removed (round 8): a second path for local weights beside the vLLM engine
        raise UsageError(f"model spec {spec!r}: the {kind}: provider was removed; use "
                         f"{'smoke' if rest == 'smoke' else 'vllm:' + (rest or 'PATH_OR_NAME')} for local weights, ollama:MODEL, or openai:MODEL@URL (any OpenAI-compatible server)")
    elif prov is not None and prov.remote and (rest or prov.needs_url):  # openai, anthropic, ollama, a plug-in's
        model, at, base_url = rest.partition("@")
        if not model or (at or prov.needs_url) and not base_url.startswith(("http://", "https://")):
            form = "@BASE_URL' with an http(s) URL" if prov.needs_url else f"' or '{kind}:MODEL@BASE_URL'"
            raise UsageError(f"model spec {spec!r}: expected '{kind}:MODEL{form}")
        prov.check(model, spec)  # a form of its own (litellm: PROVIDER/MODEL)
        data = {"kind": kind, "model": model, "base_url": without_credentials(base_url) if base_url else None}
    else:
        raise UsageError(f"unknown model spec {spec!r}; expected {ALLOWED}")
    return _built({**data, "remote": prov.remote, "priced": prov.priced}, opts, spec)  # type: ignore[union-attr]


def _built(data: dict[str, Any], opts: dict[str, Any], spec: str) -> LLMSpec:
    """The spec of `data` with `opts` assigned (`_assign`); a value of the wrong type is a UsageError naming it."""
    _assign(data, opts, spec)
    try:
        return LLMSpec(**data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise UsageError(f"model spec {spec!r}: {problems}") from None


def as_llm_spec(spec: str | LLMSpec) -> LLMSpec:
    """A spec string parsed (`parse_llm_spec`), an `LLMSpec` as it is: the edges (CLI `--llm`, a job's model, the
    api) hand either to the plan, the pool and the factory, which parse nothing again."""
    return parse_llm_spec(spec) if isinstance(spec, str) else spec


SAMPLED = 1 << 20  # bytes of each end of a weights file in its fingerprint


def fingerprint(weights: Path) -> str:
    """A content fingerprint of local weights (a model folder, or one file such as a GGUF), cheap for many GB: every
    file's relative name, size and modification time, its first and last MiB (whole when smaller: config.json, the
    tokenizer). Weights written over in place change the time; copied with their times kept, a same-sized
    fine-tune still differs in the tensors at either end (a safetensors file starts with its first tensors and ends
    with its last). Hashing every byte would cost minutes per start on a 100 GB model. Dot entries (.cache, .git)
    are not the model's."""
    root = weights if weights.is_dir() else weights.parent
    files = sorted(f for f in weights.rglob("*") if f.is_file()
                   and not any(p.startswith(".") for p in f.relative_to(root).parts)) if root == weights else [weights]
    digest = hashlib.sha256()
    for f in files:
        stat = f.stat()
        digest.update(f"{f.relative_to(root)}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
        with f.open("rb") as data:
            digest.update(data.read(SAMPLED))
            data.seek(max(SAMPLED, stat.st_size - SAMPLED))
            digest.update(data.read())
    return digest.hexdigest()[:16]
