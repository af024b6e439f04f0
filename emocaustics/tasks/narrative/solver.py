"""The LLM annotator: a story -> a JSON v3 annotation, window by window.

The story is split into sentences (spans.split_sentences) and read in windows of `window_sentences` sentences, one
schema-guided call per window (taxonomies as enums; every string and list bounded, so the answer's token budget is
bounded). Windows run in sequence because each carries the state of the ones before: the characters found so far and
the events annotated so far with their ids (e1, e2, ... numbered across windows), so that a later window reuses names
and can say that an event `continues` an earlier one (its span then grows to cover the new sentences).

The model answers with sentence numbers, not character offsets (models cannot count characters); the span of an
event is the text of its sentences, trailing whitespace trimmed. Sentence numbers outside the window are clamped to
it and counted in metadata.solver_notes. Characters are merged across windows by normalised name or alias (the first
archetype given wins).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field, StringConstraints

from emocaustics.solve.ask import Ask, Asker
from emocaustics.solve.schema import schema_of
from emocaustics.tasks.narrative.gtmissing import norm
from emocaustics.tasks.narrative.prompts import PROMPTS_VERSION, SYSTEM, WINDOW
from emocaustics.tasks.narrative.spans import split_sentences
from emocaustics.tasks.narrative.taxonomy import POLARITIES, Taxonomy, default_taxonomy

Name = Annotated[str, StringConstraints(max_length=16)]
Label = Annotated[str, StringConstraints(max_length=24)]
MAX_CHARACTERS = 3  # per window answer (a window of a few sentences rarely brings more)
MAX_EVENTS = 3  # per window answer


class RelationshipOut(BaseModel):
    agent: Name
    target: Name
    relationship_level1: Label
    relationship_level2: Label
    sentiment: list[Label] = Field(max_length=2)


class ActionOut(BaseModel):
    category: Label
    type: Label
    context: Label
    status: Label
    function: Label


class EventOut(BaseModel):
    first_sentence: int
    last_sentence: int
    continues: Annotated[str, StringConstraints(max_length=6)]
    agents: list[Name] = Field(max_length=2)
    targets: list[Name] = Field(max_length=2)
    relationships: list[RelationshipOut] = Field(max_length=2)
    action_layer: ActionOut


class CharacterOut(BaseModel):
    name: Name
    aliases: list[Name] = Field(max_length=1)
    archetype: Label


class WindowAnswer(BaseModel):
    characters: list[CharacterOut] = Field(max_length=MAX_CHARACTERS)
    events: list[EventOut] = Field(max_length=MAX_EVENTS)


def answer_schema(taxonomy: Taxonomy, first: int, last: int) -> dict[str, Any]:
    """WindowAnswer's schema with the taxonomies as enums and the sentence numbers bounded to the window."""
    schema = schema_of(WindowAnswer)
    ev = schema["properties"]["events"]["items"]["properties"]
    for key in ("first_sentence", "last_sentence"):
        ev[key] |= {"minimum": first, "maximum": last}
    rel = ev["relationships"]["items"]["properties"]
    rel["relationship_level1"]["enum"] = list(taxonomy.relationships)
    rel["relationship_level2"]["enum"] = list(taxonomy.level2s())
    rel["sentiment"]["items"]["enum"] = list(taxonomy.sentiments) or list(POLARITIES)
    act = ev["action_layer"]["properties"]
    for field in ("category", "type", "context", "status", "function"):
        act[field]["enum"] = list(taxonomy.action_values(field))
    schema["properties"]["characters"]["items"]["properties"]["archetype"]["enum"] = list(taxonomy.archetypes)
    return schema


def system_prompt(taxonomy: Taxonomy) -> str:
    rel = "; ".join(f"{k} -> {', '.join(v)}" for k, v in taxonomy.relationships.items())
    cats = "; ".join(f"{k} -> {', '.join(v['types'])}" for k, v in taxonomy.categories.items())
    return SYSTEM.substitute(relationships=rel, sentiments=", ".join(taxonomy.sentiments), categories=cats,
                             contexts=", ".join(taxonomy.action_values("context")),
                             statuses=", ".join(taxonomy.action_values("status")),
                             functions=", ".join(taxonomy.action_values("function")),
                             archetypes=", ".join(taxonomy.archetypes))


