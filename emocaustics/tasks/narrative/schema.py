"""JSON v3 narrative annotations: the typed story model and the parser that reads one from a decoded JSON value.

```
{"version": "3.0", "metadata": {...}, "source_info": {"text_content": "<full story>"},
 "characters": [{"name", "alias" (string or list), "archetype"}],
 "narrative_events": [{"id", "text_span": {"start", "end", "text"}, "agents": [..], "targets": [..],
                       "relationships": [{"agent", "target", "relationship_level1", "relationship_level2",
                                          "sentiment" (string or list)}],
                       "action_layer": {"category", "type", "context", "status", "function"}}]}
```

What is an error (the file cannot be scored; `NarrativeFormatError` names the file and the JSON path): not an object,
`version` absent or not 3.0, a value of the wrong type at a path (e.g. `narrative_events[2].text_span.start` not an
integer). What is not an error: any value may be null/""/[]/{} (ground truth is often incomplete -- see gtmissing.py);
unknown keys are ignored; `agents`/`targets` may be a single string. Spans are checked against a text separately
(`check_spans`): offsets outside the text or a `text` that disagrees with text_content[start:end] are reported as
issues and the span is scored by its offsets.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from emocaustics.core.errors import DataError
from emocaustics.core.textfile import shown

ACTION_FIELDS = ("category", "type", "context", "status", "function")


class NarrativeFormatError(DataError):
    """A JSON v3 file that cannot be read: names the file and the JSON path."""


@dataclass(frozen=True)
class Issue:
    """A problem reported with a file that does not stop it being scored (bad span, label outside the taxonomy)."""

    kind: str
    path: str
    message: str
    role: str = ""  # "gt" | "pred"

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "role": self.role, "path": self.path, "message": self.message}


@dataclass(frozen=True)
class Span:
    start: int | None
    end: int | None
    text: str | None

    def range_in(self, length: int) -> tuple[int, int] | None:
        """(start, end) when the offsets are a non-empty range inside a text of this length, else None."""
        if self.start is None or self.end is None or not 0 <= self.start < self.end <= length:
            return None
        return self.start, self.end


@dataclass(frozen=True)
class Character:
    name: str | None
    aliases: tuple[str, ...]
    archetype: str | None
    path: str


@dataclass(frozen=True)
class Relationship:
    agent: str | None
    target: str | None
    level1: str | None
    level2: str | None
    sentiment: tuple[str, ...]
    path: str


@dataclass(frozen=True)
class Action:
    category: str | None = None
    type: str | None = None
    context: str | None = None
    status: str | None = None
    function: str | None = None

    def get(self, name: str) -> str | None:
        return getattr(self, name)


@dataclass(frozen=True)
class Event:
    index: int
    id: str | None
    span: Span | None
    agents: tuple[str, ...]
    targets: tuple[str, ...]
    relationships: tuple[Relationship, ...]
    action: Action | None
    path: str


@dataclass
class Story:
    name: str
    text: str | None
    metadata: dict[str, Any]
    characters: list[Character]
    events: list[Event]
    issues: list[Issue] = field(default_factory=list)


# -- the parser ----------------------------------------------------------------------------------------------------
def _type_name(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


class _Reader:
    def __init__(self, file: str) -> None:
        self.file = file

    def fail(self, path: str, message: str) -> NarrativeFormatError:
        return NarrativeFormatError(message, file=self.file, field=path)

    def of(self, kind: type, value: Any, path: str) -> Any:
        """`value` when it is a `kind` (dict, list or str), the empty one for null, else the error at `path`."""
        if value is None:
            return kind()
        if not isinstance(value, kind):
            raise self.fail(path, f"expected {_type_name(kind())}, found {_type_name(value)}")
        return value

    obj = functools.partialmethod(of, dict)
    lst = functools.partialmethod(of, list)

    def text(self, value: Any, path: str) -> str | None:
        return self.of(str, value, path).strip() or None

    def texts(self, value: Any, path: str) -> tuple[str, ...]:
        """A string or a list of strings (blank entries dropped: they carry nothing)."""
        if isinstance(value, str):
            return (value.strip(),) if value.strip() else ()
        out = [self.text(v, f"{path}[{i}]") for i, v in enumerate(self.lst(value, path))]
        return tuple(v for v in out if v)

    def integer(self, value: Any, path: str) -> int | None:
        if value is None or value == "":
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(path, f"expected an integer, found {_type_name(value)}")
        return value

    def ident(self, value: Any, path: str) -> str | None:
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        return self.text(value, path)


def _version_ok(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip() in ("3.0", "3")
    return isinstance(value, (int, float)) and not isinstance(value, bool) and float(value) == 3.0


def parse_story(obj: Any, file: str, name: str | None = None) -> Story:
    """A decoded JSON v3 document -> Story; raises NarrativeFormatError naming `file` and the JSON path."""
    r = _Reader(file)
    root = r.obj(obj, "$") if obj is not None else None
    if not root:
        found = _type_name(obj) if not isinstance(obj, dict) else "an empty object"
        raise r.fail("$", f"expected a JSON v3 object, found {found}")
    if "version" not in root:
        raise r.fail("$.version", "not JSON v3: no version (expected \"3.0\")")
    if not _version_ok(root["version"]):
        raise r.fail("$.version", f"not JSON v3: version is {shown(root['version'])} (expected \"3.0\")")
    metadata = r.obj(root.get("metadata"), "$.metadata")
    source = r.obj(root.get("source_info"), "$.source_info")
    text = r.of(str, source.get("text_content"), "$.source_info.text_content") or None  # verbatim: offsets index it
    characters = []
    for i, c in enumerate(r.lst(root.get("characters"), "$.characters")):
        p = f"$.characters[{i}]"
        c = r.obj(c, p)
        characters.append(Character(r.text(c.get("name"), f"{p}.name"), r.texts(c.get("alias"), f"{p}.alias"),
                                     r.text(c.get("archetype"), f"{p}.archetype"), p))
    events = [_event(r, e, i) for i, e in enumerate(r.lst(root.get("narrative_events"), "$.narrative_events"))]
    return Story(name or file, text, metadata, characters, events)


def _event(r: _Reader, raw: Any, i: int) -> Event:
    p = f"$.narrative_events[{i}]"
    e = r.obj(raw, p)
    span = None
    if raw_span := r.obj(e.get("text_span"), f"{p}.text_span"):
        span = Span(r.integer(raw_span.get("start"), f"{p}.text_span.start"),
                    r.integer(raw_span.get("end"), f"{p}.text_span.end"),
                    r.text(raw_span.get("text"), f"{p}.text_span.text"))
    rels = []
    for j, rel in enumerate(r.lst(e.get("relationships"), f"{p}.relationships")):
        q = f"{p}.relationships[{j}]"
        rel = r.obj(rel, q)
        rels.append(Relationship(r.text(rel.get("agent"), f"{q}.agent"), r.text(rel.get("target"), f"{q}.target"),
                                 r.text(rel.get("relationship_level1"), f"{q}.relationship_level1"),
                                 r.text(rel.get("relationship_level2"), f"{q}.relationship_level2"),
                                 r.texts(rel.get("sentiment"), f"{q}.sentiment"), q))
    action = None
    if layer := r.obj(e.get("action_layer"), f"{p}.action_layer"):
        action = Action(**{f: r.text(layer.get(f), f"{p}.action_layer.{f}") for f in ACTION_FIELDS})
    return Event(i, r.ident(e.get("id"), f"{p}.id"), span, r.texts(e.get("agents"), f"{p}.agents"),
                 r.texts(e.get("targets"), f"{p}.targets"), tuple(rels), action, p)


def check_spans(story: Story, text: str | None, role: str) -> list[Issue]:
    """Spans that name offsets outside `text`, or whose `text` disagrees with text[start:end] (scored by offsets)."""
    issues: list[Issue] = []
    for ev in story.events:
        s = ev.span
        if s is None or (s.start is None and s.end is None):
            continue
        where = f"{ev.path}.text_span"
        if text is None:
            issues.append(Issue("span_without_text", where, "span given but no text_content to place it in", role))
        elif s.start is None or s.end is None:
            issues.append(Issue("span_incomplete", where, f"start={s.start}, end={s.end}: both offsets are needed",
                                role))
        elif s.range_in(len(text)) is None:
            issues.append(Issue("span_out_of_range", where,
                                f"offsets [{s.start}, {s.end}) fall outside the text (length {len(text)})", role))
        elif s.text is not None and s.text != text[s.start:s.end].strip():
            issues.append(Issue("span_text_mismatch", where,
                                f"text {s.text[:40]!r} differs from text_content[{s.start}:{s.end}] = "
                                f"{text[s.start:s.end][:40]!r}; scored by offsets", role))
    return issues
