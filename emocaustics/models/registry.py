"""Model providers by name: what a spec's `KIND:` picks, and the one place that knows what each provider is.

    openai, anthropic, ollama   clients of an endpoint (remote): behind the breaker, rate limit and budget layers
    litellm                     the long tail (Gemini, Bedrock, Azure OpenAI, Mistral, Together...): remote, as above
    vllm, smoke                 the process's pool of Ray-hosted replicas (models/pool.py)

A provider of another package is declared in the entry-point group `emocaustics.providers`
(`myprov = "mypkg.module:provider"`, a `Provider` or a function `make(spec) -> model`), found the first time a spec
names a kind that is not built in, and used as the built-in ones are: `myprov:MODEL[@URL][?OPTION=VALUE...]` parses,
and `models.factory.make_llm` puts the same layers in front of it (docs/models.md, "Plug-in providers"); one with a
`models_path` is checked by the pre-flight as the built-in endpoints are.

Code outside this module asks the provider (`remote`, `probed`), never the spelling of a spec; a parsed spec keeps its
provider's facts (`LLMSpec.remote`, `.priced`), read once where it is parsed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from emocaustics.core.errors import PreflightError, UsageError
from emocaustics.core.redact import KEY_VARIABLES

ENTRY_POINT_GROUP = "emocaustics.providers"


@dataclass(frozen=True)
class Provider:
    name: str  # the spec's kind: `name:MODEL...`
    # The bare model of a parsed spec (`LLMSpec`): a client, or the process's pool; or where to find that function
    # ("module:function", as an entry point names it), imported when a model is first made.
    make: Callable[[Any], Any] | str
    remote: bool = True  # a client of an endpoint: no Ray pool; breaker, rate limit and budget layers in front
    priced: bool = True  # its calls cost money: priced from models/prices.json or the job's `price:`
    options: tuple[str, ...] = ()  # spec options of its own, beside the endpoint options (spec.CLIENT_KEYS)
    batch: bool = False  # has a batch API (models/batch_api.py): `batch=true` is allowed
    needs_url: bool = False  # its specs name the endpoint: `name:MODEL@BASE_URL` (else the URL is optional)
    # What a pre-flight (jobs/preflight.py) needs to reach its endpoint with one cheap GET of its model list:
    key_variables: tuple[str, ...] = ()  # where its key is read from, in order; the first is the one to set
    home: str = ""  # its own API: the base URL when a spec names none; it never answers without a key
    models_path: str = ""  # the GET's path below the base URL (one ending in /v1 has its /v1); "": no pre-flight GET
    auth: Callable[[str], dict[str, str]] | None = None  # the headers that carry a key
    # The form of its specs' model part, and whether a model part has it: checked when a spec is parsed, so that a
    # spec its backend cannot route is a usage error there, not a failure of every request.
    form: str = "MODEL"
    fits: Callable[[str], bool] = bool

    def check(self, model: str, spec: str) -> None:
        """A UsageError naming `spec` (as the user wrote it, redacted) when `model` lacks this provider's form."""
        if not self.fits(model):
            raise UsageError(f"model spec {spec!r}: expected {self.name}:{self.form}")

    def key(self) -> str:
        """Its API key from the environment ("" if none)."""
        import os

        return next((v for v in (os.environ.get(k, "").strip() for k in self.key_variables) if v), "")

    def model(self, spec: Any) -> Any:
        """The bare model of `spec` (an `LLMSpec` of this provider)."""
        make = self.make
        if isinstance(make, str):
            import importlib

            module, _, attr = make.partition(":")
            make = getattr(importlib.import_module(module), attr)
        return make(spec)


_PROVIDERS: dict[str, Provider] = {}
_DISCOVERED = False


def register(provider: Provider) -> Provider:
    _PROVIDERS[provider.name] = provider
    KEY_VARIABLES.update(provider.key_variables)  # their values are scrubbed from every error (core/redact.py)
    return provider


def find(kind: str) -> Provider | None:
    """The provider named `kind`, looking through the entry points once when it is not built in; None if none."""
    if kind not in _PROVIDERS and not _DISCOVERED:
        _discover()
    return _PROVIDERS.get(kind)


def provider(kind: str) -> Provider:
    found = find(kind)
    if found is None:
        raise UsageError(f"unknown model provider {kind!r}; known: {', '.join(sorted(_PROVIDERS))} (a plug-in "
                         f"provider is declared in the entry-point group {ENTRY_POINT_GROUP})")
    return found


def kind_of(spec: Any) -> str:
    """The provider name of a spec string (`openai:M@URL?x=1` -> `openai`, `smoke` -> `smoke`) or an `LLMSpec`."""
    if not isinstance(spec, str):
        return str(spec.kind)
    return spec.strip().split("?", 1)[0].partition(":")[0]


def is_remote(spec: Any) -> bool:
    """Whether the spec's provider is a client of an endpoint (False for an unknown kind: the parser names it)."""
    found = find(kind_of(spec))
    return found is not None and found.remote


def probed(spec: Any) -> Provider | None:
    """The spec's provider when a pre-flight reaches its endpoint (it has a `models_path`), else None."""
    found = find(kind_of(spec))
    return found if found is not None and found.models_path else None


def endpoint_name(spec: Any) -> str:
    """How messages name a remote endpoint: kind, model and URL (its provider's own API when the spec names none;
    never a key: keys come from the environment)."""
    return f"{spec.kind}:{spec.model}@{spec.base_url or provider(spec.kind).home or None}"



