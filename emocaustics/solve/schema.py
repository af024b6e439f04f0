"""Answer schemas and typed parsing, for every task: JSON schemas from pydantic models (inlined, one source of truth
for structured-output backends), the token budget a bounded schema allows, and validation of an answer into its model.

Strings in an answer schema must be bounded (maxLength) and lists too (maxItems): a randomly initialised model under
guided decoding otherwise runs a string to the token budget, and the bound is also what sizes max_tokens.
"""

from __future__ import annotations

import copy
import functools
import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

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
            raise ValueError("unbounded string in an answer schema: declare it Field(max_length=N) (core/answers.py)")
        return 4 * schema["maxLength"] + 4
    if t in ("integer", "number"):
        return 8
    if t == "boolean":
        return 2
    if t == "array":
        if "maxItems" not in schema:
            raise ValueError("unbounded list in an answer schema: declare it Field(max_length=N) (core/answers.py)")
        return 2 + schema["maxItems"] * (token_budget(schema["items"]) + 2)
    if t == "object":
        return 2 + sum(len(k) + 4 + token_budget(v) for k, v in schema.get("properties", {}).items())
    raise ValueError(f"schema node without a bound: {schema}")


class Unparseable(Exception):
    """The answer is not JSON, or not of the expected shape; the message says which field."""


def validate_answer(model: type[M], parsed: Any, text: str) -> M:
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
