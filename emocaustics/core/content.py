"""A sample's content as plain JSON data and its short content hash (`Task.fingerprint`, provenance): kept apart from
the task interface (`core.task`, which re-exports them). (The dry run's token heuristic is `solve.forecast`'s.)"""

from __future__ import annotations

import dataclasses
import functools
import json
from typing import Any

from pydantic import BaseModel

_PLAIN = frozenset({str, int, float, bool, type(None)})


@functools.cache
def _fields(cls: type) -> tuple[str, ...] | None:
    """A dataclass's field names, read once per class: `dataclasses.fields` asked per object made the fingerprints of
    400 dialogues (provenance, written before a run's first call) 0.33 s; 0.14 s so."""
    return tuple(f.name for f in dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) else None


def jsonable(obj: Any) -> Any:
    """Plain JSON data of a sample's input: dataclasses and pydantic models become dicts, tuples lists."""
    if type(obj) in _PLAIN:  # most of a sample: returned as it is, before any class test
        return obj
    if (names := _fields(type(obj))) is not None:
        return {name: jsonable(getattr(obj, name)) for name in names}
    if isinstance(obj, BaseModel):
        return jsonable(obj.model_dump(mode="json"))
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    return obj


def content_hash(obj: Any) -> str:
    import hashlib

    text = json.dumps(jsonable(obj), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
