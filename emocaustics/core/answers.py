"""Optional part of a task: the pydantic models of the answers it asks a model for (`answer_models`), checked when
the task registers. Guided decoding constrains an answer to its JSON schema, and the schema's bounds size the
request's max_tokens (`solve.schema.token_budget`): a string without a maximum length or a list without a maximum
size cannot be constrained, so every sample would fail at run time ("unbounded string in an answer schema"). A task
that declares such a schema is refused at registration, with the field and the fix named."""

from __future__ import annotations

from typing import Any

from emocaustics.core.errors import UsageError

FIX = {"string": "a string with no maximum length", "array": "a list with no maximum size"}


def unbounded(schema: dict[str, Any], defs: dict[str, Any] | None = None, path: str = "") -> tuple[str, str] | None:
    """(field path, JSON type) of the first node of `schema` that guided decoding cannot bound; None when all are."""
    defs = schema.get("$defs", {}) if defs is None else defs
    if "$ref" in schema:
        return unbounded(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, path)
    for key in ("anyOf", "oneOf", "allOf"):  # Optional[...] and unions: every branch must be bounded
        for branch in schema.get(key, []):
            if (found := unbounded(branch, defs, path)) is not None:
                return found
    kind = schema.get("type")
    if "enum" in schema or "const" in schema:
        return None
    if kind == "string" and "maxLength" not in schema:
        return path or "(root)", kind
    if kind == "array":
        if "maxItems" not in schema:
            return path or "(root)", kind
        return unbounded(schema.get("items", {}), defs, f"{path}[]")
    if kind == "object":
        for name, sub in schema.get("properties", {}).items():
            if (found := unbounded(sub, defs, f"{path}.{name}" if path else name)) is not None:
                return found
    return None


def check_answer_schema(schema: dict[str, Any], name: str, where: str = "") -> None:
    """A `UsageError` naming the field and the fix when guided decoding cannot constrain `schema` (of model `name`):
    at registration for declared `answer_models`, and when a solver asks with an undeclared one (`solve.ask`), so
    that the dry run and the run stop on it instead of failing every sample."""
    found = unbounded(schema)
    if found is not None:
        field, kind = found
        raise UsageError(f"{where}answer schema {name}, field {field!r}: {FIX[kind]} cannot be constrained by guided "
                         f"decoding (every sample would fail); declare it with a bound, e.g. "
                         f"{field.split('.')[-1].rstrip('[]')}: {'str' if kind == 'string' else 'list[...]'} = "
                         "Field(max_length=N)")


def check_answer_models(task: Any) -> None:
    """Refuse a task whose solver's declared `answer_models` hold a field guided decoding cannot constrain."""
    for model in task.solver.answer_models:
        check_answer_schema(model.model_json_schema(), model.__name__, f"task {task.name!r}: ")
