"""A sample's content as plain JSON data and its short content hash (`Task.fingerprint`, provenance): kept apart from
the task interface (`core.task`, which re-exports them). (The dry run's token heuristic is `solve.forecast`'s.)"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel


def jsonable(obj: Any) -> Any:
    """Plain JSON data of a sample's input: dataclasses and pydantic models become dicts, tuples lists."""
    import dataclasses

    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
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
