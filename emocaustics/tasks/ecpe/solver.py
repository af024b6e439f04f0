"""LLM extraction of emotion-cause pairs, one conversation at a time: `direct` (one call with the whole conversation)
and `utterance` (one call per utterance with its history; causes only at or before it).

The model answers with (emotion utterance, emotion, cause utterance, cause span text) under a schema narrowed to the
conversation (utterance numbers as enums, strings and lists bounded). Each span's text is located in its cause
utterance by the gold's token rule (`spans.locate_span`); a span that is not found keeps its pair with the whole
utterance and is counted in `span_misses`. The prediction is the official pair lists plus what happened to them on
the way (the answers that did not parse and the re-asks are the sample's cost, in its stats row: `solve.item`):

    {"subtask1": [["5_surprise", "2_0_3"], ...], "subtask2": [["5_surprise", "2"], ...], "spans": [model text per
     subtask-1 pair], "span_misses": int, "duplicates": int, "dropped": [reasons], "no_cause": int}

The solver reads only `sample.input` utterance numbers, speakers and texts: no gold field can reach a prompt.

An answer that stops at its token budget is broken even when json-repair manages to close the cut JSON: the pairs
after the cut are gone. `CutAnswers` turns such an answer into an error, so that it is re-asked and, if it stays cut,
the conversation fails naming the step (never a shorter list of pairs passed off as the whole answer).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import BaseModel, Field

from emocaustics.models.base import Layer
from emocaustics.tasks.ecpe import prompts as P
from emocaustics.tasks.ecpe.spans import locate_span

CauseEmotion = Literal["anger", "disgust", "fear", "joy", "sadness", "surprise"]
AnyEmotion = Literal["neutral", "anger", "disgust", "fear", "joy", "sadness", "surprise"]
MAX_SPAN_CHARS = 400  # the longest test utterance has 271 characters
MAX_CAUSES = 8  # per utterance (the test set has at most 5 causes for one emotion)


class DirectPair(BaseModel):
    emotion_utterance: int
    emotion: CauseEmotion
    cause_utterance: int
    cause_span: str = Field(max_length=MAX_SPAN_CHARS)


class DirectAnswer(BaseModel):
    pairs: list[DirectPair] = Field(max_length=200)


class Cause(BaseModel):
    cause_utterance: int
    cause_span: str = Field(max_length=MAX_SPAN_CHARS)


class UtteranceAnswer(BaseModel):
    emotion: AnyEmotion
    causes: list[Cause] = Field(max_length=MAX_CAUSES)


@dataclass(frozen=True)
class Conversation:
    id: str
    speakers: tuple[str, ...]
    texts: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.texts)

    def lines(self, last: int) -> str:
        """Utterances 1..last, one per line."""
        return "\n".join(P.line(i, self.speakers[i - 1], self.texts[i - 1]) for i in range(1, last + 1))


def conversation_of(sample: Any) -> Conversation:
    """The solver's whole view of a sample: utterance speakers and texts, in order (nothing else is read)."""
    utts = sample.input["utterances"]
    return Conversation(sample.id, tuple(str(u["speaker"]) for u in utts), tuple(str(u["text"]) for u in utts))


def _span_chars(conv: Conversation, last: int) -> int:
    return min(MAX_SPAN_CHARS, max(len(t) for t in conv.texts[:last]) + 8)


def direct_schema(conv: Conversation, max_pairs: int) -> dict[str, Any]:
    from emocaustics.solve.schema import schema_of

    schema = schema_of(DirectAnswer)
    pairs = schema["properties"]["pairs"]
    pairs["maxItems"] = max_pairs
    item = pairs["items"]["properties"]
    ids = list(range(1, len(conv) + 1))
    item["emotion_utterance"]["enum"] = ids
    item["cause_utterance"]["enum"] = ids
    item["cause_span"]["maxLength"] = _span_chars(conv, len(conv))
    return schema


def utterance_schema(conv: Conversation, index: int) -> dict[str, Any]:
    from emocaustics.solve.schema import schema_of

    schema = schema_of(UtteranceAnswer)
    cause = schema["properties"]["causes"]["items"]["properties"]
    cause["cause_utterance"]["enum"] = list(range(1, index + 1))  # causes at or before the utterance
    cause["cause_span"]["maxLength"] = _span_chars(conv, index)
    return schema


RawPair = tuple[int, str, int, str]  # (emotion utterance, emotion, cause utterance, span text)


