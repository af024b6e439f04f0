"""Typed records for every LLM answer, and the JSON schemas that constrain them.

The schemas come from the pydantic models (one source of truth), inlined (no $ref) for the structured-output
backends, with every string bounded by maxLength and every list by maxItems: a randomly initialised model under
guided decoding otherwise runs a string to the token budget. Sentiments and states are enums of the five labels;
per-request enums (event ids on show, the dialogue's holders) are patched in by the builders below.
"""

from __future__ import annotations

import copy
import functools
import json
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

Label = Literal["positive", "negative", "neutral", "ambiguous", "doubt"]

# String bounds (characters). Short on purpose: answers are phrases, and the bound also bounds the token budget.
SHORT = 24
MEDIUM = 48
LONG = 64
# Holder names are the dialogue's own (the builders below limit them to an enum of its holders, which also bounds the
# token budget); the published data has names like "speaker 4" and noisy ones over 100 characters.
HOLDER = 128


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SextupleItem(_Strict):
    target: str = Field(max_length=SHORT)
    aspect: str = Field(max_length=SHORT)
    opinion: str = Field(max_length=MEDIUM)
    sentiment: Label
    rationale: str = Field(max_length=LONG)


class SextupleAnswer(_Strict):
    sextuples: list[SextupleItem] = Field(max_length=3)


class Pass1Item(_Strict):
    event_id: int
    event: str = Field(max_length=SHORT)
    target: str = Field(max_length=SHORT)
    log: str = Field(max_length=LONG)


class Pass1Answer(_Strict):
    items: list[Pass1Item]


class EmotionItem(_Strict):
    state: Label
    reason: str = Field(max_length=32)
    source_id: str = Field(max_length=HOLDER)


class ChainEventItem(_Strict):
    event: str = Field(max_length=SHORT)
    emotions: list[EmotionItem] = Field(max_length=4)


class ChainDirectAnswer(_Strict):
    """One holder's chain (direct asks once per holder, the dialogue first so the holders' prompts share it)."""

    events: list[ChainEventItem] = Field(max_length=3)


class ChainWindowItem(_Strict):
    holder: str = Field(max_length=HOLDER)
    event: str = Field(max_length=SHORT)
    state: Label
    reason: str = Field(max_length=MEDIUM)
    source_id: str = Field(max_length=HOLDER)


class ChainWindowAnswer(_Strict):
    emotions: list[ChainWindowItem]


class MergeAnswer(_Strict):
    reason: str = Field(max_length=LONG)


M = TypeVar("M", bound=BaseModel)


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            return _inline(copy.deepcopy(defs[node["$ref"].rsplit("/", 1)[-1]]), defs)
        return {k: _inline(v, defs) for k, v in node.items() if k not in ("$defs", "title")}
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node


@functools.lru_cache(maxsize=None)
def _inlined_schema(model: type[BaseModel]) -> dict[str, Any]:
    raw = model.model_json_schema()
    return _inline(raw, raw.get("$defs", {}))


def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema with $refs inlined; a fresh copy each call because callers narrow it in place.
    (Building it with pydantic on every ask was most of the pipeline's CPU per call: it is built once per model.)"""
    return copy.deepcopy(_inlined_schema(model))


def sextuple_schema() -> dict[str, Any]:
    return schema_of(SextupleAnswer)


def pass1_schema(n_new: int, event_ids: list[int]) -> dict[str, Any]:
    """Exactly one item per new utterance; event_id limited to the events on show, or -1 for a new event."""
    s = schema_of(Pass1Answer)
    items = s["properties"]["items"]
    items["minItems"] = items["maxItems"] = n_new
    items["items"]["properties"]["event_id"] = {"type": "integer", "enum": [-1, *event_ids]}
    return s


def chain_direct_schema(holders: list[str]) -> dict[str, Any]:
    s = schema_of(ChainDirectAnswer)
    emotion = s["properties"]["events"]["items"]["properties"]["emotions"]["items"]["properties"]
    emotion["source_id"] = {"type": "string", "enum": list(holders)}
    return s


def chain_window_schema(holders: list[str], events: list[str], max_items: int) -> dict[str, Any]:
    """Holders and source ids limited to the dialogue's holders; the event to the known events when there are any."""
    s = schema_of(ChainWindowAnswer)
    em = s["properties"]["emotions"]
    em["maxItems"] = max_items
    props = em["items"]["properties"]
    props["holder"] = {"type": "string", "enum": list(holders)}
    props["source_id"] = {"type": "string", "enum": list(holders)}
    if events:
        props["event"] = {"type": "string", "enum": list(events)}
    return s


def merge_schema() -> dict[str, Any]:
    return schema_of(MergeAnswer)


def token_budget(schema: dict[str, Any]) -> int:
    """An upper bound on the tokens a schema-valid answer can take, used as max_tokens.

    Each bounded string counts 4 tokens per character (a byte-level tokenizer may spell one CJK character as three
    byte tokens; the fourth covers an escape) plus quotes; keys, punctuation and numbers a few tokens each. An
    unbounded list or string has no bound: the schemas above never contain one, and this raises if one appears.
    """
    t = schema.get("type")
    if "enum" in schema:
        return max(len(json.dumps(v, ensure_ascii=False)) for v in schema["enum"]) + 2
    if t == "string":
        if "maxLength" not in schema:
            raise ValueError("unbounded string in an answer schema")
        return 4 * schema["maxLength"] + 4
    if t in ("integer", "number"):
        return 8
    if t == "boolean":
        return 2
    if t == "array":
        if "maxItems" not in schema:
            raise ValueError("unbounded list in an answer schema")
        return 2 + schema["maxItems"] * (token_budget(schema["items"]) + 2)
    if t == "object":
        return 2 + sum(len(k) + 4 + token_budget(v) for k, v in schema.get("properties", {}).items())
    raise ValueError(f"schema node without a bound: {schema}")


class Unparseable(Exception):
    """The answer is not JSON, or not of the expected shape; the message says which field."""


def parse_answer(model: type[M], parsed: Any, text: str) -> M:
    """Validate an answer: the backend's parsed JSON when it has one, else the raw text."""
    obj = parsed
    if obj is None:
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise Unparseable(f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno}): {text[:80]!r}") from None
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(root)"
        raise Unparseable(f"field {where}: {first['msg']} ({exc.error_count()} error(s))") from None
