"""Sextuple extraction: `direct`, `rag` and `window` (event bucket), each an async function of one dialogue.

Each returns the reference prediction shape: one record per utterance,
`{input_sentence, holder, event?, final_model_response: [{target, aspect, opinion, sentiment, rationale}]}`.
No method shows an utterance's prompt any later utterance (see `windows.py` for what pass 1 of `window` sees).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal

import numpy as np

from emocaustics.tasks.longdialogue.extract import prompts as P
from emocaustics.tasks.longdialogue.extract.bucket import EventBucket
from emocaustics.solve.ask import Ask, Asker
from emocaustics.solve.schema import schema_of
from emocaustics.tasks.longdialogue.embeddings import EmbeddingFailed, Embeddings  # noqa: F401 (the methods' inputs)
from emocaustics.tasks.longdialogue.extract.parse import Pass1Answer, SextupleAnswer, pass1_schema
from emocaustics.tasks.longdialogue.extract.windows import Window, recent_history, windows

EventContext = Literal["asof", "strict", "final"]


@dataclass(frozen=True, slots=True)
class DialogueInput:
    id: int
    sentences: tuple[str, ...]
    holders: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.sentences)

    def line(self, i: int) -> str:
        return P.line(i, self.holders[i], self.sentences[i])

    def lines(self, idx: range | list[int]) -> str:
        return "\n".join(self.line(i) for i in idx)


@dataclass(frozen=True, slots=True)
class WindowSettings:
    k: int = 20
    s: int = 5
    join_threshold: float = 0.85
    event_context: EventContext = "asof"
    max_events: int = 8
    max_log_lines: int = 6


def _record(d: DialogueInput, i: int, answer: SextupleAnswer, event: str | None = None) -> dict:
    rec: dict = {"input_sentence": d.sentences[i], "holder": d.holders[i]}
    if event is not None:
        rec["event"] = event
    rec["final_model_response"] = [s.model_dump() for s in answer.sextuples]
    return rec


async def direct(asker: Asker, d: DialogueInput) -> list[dict]:
    """One call per utterance with the whole history up to it; a prompt over the context is a failure, not cut."""
    schema = schema_of(SextupleAnswer)
    asks = [
        Ask(f"direct utterance {i}", P.DIRECT_SEXTUPLE.substitute(history=d.lines(range(i + 1)), index=i,
                                                                    holder=d.holders[i], sentence=d.sentences[i]),
            SextupleAnswer, schema)
        for i in range(len(d))
    ]
    answers = await asker.ask_many(asks)
    return [_record(d, i, a) for i, a in enumerate(answers)]


def retrieves(utterances: int, k: int, top_k: int) -> bool:
    """Whether `rag` consults embeddings on a dialogue of this length: only an utterance past the first K has an
    earlier line outside its recent history to retrieve."""
    return top_k > 0 and utterances > k


def retrieve(emb: np.ndarray, i: int, k: int, top_k: int, threshold: float) -> list[int]:
    """Earlier utterances outside the recent window most similar to utterance i (this dialogue's index only)."""
    first_recent = recent_history(i, k).start
    if first_recent == 0 or top_k <= 0:
        return []
    sims = emb[:first_recent] @ emb[i]
    order = np.argsort(-sims, kind="stable")[:top_k]
    return sorted(int(j) for j in order if sims[j] >= threshold)


async def rag(asker: Asker, d: DialogueInput, emb: np.ndarray | Embeddings | None, *, k: int = 20, top_k: int = 3,
              threshold: float = 0.5, chunk: int = 32) -> list[dict]:
    """One call per utterance with the K most recent and the top_k most similar earlier utterances. Utterance i
    retrieves among 0..i only, so its call goes out as soon as those are embedded (`chunk` utterances at a time).
    The first K utterances have no line older than their recent history to retrieve: their calls go out at once,
    and a dialogue of at most K utterances needs no embeddings at all (`retrieves`)."""
    emb = Embeddings.of(emb)
    schema = schema_of(SextupleAnswer)
    pending: list[asyncio.Task[list[SextupleAnswer]]] = []
    free = len(d) if top_k <= 0 else min(len(d), k)  # utterances that retrieve nothing
    bounds = sorted({0, free, *range(free, len(d), chunk), len(d)})
    try:
        for start, end in zip(bounds, bounds[1:]):
            if start < free:
                vecs = None
            else:
                assert emb is not None, f"rag needs embeddings: utterance {start} of a dialogue longer than {k}"
                vecs = await emb.upto(end)
            asks = []
            for i in range(start, end):
                hits = retrieve(vecs, i, k, top_k, threshold) if vecs is not None else []
                retrieved = d.lines(hits) if hits else P.NO_EVENTS
                asks.append(Ask(f"rag utterance {i}", P.RAG_SEXTUPLE.substitute(
                    retrieved=retrieved, history=d.lines(recent_history(i, k)), index=i, holder=d.holders[i],
                    sentence=d.sentences[i]), SextupleAnswer, schema))
            pending.append(asyncio.ensure_future(asker.ask_many(asks)))
        answers = [a for task in pending for a in await task]
    finally:
        _stop(pending)
    return [_record(d, i, a) for i, a in enumerate(answers)]


def _stop(pending: list[asyncio.Task[list[SextupleAnswer]]]) -> None:
    """After a failure: stop the asks still running, and collect the errors nobody awaited."""
    for task in pending:
        if not task.done():
            task.cancel()
        elif not task.cancelled():
            task.exception()


async def pass1_window(asker: Asker, d: DialogueInput, w: Window, bucket: EventBucket, emb: Embeddings | None,
                       cfg: WindowSettings, targets: dict[int, str], priority: int = 0) -> None:
    """Update the bucket with the window's new utterances and resolve their targets (mutates bucket, targets)."""
    shown = bucket.on_show(cfg.max_events)
    user = P.WINDOW_PASS1.substitute(
        bucket=bucket.render(cfg.max_events, cfg.max_log_lines), window=d.lines(w.shown),
        new_ids="、".join(str(i) for i in w.new))
    step = f"pass1 window {w.index} (utterances {w.new_start}-{w.end - 1})"
    answer = await asker.ask(Ask(step, user, Pass1Answer, pass1_schema(len(w.new), [e.id for e in shown]), priority,
                                 live=True))
    for j, item in zip(w.new, answer.items):
        # rows up to the window's end are all `decide` reads (j and the events' earlier members): a long dialogue's
        # first windows need not wait for its later rows
        vecs = (await emb.upto(w.end) if emb is not None and bucket.needs_embeddings(item.event_id, item.event)
                else None)
        bucket.update(j, d.holders[j], item.event_id, item.event, item.log, vecs)
        targets[j] = item.target.strip() or default_target(d, j)


def default_target(d: DialogueInput, j: int) -> str:
    """The usual target when the model names none: the latest earlier utterance by another holder."""
    for i in range(j - 1, -1, -1):
        if d.holders[i] != d.holders[j]:
            return f"{d.holders[i]}的话"
    return ""


def _pass2_asks(d: DialogueInput, w: Window, events_text: str, names: dict[int, str], targets: dict[int, str],
                known: bool, priority: int = 0) -> list[Ask[SextupleAnswer]]:
    schema = schema_of(SextupleAnswer)
    asks = []
    for j in w.new:
        # history from the window's first shown utterance up to j: consecutive utterances share this prefix
        user = P.WINDOW_PASS2.substitute(
            events=events_text, history=d.lines(range(w.start, j + 1)), index=j, holder=d.holders[j],
            event=names.get(j, P.UNKNOWN) if known else P.UNKNOWN,
            target=targets.get(j, P.UNKNOWN) if known else P.UNKNOWN, sentence=d.sentences[j])
        asks.append(Ask(f"pass2 utterance {j}", user, SextupleAnswer, schema, priority, live=True))
    return asks


async def window(asker: Asker, d: DialogueInput, emb: np.ndarray | Embeddings | None,
                 cfg: WindowSettings = WindowSettings(), then: int = 0) -> tuple[list[dict], EventBucket]:
    """Pass 1 over trailing windows builds the bucket; pass 2 asks per utterance with the event context first.

    event_context: `asof` (default) shows the bucket right after the window that absorbed the utterance (the
    earliest state that knows its event); `strict` the bucket before that window (no later text at all; the
    utterance's own event and target are then shown as unknown); `final` the bucket after the whole dialogue,
    as the reference does (it leaks the future into earlier utterances; kept to reproduce published numbers).
    Pass 2 of a window starts as soon as its snapshot exists, overlapping later pass-1 windows (not for `final`).
    `then`: sequential calls of this dialogue that wait for this whole pass (a chain run built on it); with the
    windows still ahead it sets each call's priority (pass 1 is the dialogue's critical path).
    """
    emb = Embeddings.of(emb)
    bucket = EventBucket(threshold=cfg.join_threshold)
    targets: dict[int, str] = {}
    names: dict[int, str] = {}
    ws = windows(len(d), cfg.k, cfg.s)
    pending: list[tuple[Window, asyncio.Task[list[SextupleAnswer]]]] = []
    later: list[Window] = []
    try:
        for w in ws:
            before = bucket.render(cfg.max_events, cfg.max_log_lines)
            # after this call: the later windows, then one round of pass 2, then `then` more
            await pass1_window(asker, d, w, bucket, emb, cfg, targets, priority=-(len(ws) - w.index + then))
            for j in w.new:
                names[j] = bucket.event_name(j) or P.UNKNOWN
            if cfg.event_context == "final":
                later.append(w)
                continue
            text = before if cfg.event_context == "strict" else bucket.render(cfg.max_events, cfg.max_log_lines)
            asks = _pass2_asks(d, w, text, names, targets, known=cfg.event_context != "strict", priority=-then)
            pending.append((w, asyncio.ensure_future(asker.ask_many(asks))))
        if later:
            final_text = bucket.render(cfg.max_events, cfg.max_log_lines)
            for w in later:
                pending.append((w, asyncio.ensure_future(
                    asker.ask_many(_pass2_asks(d, w, final_text, names, targets, True, priority=-then)))))
        answers: dict[int, SextupleAnswer] = {}
        for w, task in pending:
            for j, a in zip(w.new, await task):
                answers[j] = a
    finally:
        _stop([task for _, task in pending])
    records = [_record(d, j, answers[j], names[j]) for j in range(len(d))]
    return records, bucket
