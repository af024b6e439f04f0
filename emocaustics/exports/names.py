"""What both exports name the same way: a config's model (from its spec, through the model layer's own parser and
provider registry) and our structured values as the text fields of the other formats hold them."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ModelName:
    provider: str  # the spec's provider (`models.registry`)
    model: str  # the model as the spec names it (a local path: its folder's name)
    base_url: str | None
    remote: bool  # a client of an endpoint (registry), else replicas this job ran itself
    developer: str  # the organisation of a hub-style name (`Qwen/Qwen2.5-7B` -> `Qwen`), else a provider's own
    #                 model at its own API (`openai:gpt-4o@https://api.openai.com/v1` -> `openai`), else unknown


def model_name(spec: str | None) -> ModelName | None:
    """The model of a spec (a config's, a judge's); None for none (a calibration method)."""
    if spec is None:
        return None
    from urllib.parse import urlsplit

    from emocaustics.models.registry import is_remote, provider
    from emocaustics.models.spec import as_llm_spec, without_credentials

    spec = as_llm_spec(spec)
    model = spec.model.rstrip("/") or spec.kind
    if model.startswith(("/", ".", "~")):  # a local folder: its name, not where it lay on the machine
        model = model.rsplit("/", 1)[-1]
    home = provider(spec.kind).home
    own = bool(home) and urlsplit(spec.base_url or home).hostname == urlsplit(home).hostname
    developer = model.split("/", 1)[0] if "/" in model else spec.kind if own else "unknown"
    return ModelName(spec.kind, model, without_credentials(spec.base_url) if spec.base_url else None,
                     is_remote(spec), developer)


def jsonable(value: Any) -> Any:
    """`value` as plain JSON: NaN and infinities as None (JSON has neither), what JSON cannot hold as its text."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)


def text(value: Any) -> str:
    """A text as it is; anything else as indented JSON (None: empty)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(jsonable(value), ensure_ascii=False, indent=1)