def reach(spec: Any, *, network: bool) -> str:
    """How the job has the model of `spec` (an `LLMSpec`), checked before anything starts: with `network`, an endpoint
    its provider probes (`probed`) answers one cheap request (`check_endpoint`); local weights come from a path or a
    hub name (cached, or with `network` found on the hub). A UsageError (a PreflightError for an endpoint) names why
    it cannot be had."""
    from pathlib import Path

    from emocaustics.models import hub

    if network and probed(spec):
        check_endpoint(spec)
    elif spec.kind == "smoke":
        return "built locally (tiny random model)"
    elif spec.kind == "vllm":
        name = spec.model
        if Path(name).expanduser().exists():
            return f"local path {name}"
        if hub.looks_like_hub_name(name):
            if network:
                return hub.check(name, "model")
            found = hub.cached_path(name)
            return f"local cache: {found}" if found else "hub name, not in the local cache (checked at start)"
        raise UsageError(f"model {spec.canonical()!r}: {name} is neither a local path nor a hub name (ORG/NAME)")
    return "endpoint"


def check_endpoint(parsed: Any, timeout: float = 10.0) -> None:
    """One cheap request (GET <base>/models) to a remote endpoint; a connection failure, a timeout or a refused key
    is a PreflightError naming the endpoint. Any other answer (even 404: not every server lists models) is a live
    endpoint. The standard library asks: httpx, imported for this one request only, cost 0.1 s before the first call
    of every endpoint run (the model clients speak aiohttp, models/http.py)."""
    import urllib.request
    from http.client import HTTPException
    from urllib.error import HTTPError

    from emocaustics.models.http import url_auth

    name = endpoint_name(parsed)
    prov = provider(parsed.kind)  # one that `probed` names
    base = (parsed.base_url or prov.home).rstrip("/")
    url = base + (prov.models_path.removeprefix("/v1") if base.endswith("/v1") else prov.models_path)
    key = prov.key()
    headers = prov.auth(key) if key and prov.auth else {}
    headers.update(url_auth(parsed.base_url))  # credentials written in the spec's URL (models/http.py)
    key = key or headers.get("Authorization", "")
    # The providers' own APIs never answer without a key (a local server may): say which variable, before asking.
    if not key and prov.home and url.startswith(prov.home + "/"):
        raise PreflightError(f"endpoint {name}: no API key: set {prov.key_variables[0]}")
    try:
        urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout).close()
        return
    except HTTPError as exc:  # an answer all the same
        status = exc.code
    except (OSError, HTTPException) as exc:  # a URLError (an OSError) wraps what the connection met
        why = exc.reason if isinstance(getattr(exc, "reason", None), BaseException) else exc
        raise PreflightError(f"endpoint {name}: " + (f"no answer within {timeout:g} s" if isinstance(why, TimeoutError)
                                                     else f"cannot connect ({type(why).__name__})")) from None
    if status in (401, 403):
        raise PreflightError(f"endpoint {name}: the key was refused (HTTP {status}); set "
                             + " or ".join(prov.key_variables))


def _discover() -> None:
    """Register the providers other installed packages declare (`ENTRY_POINT_GROUP`); a broken one is named."""
    from importlib.metadata import entry_points

    global _DISCOVERED
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in _PROVIDERS:  # a built-in provider wins over a same-named plug-in
            continue
        try:
            obj = ep.load()
        except Exception as exc:
            raise UsageError(f"model provider plug-in {ep.name!r} ({ep.value}, entry point group {ENTRY_POINT_GROUP}):"
                             f" cannot load: {type(exc).__name__}: {exc}") from exc
        if not isinstance(obj, Provider) and not callable(obj):
            raise UsageError(f"model provider plug-in {ep.name!r} ({ep.value}): not a Provider nor a function "
                             "make(spec) -> model")
        register(obj if isinstance(obj, Provider) else Provider(ep.name, obj))
    _DISCOVERED = True


# -- the built-in providers: declared as a plug-in declares its own (module:function), made in models/factory.py -----
_FACTORY = "emocaustics.models.factory"
register(Provider("openai", f"{_FACTORY}:openai_client", batch=True, needs_url=True,
                  key_variables=("OPENAI_API_KEY", "EMOCAUSTICS_API_KEY"), home="https://api.openai.com",
                  models_path="/models", auth=lambda key: {"Authorization": f"Bearer {key}"}))
register(Provider("anthropic", f"{_FACTORY}:anthropic_client", options=("sampling",), batch=True,
                  key_variables=("ANTHROPIC_API_KEY",), home="https://api.anthropic.com", models_path="/v1/models",
                  auth=lambda key: {"x-api-key": key, "anthropic-version": "2023-06-01"}))
register(Provider("ollama", f"{_FACTORY}:ollama_client", priced=False))
register(Provider("litellm", f"{_FACTORY}:litellm_client", options=("api_version",),
                  form="PROVIDER/MODEL, the backend as LiteLLM names it (litellm:openai/gpt-4o, "
                       "litellm:gemini/gemini-1.5-pro, litellm:azure/DEPLOYMENT)",
                  fits=lambda model: all(model.partition("/")[::2])))
for _name in ("vllm", "smoke"):
    register(Provider(_name, f"{_FACTORY}:pool", remote=False, priced=False))
