"""Small builders for JSON v3 documents in the narrative tests (so each test states only what it is about)."""

from __future__ import annotations

from typing import Any

from emocaustics.tasks.narrative.schema import Story, parse_story

UNSET: Any = object()


def ch(name: Any, alias: Any = None, archetype: Any = None) -> dict[str, Any]:
    return {"name": name, "alias": alias, "archetype": archetype}


def rel(agent: Any, target: Any, l1: Any = None, l2: Any = None, sentiment: Any = None) -> dict[str, Any]:
    return {"agent": agent, "target": target, "relationship_level1": l1, "relationship_level2": l2,
            "sentiment": sentiment}


def act(category: Any = None, type_: Any = None, context: Any = None, status: Any = None,
        function: Any = None) -> dict[str, Any]:
    return {"category": category, "type": type_, "context": context, "status": status, "function": function}


def ev(eid: str, start: int | None = None, end: int | None = None, *, agents: Any = (), targets: Any = (),
       rels: Any = None, action: Any = None, text: Any = None) -> dict[str, Any]:
    span = None if start is None and end is None else {"start": start, "end": end, "text": text}
    return {"id": eid, "text_span": span, "agents": list(agents), "targets": list(targets), "relationships": rels,
            "action_layer": action}


def doc(text: str | None = "x" * 40, characters: Any = UNSET, events: Any = UNSET) -> dict[str, Any]:
    out: dict[str, Any] = {"version": "3.0", "metadata": {}, "source_info": {"text_content": text}}
    if characters is not UNSET:
        out["characters"] = characters
    if events is not UNSET:
        out["narrative_events"] = events
    return out


def story(d: dict[str, Any], name: str = "t") -> Story:
    return parse_story(d, f"{name}.json", name)


# A text of six Chinese sentences of three characters each: sentence k covers [3k, 3k + 3).
SIX = "甲一。乙二。丙三。丁四。戊五。己六。"


def close(got: Any, want: Any) -> bool:
    """Nested dicts / lists equal, floats to pytest.approx (which compares flat mappings only)."""
    import pytest

    if isinstance(want, dict):
        return isinstance(got, dict) and got.keys() == want.keys() and all(close(got[k], want[k]) for k in want)
    if isinstance(want, (list, tuple)):
        return isinstance(got, (list, tuple)) and len(got) == len(want) and all(map(close, got, want))
    if isinstance(want, float):
        return isinstance(got, (int, float)) and not isinstance(got, bool) and got == pytest.approx(want)
    return type(got) is type(want) and got == want
