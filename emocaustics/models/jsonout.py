"""Turning a model's answer text into the JSON value a schema asked for: strict parse first, json-repair second."""

from __future__ import annotations

import json
from typing import Any

from emocaustics.models.base import ChatRequest, Completion, ErrorKind


def _expects(schema: dict) -> type | tuple[type, ...] | None:
    kind = schema.get("type")
    return {"object": dict, "array": list}.get(kind) if isinstance(kind, str) else None


def parse_answer(text: str, schema: dict | None) -> tuple[Any, bool, str | None]:
    """(parsed value, repaired?, error). With no schema nothing is parsed and nothing can fail.

    json-repair turns almost any text into *some* value ("garbage" becomes ""), so a repaired value only counts when
    it has the top-level type the schema asks for.
    """
    if schema is None:
        return None, False, None
    try:
        return json.loads(text), False, None
    except ValueError as exc:
        strict_error = f"{exc.msg} at line {exc.lineno} column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else str(exc)
    import json_repair

    try:
        value = json_repair.loads(text)
    except Exception:  # json-repair's own failures are as varied as its inputs
        value = None
    want = _expects(schema)
    if value is not None and value != "" and (want is None or isinstance(value, want)):
        return value, True, None
    snippet = text[:80].replace("\n", " ")
    return None, False, f"invalid JSON: {strict_error}; not repairable (answer starts {snippet!r})"


def read_answer(text: str, request: ChatRequest, cut: bool, max_tokens: int, *, prompt_tokens: int = 0,
                generated_tokens: int = 0) -> Completion:
    """The Completion of an answer to `request`, every backend's: its `parse_answer`, where an answer not the JSON
    asked for is of kind ANSWER. It may have been cut at `max_tokens` (`cut`): json-repair would close the brackets
    of a half answer and call it valid (pairs, events after the cut would vanish), so a cut answer that needed repair
    is never counted: the caller asks again (a new seed, `json_retries`) and else reports this failure."""
    parsed, repaired, error = parse_answer(text, request.schema)
    if cut and (error or repaired):
        parsed, repaired, error = None, False, f"answer cut at max_tokens={max_tokens}; {error or 'incomplete JSON'}"
    return Completion(text=text, parsed=parsed, error=error, kind=ErrorKind.ANSWER if error else None,
                      prompt_tokens=prompt_tokens, generated_tokens=generated_tokens, repaired=repaired)
