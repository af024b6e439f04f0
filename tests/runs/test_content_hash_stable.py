"""A sample's content hash (`core.content`: `Task.fingerprint`, provenance's `samples` and `dataset_hash`) is what
earlier runs recorded: a resume and `score` compare against it. `jsonable` reads a dataclass's field names once per
class now (the fingerprints of 400 dialogues were 0.33 s before a run's first call); its result must be the one of
the walk it replaced, here kept as the reference, on every kind of value a sample holds."""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
from typing import Any

from pydantic import BaseModel

from emocaustics.core.content import content_hash, jsonable
from emocaustics.tasks.longdialogue.data.load import load_sample


def reference_jsonable(obj: Any) -> Any:  # the walk as it was (c5702ef..1927c5a)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: reference_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, BaseModel):
        return reference_jsonable(obj.model_dump(mode="json"))
    if isinstance(obj, dict):
        return {str(k): reference_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [reference_jsonable(v) for v in obj]
    return obj


def reference_hash(obj: Any) -> str:
    text = json.dumps(reference_jsonable(obj), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class Colour(str, enum.Enum):
    RED = "red"


class Flag(int, enum.Enum):
    ON = 1


class Answer(BaseModel):
    label: str
    scores: dict[str, float]


@dataclasses.dataclass(frozen=True)
class Inner:
    text: str
    tags: tuple[str, ...] = ()
    extra: Any = None


@dataclasses.dataclass
class Outer:
    id: int
    inner: list[Inner]
    answer: Answer | None
    table: dict[Any, Any]
    kind: Any = Colour.RED
    nested_class: Any = Inner  # a class, not an instance: kept as it is (then str() by json)


VALUES = [
    None, 0, 1.5, True, "文本", (1, "a"), [], {},
    Outer(7, [Inner("a", ("x", "y")), Inner("b", extra={3: Inner("c")})], Answer(label="l", scores={"s": 0.5}),
          {1: "int key", True: "bool key", None: "none key", 2.5: [Flag.ON, {"deep": (Inner("d"),)}]}),
    {"set": {1, 2}, "bytes": b"raw", "enum": Colour.RED, "flag": Flag.ON},
]


def test_jsonable_and_the_hash_are_the_reference_walks_on_every_kind_of_value():
    for value in VALUES:
        assert jsonable(value) == reference_jsonable(value), value
        assert content_hash(value) == reference_hash(value), value


def test_the_sample_dialogues_hash_as_before():
    dialogues = list(load_sample().dialogues.values())
    assert dialogues and [content_hash(d) for d in dialogues] == [reference_hash(d) for d in dialogues]
