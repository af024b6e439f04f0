"""Emotion-chain extraction: `direct` (one call), `window` (built on a sextuple run's events and sextuples), and the
merge of consecutive identical states per holder and event.

Output shape (the reference's, and the ground truth's): `{holder: {"events": [{"event", "emotions": [{"state",
"reason", "source_id"}]}]}}`, with every holder of the dialogue present (an empty list when it has no events).
"""

from __future__ import annotations

from emocaustics.tasks.longdialogue.data.schema import Emotion
from emocaustics.tasks.longdialogue.extract import prompts as P
from emocaustics.solve.ask import Ask, Asker
from emocaustics.solve.schema import schema_of
from emocaustics.tasks.longdialogue.extract.parse import (ChainDirectAnswer, ChainWindowAnswer, MergeAnswer, chain_direct_schema,
                                       chain_window_schema)
from emocaustics.tasks.longdialogue.extract.sextuple import DialogueInput
from emocaustics.tasks.longdialogue.extract.windows import windows


# holder -> event name -> emotions in order (dicts keep insertion order: the order events first appeared); an emotion's
# `to_json` joins its source ids with ","
ChainState = dict[str, dict[str, list[Emotion]]]


def holders_of(d: DialogueInput) -> list[str]:
    return list(dict.fromkeys(d.holders))


def to_json(d: DialogueInput, chains: ChainState) -> dict:
    return {h: {"events": [{"event": ev, "emotions": [e.to_json() for e in emos]}
                           for ev, emos in chains.get(h, {}).items()]} for h in holders_of(d)}


async def direct(asker: Asker, d: DialogueInput) -> ChainState:
    """The whole dialogue in one prompt per holder; a dialogue over the model's context fails, it is not cut."""
    hs = holders_of(d)
    dialogue = d.lines(range(len(d)))
    asks = [Ask(f"chain direct holder {h}", P.CHAIN_DIRECT.substitute(dialogue=dialogue, holders="、".join(hs), holder=h),
                ChainDirectAnswer, chain_direct_schema(hs)) for h in hs]
    chains: ChainState = {}
    for h, answer in zip(hs, await asker.ask_many(asks)):
        events = chains.setdefault(h, {})
        for ev in answer.events:  # an event named twice gets both lists, in order
            events.setdefault(ev.event.strip() or P.UNKNOWN, []).extend(
                Emotion(e.state, e.reason, (e.source_id,)) for e in ev.emotions)
    return chains


def _annotated(d: DialogueInput, i: int, sextuples: list[dict]) -> str:
    rec = sextuples[i]
    parts = []
    if rec.get("event"):
        parts.append(f"事件：{rec['event']}")
    for s in rec.get("final_model_response", [])[:2]:
        parts.append(f"情感：{s.get('sentiment', '')}；观点：{s.get('opinion', '')}；原因：{s.get('rationale', '')}")
    note = f"（{'；'.join(parts)}）" if parts else ""
    return f"{d.line(i)}{note}"


def _render_chains(chains: ChainState, per_event: int = 2, max_events: int = 4) -> str:
    """Bounded like the bucket: per holder the last `max_events` events, each with its last `per_event` emotions."""
    if not chains:
        return P.NO_EVENTS
    out = []
    for h, events in chains.items():
        for ev, emos in list(events.items())[-max_events:]:
            tail = "；".join(f"{e.state}（{e.reason}，来源 {','.join(e.source_ids)}）" for e in emos[-per_event:])
            out.append(f"{h} / {ev}：{tail}")
    return "\n".join(out)


async def window(asker: Asker, d: DialogueInput, sextuples: list[dict], *, k: int = 30, s: int = 10) -> ChainState:
    """Windows of the sextuple run's records; each window adds the emotions its new utterances show."""
    if len(sextuples) != len(d):
        raise ValueError(f"sextuple prediction has {len(sextuples)} records for {len(d)} utterances")
    hs = holders_of(d)
    chains: ChainState = {h: {} for h in hs}
    ws = windows(len(d), k, s)
    for w in ws:
        # events of the sextuple run seen up to this window's end (never later ones)
        names = (str(sextuples[i].get("event", "")).strip() for i in range(w.end))
        known = [e for e in dict.fromkeys(names) if e]
        user = P.CHAIN_WINDOW.substitute(
            events="\n".join(known) if known else P.NO_EVENTS, chains=_render_chains(chains),
            window="\n".join(_annotated(d, i, sextuples) for i in w.shown), new_ids="、".join(str(i) for i in w.new))
        step = f"chain window {w.index} (utterances {w.new_start}-{w.end - 1})"
        # after this call: the later windows, then the merge
        answer = await asker.ask(Ask(step, user, ChainWindowAnswer, chain_window_schema(hs, known, len(w.new)),
                                     priority=-(len(ws) - w.index), live=True))
        for item in answer.emotions:
            chains.setdefault(item.holder, {}).setdefault(item.event.strip() or P.UNKNOWN, []).append(
                Emotion(item.state, item.reason, (item.source_id,)))
    return chains


def runs_to_merge(emos: list[Emotion]) -> list[tuple[int, int]]:
    """[start, end) of every run of >= 2 consecutive emotions with the same state."""
    runs, i = [], 0
    while i < len(emos):
        j = i + 1
        while j < len(emos) and emos[j].state == emos[i].state:
            j += 1
        if j - i >= 2:
            runs.append((i, j))
        i = j
    return runs


async def merge(asker: Asker, chains: ChainState) -> ChainState:
    """Merge each run of consecutive identical states per holder and event: the LLM merges the reasons, the source
    ids are the union (first-seen order). All runs of a dialogue go to the model in one batch."""
    jobs: list[tuple[str, str, int, int]] = []
    asks: list[Ask[MergeAnswer]] = []
    for h, events in chains.items():
        for ev, emos in events.items():
            for a, b in runs_to_merge(emos):
                reasons = "\n".join(f"{n + 1}. {e.reason}" for n, e in enumerate(emos[a:b]))
                asks.append(Ask(f"chain merge {h}/{ev} emotions {a}-{b - 1}", P.CHAIN_MERGE.substitute(
                    holder=h, event=ev, state=emos[a].state, reasons=reasons), MergeAnswer, schema_of(MergeAnswer),
                    live=True))
                jobs.append((h, ev, a, b))
    answers = await asker.ask_many(asks) if asks else []
    merged: ChainState = {h: {ev: list(emos) for ev, emos in events.items()} for h, events in chains.items()}
    # replace runs from the back so that earlier indices stay valid
    for (h, ev, a, b), ans in sorted(zip(jobs, answers), key=lambda t: -t[0][2]):
        emos = merged[h][ev]
        union = tuple(dict.fromkeys(sid for e in emos[a:b] for sid in e.source_ids if sid))  # first-seen order
        emos[a:b] = [Emotion(emos[a].state, ans.reason, union)]
    return merged
