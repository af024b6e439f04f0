"""A job's model entry (`models.NAME` in a job, `emocaustics serve`'s MODELS.yaml): the spec string and the keys that
go beside it. Every option the docs give for a model is accepted here: the entry's own fields below, and the client
options of a remote spec's query (`models.spec.CLIENT_KEYS`: `timeout`, `max_retries`, `batch_poll`, ...), which are
moved into `engine:`. `parsed` builds the typed `LLMSpec` from them, checked per kind as a spec's query is
(`LLMSpec.with_options`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from emocaustics.core.errors import UsageError
from emocaustics.models.prices import PriceOverride

if TYPE_CHECKING:
    from emocaustics.models.spec import LLMSpec


class ModelSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    spec: str  # smoke | vllm:PATH_OR_NAME | openai:MODEL[@BASE_URL] | anthropic:MODEL[@BASE_URL] | ollama:MODEL
    replicas: int = Field(1, ge=1)
    gpus_per_replica: float = Field(0, ge=0)  # tensor parallel size when > 1
    engine: dict[str, Any] = Field(default_factory=dict)  # passed through to the vLLM engine (remote: the client)
    concurrency: int = Field(64, ge=1)  # in-flight requests for remote endpoints
    placement: Literal["default", "spread"] = "default"  # spread: replicas on different nodes
    # Remote endpoints: the job stops (exit 4, naming the endpoint) once it is dead (models/breaker.py): after this
    # many requests in a row fail to connect or time out, or end in HTTP 5xx (each after the client's retries), or
    # when nothing came back for `stall_seconds` while requests waited (default: two client timeouts, >= 30 s).
    max_connection_failures: int = Field(5, ge=1)
    max_server_errors: int = Field(10, ge=1)
    stall_seconds: float | None = Field(None, gt=0)
    price: PriceOverride | None = None  # USD per 1M tokens, over the shipped table's (models/prices.py)
    rpm: float | None = Field(None, gt=0)  # requests / tokens per minute to an endpoint (models/ratelimit.py)
    tpm: float | None = Field(None, gt=0)
    batch: bool = False  # openai:/anthropic: independent calls through the provider's batch API (models/batch.py)
    # Keep this model's replicas running after the job, as a model service that later jobs attach to (models/
    # services.py): true (idle timeout 1 h), seconds, or a duration ('30m', '2h'); needs a `ray start` cluster.
    keep_alive: bool | float | str = False

    @model_validator(mode="before")
    @classmethod
    def _client_keys(cls, raw: Any) -> Any:
        """Client options written beside `spec:` (`timeout: 30`, `batch_poll: 5`) go into `engine:`: the docs give
        them as a model's keys, and `parsed` puts them where they go from there (a local engine's spec refuses them with
        the same message as in the query). Kept out of the fields so that a job's hash stays what it was."""
        from emocaustics.core.redact import refuse_secrets
        from emocaustics.models.spec import CLIENT_KEYS

        if not isinstance(raw, dict):
            return raw
        if isinstance(raw.get("engine"), dict):
            try:  # a key there would be written to config.yaml with the rest of the entry
                refuse_secrets(raw["engine"], "engine")
            except UsageError as exc:
                raise ValueError(str(exc)) from None
        extra = set(raw) & set(CLIENT_KEYS) - set(cls.model_fields)  # any other unknown key: pydantic names it
        if not extra:
            return raw
        raw = dict(raw)
        engine = dict(raw.get("engine") or {})
        for key in sorted(extra):
            if key in engine:
                raise ValueError(f"{key} is given both beside spec and in engine: give it once")
            engine[key] = raw.pop(key)
        raw["engine"] = engine
        return raw

    @field_validator("keep_alive")
    @classmethod
    def _keep_alive(cls, value: bool | float | str) -> bool | float | str:
        from emocaustics.models.services import idle_seconds

        if value is not False:
            idle_seconds(value)  # a ValueError names the expected forms; pydantic names the key
        return value

    @field_validator("spec")
    @classmethod
    def _shorthand(cls, spec: str) -> str:  # openai:MODEL, ollama:MODEL ... written out (models/spec.py)
        from emocaustics.models.spec import expand_shorthand

        try:  # a secret in the spec is refused here, before the run folder (config.yaml, run.json) is written
            return expand_shorthand(spec)
        except UsageError as exc:  # pydantic names the key for a ValueError
            raise ValueError(str(exc)) from None

    def parsed(self) -> LLMSpec:
        """The entry as the model layer takes it, built here, where a job is resolved: its spec string (the one
        parse) with the entry's typed keys put where they go (pool, limits, batch, client, engine) and checked as in
        a query (a malformed one is a UsageError naming it). Nothing downstream parses a spec string."""
        from emocaustics.models.spec import parse_llm_spec

        base, gpus = parse_llm_spec(self.spec), int(self.gpus_per_replica)
        placed = {"replicas": self.replicas if self.replicas != 1 else None, "gpus": gpus or None,
                  "tp": gpus if self.gpus_per_replica > 1 else None,
                  "placement": self.placement if self.placement != "default" else None,
                  "batch": True if self.batch else None}  # a local engine's spec refuses batch: providers' APIs
        limits = {"concurrency": self.concurrency, "max_connection_failures": self.max_connection_failures,
                  "max_server_errors": self.max_server_errors, "stall_seconds": self.stall_seconds,
                  "rpm": self.rpm, "tpm": self.tpm} if base.remote else {}
        opts = {**_given(limits), **self.engine, **_given(placed)}  # engine: also the client keys beside spec
        return base.with_options(**opts)


def _given(keys: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in keys.items() if v is not None}