class _State:
    """What the windows so far found: merged characters and the events with their sentence ranges."""

    def __init__(self) -> None:
        self.characters: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []  # with "_first"/"_last" sentence numbers until finished
        self.clamped = 0

    def add_character(self, c: CharacterOut) -> None:
        names = {norm(n) for n in (c.name, *c.aliases) if norm(n)}
        if not names:
            return
        for known in self.characters:
            if names & {norm(n) for n in (known["name"], *known["alias"])}:
                known["alias"] += [a for a in (c.name, *c.aliases)
                                   if norm(a) and norm(a) not in {norm(n) for n in (known["name"], *known["alias"])}]
                return
        self.characters.append({"name": c.name.strip(), "alias": [a.strip() for a in c.aliases if a.strip()],
                                "archetype": c.archetype})

    def add_event(self, e: EventOut, first: int, last: int) -> None:
        a, b = sorted((e.first_sentence, e.last_sentence))
        lo, hi = min(max(a, first), last), min(max(b, first), last)
        self.clamped += int((lo, hi) != (a, b))
        rels = [r.model_dump() for r in e.relationships]
        ref = e.continues.strip()
        earlier = next((x for x in self.events if x["id"] == ref), None) if ref else None
        if earlier is not None:
            earlier["_last"] = max(earlier["_last"], hi)
            earlier["agents"] += [n for n in e.agents if n not in earlier["agents"]]
            earlier["targets"] += [n for n in e.targets if n not in earlier["targets"]]
            earlier["relationships"] += rels
            return
        self.events.append({"id": f"e{len(self.events) + 1}", "_first": lo, "_last": hi, "agents": list(e.agents),
                            "targets": list(e.targets), "relationships": rels,
                            "action_layer": e.action_layer.model_dump()})

    def characters_line(self) -> str:
        return "; ".join(f"{c['name']}" + (f" (also {', '.join(c['alias'])})" if c["alias"] else "")
                         for c in self.characters) or "none yet"

    def events_line(self) -> str:
        return "; ".join(f"{e['id']}: {e['_first']}-{e['_last']}; {', '.join(e['agents']) or '-'}; "
                         f"{e['action_layer']['type']}" for e in self.events[-12:]) or "none yet"


def windows(n_sentences: int, size: int) -> list[tuple[int, int]]:
    """(first, last) sentence numbers of each window (1-based, inclusive)."""
    size = max(1, size)
    return [(a + 1, min(a + size, n_sentences)) for a in range(0, n_sentences, size)]


async def annotate(llm: Any, text: str, *, title: str | None = None, window_sentences: int = 6,
                   taxonomy: Taxonomy | None = None, affinity: str | None = None) -> dict[str, Any]:
    """Annotate one story into a JSON v3 document (raises SolveFailed naming the window when an answer stays bad)."""
    tax = taxonomy or default_taxonomy()
    sentences = split_sentences(text)
    asker = Asker(llm, system=system_prompt(tax), affinity=affinity)
    state = _State()
    plan = windows(len(sentences), window_sentences)
    for k, (first, last) in enumerate(plan):
        numbered = "\n".join(f"[{i}] {text[s:e].strip()}" for i, (s, e) in enumerate(sentences[first - 1:last], first))
        user = WINDOW.substitute(title=title or "(untitled)", characters=state.characters_line(),
                                 events=state.events_line(), first=first, last=last, total=len(sentences),
                                 window=numbered, max_events=MAX_EVENTS)
        answer = await asker.ask(Ask(step=f"window {k + 1}/{len(plan)} (sentences {first}-{last})", user=user,
                                     model=WindowAnswer, schema=answer_schema(tax, first, last),
                                     priority=-(len(plan) - 1 - k), live=len(plan) > 1))
        for c in answer.characters:
            state.add_character(c)
        for e in answer.events:
            state.add_event(e, first, last)
    events = []
    for e in state.events:
        start = sentences[e.pop("_first") - 1][0]
        end = sentences[e.pop("_last") - 1][1]
        while end > start and text[end - 1].isspace():
            end -= 1
        events.append({"id": e["id"], "text_span": {"start": start, "end": end, "text": text[start:end]}, **e})
    return {"version": "3.0",
            "metadata": {"title": title, "annotator": getattr(llm, "name", "llm"), "method": "llm",
                         "prompts_version": PROMPTS_VERSION, "taxonomy": tax.source, "windows": len(plan),
                         "window_sentences": window_sentences,
                         "solver_notes": {"clamped_sentence_numbers": state.clamped},
                         "calls": asker.stats.to_json()},
            "source_info": {"text_content": text}, "characters": state.characters, "narrative_events": events}
