"""Typed records for every LLM answer, and the JSON schemas that constrain them.

The schemas come from the pydantic models (one source of truth), inlined (no $ref) for the structured-output
backends, with every string bounded by maxLength and every list by maxItems: a randomly initialised model under
guided decoding otherwise runs a string to the token budget. Sentiments and states are enums of the five labels;
per-request enums (event ids on show, the dialogue's holders) are patched in by the builders below.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from emocaustics.solve.schema import schema_of

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
