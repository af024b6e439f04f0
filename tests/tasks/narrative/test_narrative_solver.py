"""The LLM annotator with a schema-following double (no engine): valid JSON v3 the evaluators read, windows that
carry event ids and characters, clamped sentence numbers, failures that name the window."""

import asyncio
import hashlib
import json
from pathlib import Path

import pytest
from tasks.narrative.narrative_builders import SIX

from emocaustics.core.task import SolveFailed
from emocaustics.models.base import Completion
from emocaustics.solve.schema import token_budget
from emocaustics.tasks.narrative.composite import score_pair
from emocaustics.tasks.narrative.prompts import PROMPTS_VERSION
from emocaustics.tasks.narrative.schema import parse_story
from emocaustics.tasks.narrative.solver import annotate, answer_schema, windows
from emocaustics.tasks.narrative.taxonomy import default_taxonomy

SAMPLE = Path(__file__).resolve().parents[3] / "datasets" / "narrative"


def fill(schema, seed):
    """A small valid value of a schema node (first enum value, the minimum integer, one item per list)."""
    if "enum" in schema:
        return schema["enum"][0]
    t = schema.get("type")
    if t == "object":
        return {k: fill(v, f"{seed}.{k}") for k, v in schema["properties"].items()}
    if t == "array":
        return [fill(schema["items"], f"{seed}[0]")][: schema.get("maxItems", 1)]
    if t == "string":
        return ("名" + hashlib.sha1(seed.encode()).hexdigest()[:5])[: schema.get("maxLength", 6)]
    if t == "integer":
        return schema.get("minimum", 0)
    raise AssertionError(schema)


class Double:
    """Stands in for an LLM: answers each request with `answer(request, n)` or a schema fill."""

    name = "double"

    def __init__(self, answer=None):
        self.answer, self.requests = answer, []

    async def generate(self, requests):
        out = []
        for r in requests:
            self.requests.append(r)
            value = self.answer(r, len(self.requests) - 1) if self.answer else None
            if value is None:
                value = fill(r.schema, r.messages[-1]["content"])
            out.append(Completion(text=value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)))
        return out


def run(coro):
    return asyncio.run(coro)


def test_schema_is_bounded_and_uses_the_taxonomy():
    tax = default_taxonomy()
    s = answer_schema(tax, 4, 9)
    assert token_budget(s) <= 4096  # every string and list bounded, within the asker's cap
    ev = s["properties"]["events"]["items"]["properties"]
    assert ev["first_sentence"]["minimum"] == 4 and ev["last_sentence"]["maximum"] == 9
    assert ev["action_layer"]["properties"]["type"]["enum"] == list(tax.action_values("type"))
    assert ev["relationships"]["items"]["properties"]["sentiment"]["items"]["enum"] == list(tax.sentiments)
    assert len(PROMPTS_VERSION) == 12


def test_windows():
    assert windows(13, 6) == [(1, 6), (7, 12), (13, 13)] and windows(0, 6) == []


@pytest.mark.parametrize("name", ["lantern_zh", "ferry_en"])
def test_output_is_json_v3_that_the_evaluators_read(name):
    gt = json.loads((SAMPLE / "gt" / f"{name}.json").read_text(encoding="utf-8"))
    text = gt["source_info"]["text_content"]
    llm = Double()
    out = run(annotate(llm, text, title="t", window_sentences=4))
    story = parse_story(out, "pred.json")
    assert out["version"] == "3.0" and story.text == text and story.events
    for e in story.events:  # spans are whole sentences inside the text, text = text_content[start:end]
        assert e.span.range_in(len(text)) and e.span.text == text[e.span.start:e.span.end].strip()
    r = score_pair(out, gt)
    assert "error" not in r and r["overall_score"] is not None
    assert out["metadata"]["prompts_version"] == PROMPTS_VERSION
    assert all(r.schema is not None and r.affinity is None for r in llm.requests)


def test_windows_carry_ids_and_characters_and_continue_events():
    text = SIX  # six sentences, windows of 3: (1-3), (4-6)

    def answer(req, n):
        if n == 0:
            return {"characters": [{"name": "阿梅", "aliases": ["梅梅"], "archetype": "hero"}],
                    "events": [{"first_sentence": 1, "last_sentence": 2, "continues": "", "agents": ["阿梅"],
                                "targets": [], "relationships": [],
                                "action_layer": {"category": "physical", "type": "make", "context": "home",
                                                 "status": "ongoing", "function": "exposition"}},
                               {"first_sentence": 3, "last_sentence": 3, "continues": "", "agents": ["阿梅"],
                                "targets": [], "relationships": [],
                                "action_layer": {"category": "physical", "type": "give", "context": "home",
                                                 "status": "ongoing", "function": "complication"}}]}
        return {"characters": [{"name": "梅梅", "aliases": ["小梅"], "archetype": "ally"}],
                "events": [{"first_sentence": 4, "last_sentence": 4, "continues": "e2", "agents": ["梅梅"],
                            "targets": ["老周"], "relationships": [
                                {"agent": "梅梅", "target": "老周", "relationship_level1": "family",
                                 "relationship_level2": "relatives", "sentiment": ["trust"]}],
                            "action_layer": {"category": "physical", "type": "give", "context": "home",
                                             "status": "completed", "function": "complication"}},
                           {"first_sentence": 0, "last_sentence": 99, "continues": "", "agents": ["老周"],
                            "targets": [], "relationships": [],
                            "action_layer": {"category": "verbal", "type": "tell", "context": "home",
                                             "status": "completed", "function": "resolution"}}]}

    llm = Double(answer)
    out = run(annotate(llm, text, window_sentences=3))
    second = llm.requests[1].messages[-1]["content"]
    # the second window sees the characters and events of the first, with their ids and sentence numbers
    assert "阿梅 (also 梅梅)" in second and "e1: 1-2; 阿梅; make" in second and "e2: 3-3" in second
    assert "[4] 丁四。" in second and "[1]" not in second
    assert llm.requests[0].priority == -1 and llm.requests[1].priority == 0  # critical path first
    ids = [e["id"] for e in out["narrative_events"]]
    assert ids == ["e1", "e2", "e3"]  # e2 continued (no new id); the last event got the next id
    e2 = out["narrative_events"][1]
    assert (e2["text_span"]["start"], e2["text_span"]["end"]) == (6, 12)  # sentences 3-4 = [6, 12)
    assert e2["targets"] == ["老周"] and e2["relationships"][0]["sentiment"] == ["trust"]
    e3 = out["narrative_events"][2]  # 0..99 clamped to the window 4..6 = [9, 18)
    assert (e3["text_span"]["start"], e3["text_span"]["end"]) == (9, 18)
    assert out["metadata"]["solver_notes"]["clamped_sentence_numbers"] == 1
    # characters merged by alias, the first archetype kept
    assert out["characters"] == [{"name": "阿梅", "alias": ["梅梅", "小梅"], "archetype": "hero"}]


def test_an_answer_that_stays_bad_fails_naming_the_window():
    llm = Double(lambda req, n: "not json" if n >= 1 else None)  # window 1 answered; window 2 bad 3 times
    with pytest.raises(SolveFailed) as exc:
        run(annotate(llm, SIX, window_sentences=3))
    assert exc.value.step == "window 2/2 (sentences 4-6)" and "unparseable" in exc.value.reason


def test_a_retry_gets_a_new_seed():
    llm = Double(lambda req, n: "{" if n == 0 else None)
    run(annotate(llm, SIX, window_sentences=6))
    assert len(llm.requests) == 2 and llm.requests[1].sampling.seed != llm.requests[0].sampling.seed