def build_prediction(conv: Conversation, raw: list[RawPair], *, causes_up_to_emotion: bool) -> dict[str, Any]:
    """Official pair lists from the model's pairs: ids checked (a bad one is dropped with its reason: only a
    backend without guided decoding can produce it), spans located, duplicates merged and counted."""
    spans: dict[tuple[str, str], str] = {}  # subtask-1 pair -> the model's span text (the first of its duplicates)
    pairs2: dict[tuple[str, str], None] = {}
    dropped: list[str] = []
    located = misses = 0
    n = len(conv)
    for eu, emotion, cu, span in raw:
        if not (1 <= eu <= n and 1 <= cu <= n):
            dropped.append(f"utterance number out of 1..{n}: emotion {eu}, cause {cu}")
            continue
        if causes_up_to_emotion and cu > eu:
            dropped.append(f"cause utterance {cu} after emotion utterance {eu}")
            continue
        start, end, found = locate_span(span, conv.texts[cu - 1])
        located, misses = located + 1, misses + (not found)
        spans.setdefault((f"{eu}_{emotion}", f"{cu}_{start}_{end}"), span)
        pairs2.setdefault((f"{eu}_{emotion}", str(cu)))
    return {"subtask1": [list(p) for p in spans], "subtask2": [list(p) for p in pairs2], "spans": list(spans.values()),
            "span_misses": misses, "duplicates": located - len(spans), "dropped": dropped}


async def solve_direct(asker: Any, conv: Conversation, max_pairs: int) -> dict[str, Any]:
    from emocaustics.solve.ask import Ask

    user = P.DIRECT.substitute(conversation=conv.lines(len(conv)))
    answer = await asker.ask(Ask(f"direct conversation {conv.id}", user, DirectAnswer, direct_schema(conv, max_pairs)))
    raw = [(p.emotion_utterance, p.emotion, p.cause_utterance, p.cause_span) for p in answer.pairs]
    return {**build_prediction(conv, raw, causes_up_to_emotion=False), "no_cause": 0}


async def solve_utterance(asker: Any, conv: Conversation) -> dict[str, Any]:
    """One independent call per utterance (all in flight at once); utterance i sees utterances 1..i only."""
    from emocaustics.solve.ask import Ask

    asks = [Ask(f"utterance {i} of conversation {conv.id}",
                P.UTTERANCE.substitute(history=conv.lines(i), index=i, speaker=conv.speakers[i - 1],
                                       text=conv.texts[i - 1]),
                UtteranceAnswer, utterance_schema(conv, i))
            for i in range(1, len(conv) + 1)]
    answers = await asker.ask_many(asks)
    raw: list[RawPair] = []
    no_cause = 0
    for i, a in enumerate(answers, 1):
        if a.emotion == "neutral":
            continue
        if not a.causes:
            no_cause += 1  # an emotion without a cause makes no pair
        raw.extend((i, a.emotion, c.cause_utterance, c.cause_span) for c in a.causes)
    return {**build_prediction(conv, raw, causes_up_to_emotion=True), "no_cause": no_cause}


class CutAnswers(Layer):
    """The model, with answers that ran into their max_tokens yet parsed (repaired) turned into errors: a layer of
    the model interface (`models.base.Layer`: the rest is the wrapped model's)."""

    async def generate(self, requests: list[Any]) -> list[Any]:
        answers = await self.llm.generate(requests)
        out = []
        for req, c in zip(requests, answers):
            budget = req.sampling.max_tokens
            if getattr(c, "error", None) is None and getattr(c, "repaired", False) and c.generated_tokens >= budget:
                c = replace(c, parsed=None, error=f"answer cut at max_tokens={budget} (json-repair closed the cut "
                                                  "JSON; what came after the cut is lost)")
            out.append(c)
        return out


async def solve(llm: Any, sample: Any, method: str, *, retries: int = 2, max_pairs: int = 40,
                max_tokens: int = 4096) -> dict[str, Any]:
    """One conversation through `method`; raises `SolveFailed` naming the step when an answer stays unreadable or
    cut. `max_tokens` caps each answer's budget (the schema's own bound is lower for small conversations)."""
    from emocaustics.solve.ask import Asker

    conv = conversation_of(sample)
    asker = Asker(CutAnswers(llm), system=P.SYSTEM, affinity=sample.id, retries=retries, max_tokens_cap=max_tokens)
    if method == "direct":
        return await solve_direct(asker, conv, max_pairs)
    if method == "utterance":
        return await solve_utterance(asker, conv)
    raise ValueError(f"no solver method {method!r}")
