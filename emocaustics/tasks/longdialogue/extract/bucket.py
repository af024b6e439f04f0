"""The event bucket of the `window` method: its state, the rules that update it, and its bounded rendering.

State: a list of events `{event, holders, description, sentence_ids}` where the description is a running log (one
line per utterance that joined the event), never a rewritten summary.

Update rule for one utterance j (pass 1), in this order:
  1. the LLM picked an existing event id (from the events on show)       -> join it            ("llm")
  2. else the LLM's new event name equals an existing event's name        -> join it            ("llm-name")
  3. else j's embedding has cosine >= threshold with a sentence already in
     some event (best such event)                                         -> join it            ("embedding")
  4. else                                                                 -> open a new event   ("new")
Joining appends j to sentence_ids, j's holder to holders (once), and a log line to the description.

Bounded prompt: the bucket in memory keeps everything; what a prompt shows is at most `max_events` events (the most
recently active ones, by the last utterance that joined them, shown in id order) and, per event, only the last
`max_log_lines` lines of its log, with a line saying how many earlier lines were left out. So a prompt's bucket part
is O(max_events * max_log_lines) however long the dialogue runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from emocaustics.tasks.longdialogue.extract.prompts import NO_EVENTS


@dataclass(slots=True)
class BucketEvent:
    id: int
    event: str
    holders: list[str] = field(default_factory=list)
    log: list[tuple[int, str]] = field(default_factory=list)  # (utterance index, what it adds)
    sentence_ids: list[int] = field(default_factory=list)

    @property
    def description(self) -> str:
        return "\n".join(f"[{i}] {text}" for i, text in self.log)


@dataclass(frozen=True, slots=True)
class Decision:
    event_id: int
    rule: str  # llm | llm-name | embedding | new


def _norm(name: str) -> str:
    return "".join(name.split()).lower()


@dataclass(slots=True)
class EventBucket:
    threshold: float = 0.85  # cosine for rule 3
    events: list[BucketEvent] = field(default_factory=list)
    assignment: dict[int, int] = field(default_factory=dict)  # utterance index -> event id

    def decide(self, j: int, llm_event_id: int, llm_event_name: str, emb: np.ndarray | None) -> Decision:
        """Which event utterance j joins (rules 1-4 above); does not change the bucket."""
        if 0 <= llm_event_id < len(self.events):
            return Decision(llm_event_id, "llm")
        if (named := self._named(llm_event_name)) is not None:
            return Decision(named.id, "llm-name")
        if emb is not None and self.events:
            best_id, best = -1, -2.0
            for ev in self.events:
                members = [m for m in ev.sentence_ids if m != j]
                if not members:
                    continue
                sim = float(np.max(emb[members] @ emb[j]))
                if sim > best:
                    best_id, best = ev.id, sim
            if best_id >= 0 and best >= self.threshold:
                return Decision(best_id, "embedding")
        return Decision(len(self.events), "new")

    def needs_embeddings(self, llm_event_id: int, llm_event_name: str) -> bool:
        """Whether `decide` would consult the embeddings (rules 1-2 do not apply and there are events to join):
        a dialogue's embeddings are awaited only then, so its first calls need not wait for the embedder."""
        return bool(self.events) and not 0 <= llm_event_id < len(self.events) and self._named(llm_event_name) is None

    def _named(self, name: str) -> BucketEvent | None:
        """The first event whose name equals `name` (whitespace and case aside; rule 2)."""
        name = _norm(name)
        return next((ev for ev in self.events if _norm(ev.event) == name), None) if name else None

    def update(self, j: int, holder: str, llm_event_id: int, llm_event_name: str, log_line: str,
               emb: np.ndarray | None) -> Decision:
        d = self.decide(j, llm_event_id, llm_event_name, emb)
        if d.rule == "new":
            ev = BucketEvent(id=len(self.events), event=llm_event_name.strip() or f"事件{len(self.events) + 1}")
            self.events.append(ev)
        else:
            ev = self.events[d.event_id]
        if holder not in ev.holders:
            ev.holders.append(holder)
        ev.sentence_ids.append(j)
        ev.log.append((j, log_line.strip()))
        self.assignment[j] = ev.id
        return d

    def on_show(self, max_events: int) -> list[BucketEvent]:
        # the most recently active: by the last utterance that joined (`update` makes an event with its first one)
        recent = sorted(self.events, key=lambda e: e.sentence_ids[-1], reverse=True)[:max_events]
        return sorted(recent, key=lambda e: e.id)

    def render(self, max_events: int = 8, max_log_lines: int = 6) -> str:
        shown = self.on_show(max_events)
        if not shown:
            return NO_EVENTS
        parts: list[str] = []
        hidden = len(self.events) - len(shown)
        if hidden:
            parts.append(f"（另有 {hidden} 个较早的事件未列出）")
        for ev in shown:
            lines = [f"事件 {ev.id}：{ev.event}（参与者：{'、'.join(ev.holders)}；共 {len(ev.sentence_ids)} 句）"]
            log = ev.log[-max_log_lines:]
            if len(ev.log) > len(log):
                lines.append(f"  …（省略 {len(ev.log) - len(log)} 条较早记录）")
            lines.extend(f"  [{i}] {text}" for i, text in log)
            parts.append("\n".join(lines))
        return "\n".join(parts)

    def event_name(self, j: int) -> str | None:
        eid = self.assignment.get(j)
        return None if eid is None else self.events[eid].event
