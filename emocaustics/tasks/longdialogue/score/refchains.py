"""`--compat reference` for emotion chains: the rules of the published `get_emo_score.py`, over the JSON it reads.

No models here: `sim(a, b)` is the cosine of two embedded texts, `answers` the judge's raw answers. Per dialogue:
- per ground-truth holder with n > 0 events (a holder without events adds nothing, not even to the denominator), each
  event is worth 1/n. The predicted events are the prediction's `events` of the same holder key.
- event: the predicted event of greatest cosine, strictly above 0 (the first of equals; one at cosine <= 0 is never
  taken; events may be taken again by later ground-truth events). The judge is asked about it whenever there is one.
  It matches unless both its cosine and the judge's value are below 0.3 (the script's default `--event_threshold`).
- each emotion of a matched event is worth 1/(n * its event's emotion count): its counterpart is the predicted
  emotion of that event with the greatest reason cosine, strictly above 0 (first of equals). The judge is asked about
  the two reasons; state scores 1 when exactly equal (no trimming, no case folding); source_id scores 1 when the
  predicted value is `in` the set of the ground truth's ids read with int() (so 2 and 2.0 match "2", the string "2"
  never does); reason-judge scores the judge's 1 and reason-embed the cosine, both only when the judge said 1.
- an event without emotions adds nothing but its 1/n to the denominator.
- per file: each total over the holders' summed worth, as a percentage rounded to 2 places (0.0 when no holder has
  events); over files: the mean of the file percentages, rounded to 2 places.
Where the reference raises (a ground-truth source_id that int() cannot read, such as "self"; a judge answer that is
not an integer; a predicted emotion without "state"; shapes it indexes wrongly) `ReferenceCrash` names the place.

Judge answers arrive as a mapping; questions not in it are returned in `RefChainOutcome.missing` (the caller asks
them in one batch and calls again), since whether later questions are asked depends on earlier answers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from emocaustics.tasks.longdialogue.data.schema import Chains, Emotion
from emocaustics.tasks.longdialogue.score.judge import Answer, Question, ReferenceCrash, answer_value, as_question_text

SimFn = Callable[[str, str], float]
EVENT_THRESHOLD = 0.3
SCORES = ("state_score", "source_id_score", "reason_llm_score", "reason_embed_score")
COLUMNS = ("total_state_score_percentage", "total_source_id_score_percentage", "total_reason_llm_score_percentage",
           "total_reason_embed_score_percentage")
JUDGE_COLUMNS = ("total_reason_llm_score_percentage", "total_reason_embed_score_percentage")


@dataclass(frozen=True, slots=True)
class RefChainItem:
    holder: str
    event_index: int
    gt_event: str
    pred_event: str | None
    event_sim: float | None
    event_judge: int | None
    event_matched: bool
    emotion_index: int | None = None  # None: an event without emotions
    gt_state: str | None = None
    gt_reason: str | None = None
    gt_source: str | None = None
    pred_emotion_index: int | None = None
    pred_state: str | None = None
    pred_reason: str | None = None
    pred_source: str | None = None  # the predicted value as JSON text: "2" (an int) vs "\"2\"" (a string)
    reason_sim: float | None = None
    reason_judge: int | None = None
    state_score: int = 0
    source_id_score: int = 0
    reason_llm_score: int = 0
    reason_embed_score: float = 0.0
    weight: float = 0.0  # 1 / (events of the holder * emotions of the event)


@dataclass(slots=True)
class RefChainOutcome:
    items: list[RefChainItem] = field(default_factory=list)
    totals: dict[str, float] = field(default_factory=lambda: {s: 0.0 for s in SCORES})
    possible: float = 0.0
    missing: set[Question] = field(default_factory=set)

    def percentages(self) -> dict[str, float]:
        return {c: (round(self.totals[s] / self.possible * 100, 2) if self.possible > 0 else 0.0)
                for s, c in zip(SCORES, COLUMNS)}


class _Pending(Exception):
    """An answer is still missing; what follows it in the walk waits for the next round."""


def embed_text(value: Any, where: str) -> str:
    """What the embeddings call receives: "" becomes " "; a value that is not text is refused by the API."""
    if not isinstance(value, str):
        raise ReferenceCrash(f"{where}: {type(value).__name__} {value!r} is not text; the embeddings API refuses it")
    return value or " "


def json_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _list_of_objects(value: Any, key: str, where: str) -> list[dict[str, Any]]:
    """A truthy non-list, or an element without `key`, is where the reference's comprehension raises."""
    if not isinstance(value, list):
        raise ReferenceCrash(f"{where}: {type(value).__name__} where a list is expected; the reference raises")
    for k, v in enumerate(value):
        if not isinstance(v, dict) or key not in v:
            raise ReferenceCrash(f"{where}, item {k}: no {key!r} to read; the reference raises")
    return value


def holder_events(pred: Any, holder: str) -> Any:
    """The prediction's `events` value for a holder (read for every ground-truth holder, as the reference does)."""
    if not isinstance(pred, dict):
        raise ReferenceCrash(f"prediction: top level is {type(pred).__name__}; the reference calls .get on it")
    info = pred.get(holder, {"events": []})
    if not isinstance(info, dict):
        raise ReferenceCrash(f"holder {holder}: {type(info).__name__} where {{'events': [...]}} is expected")
    return info.get("events", [])


def event_list(events: Any, holder: str) -> list[dict[str, Any]]:
    """The predicted events as the event matcher reads them (an empty value: none)."""
    return _list_of_objects(events, "event", f"holder {holder} events") if events else []


def pred_emotions_of(event: dict[str, Any], where: str) -> list[dict[str, Any]]:
    ems = event.get("emotions", [])
    if isinstance(ems, dict):
        ems = [ems]
    if isinstance(ems, list) and len(ems) == 1 and ems[0] == {}:
        return []  # the reference's explicit "no emotion" case
    if isinstance(ems, (list, str)) and not ems:
        return []
    return _list_of_objects(ems, "reason", f"{where} emotions")


def _best(text: str, options: list[str], sim: SimFn, where: str) -> tuple[int, float] | None:
    """The first option of greatest cosine strictly above 0 (the reference starts from 0.0 and needs `>`)."""
    a = embed_text(text, f"{where}, ground truth")
    texts = [embed_text(t, f"{where}, prediction {k}") for k, t in enumerate(options)]
    cosines = ((k, float(sim(a, t))) for k, t in enumerate(texts))
    # max replaces its pick only on a strictly greater cosine: the first of equals, as the reference's `>`
    return max((ks for ks in cosines if ks[1] > 0), key=lambda ks: ks[1], default=None)


def gt_source_ids(em: Emotion, where: str) -> set[int]:
    raw = em.source_raw or ",".join(em.source_ids)
    try:
        return {int(t) for t in raw.replace("，", ",").split(",")}
    except ValueError:
        raise ReferenceCrash(f"{where}: ground-truth source_id {raw!r} is not a list of integers; the reference's "
                             "int() raises here") from None


def _value(q: Question, answers: Mapping[Question, Answer] | None, missing: set[Question], where: str) -> int:
    if answers is None:
        return 0  # no judge: its value never counts
    if q not in answers:
        missing.add(q)
        raise _Pending
    return answer_value(answers[q], where)


def _emotion(row: RefChainItem, gt_em: Emotion, preds: list[dict[str, Any]], sim: SimFn,
             answers: Mapping[Question, Answer] | None, missing: set[Question], where: str) -> RefChainItem:
    best = _best(gt_em.reason, [p["reason"] for p in preds], sim, where)
    if best is None:
        return row
    j, s = best
    p = preds[j]
    llm = _value((as_question_text(gt_em.reason), as_question_text(p["reason"])), answers, missing, where)
    if "state" not in p:
        raise ReferenceCrash(f"{where}: predicted emotion {j} has no 'state'; the reference raises")
    ids = gt_source_ids(gt_em, where)
    try:
        source_ok = int(p["source_id"] in ids)
    except (KeyError, TypeError):  # the reference's bare except: a missing or unhashable id scores 0
        source_ok = 0
    return replace(row, pred_emotion_index=j, pred_state=json_text(p.get("state", "")),
                   pred_reason=json_text(p["reason"]), pred_source=json_text(p.get("source_id", "")), reason_sim=s,
                   reason_judge=llm if answers is not None else None, state_score=int(gt_em.state == p["state"]),
                   source_id_score=source_ok, reason_llm_score=llm if llm > 0 else 0,
                   reason_embed_score=s if llm > 0 else 0.0)


def score_dialogue(gt: Chains, pred: Any, sim: SimFn, answers: Mapping[Question, Answer] | None) -> RefChainOutcome:
    """One dialogue. Raises `ReferenceCrash` where the reference raises; stops at the first answer still missing (it
    may be the reference's first failure): then the outcome is incomplete and `missing` says what to ask."""
    out = RefChainOutcome()
    try:
        for holder, events in gt.items():
            n = len(events)
            raw_events = holder_events(pred, holder)
            if not n:
                continue
            role = dict.fromkeys(SCORES, 0.0)
            role_possible = 0.0
            for i, ev in enumerate(events):
                where = f"holder {holder} event {i}"
                preds = event_list(raw_events, holder)
                best = _best(ev.event, [p["event"] for p in preds], sim, where) if preds else None
                llm = 0
                if best is not None:
                    llm = _value((as_question_text(ev.event), as_question_text(preds[best[0]]["event"])),
                                 answers, missing=out.missing, where=where)
                matched = best is not None and not (best[1] < EVENT_THRESHOLD and llm < EVENT_THRESHOLD)
                base = RefChainItem(holder, i, ev.event, json_text(preds[best[0]]["event"]) if best else None,
                                    best[1] if best else None, llm if best and answers is not None else None, matched)
                if not ev.emotions:
                    out.items.append(base)
                for k, gt_em in enumerate(ev.emotions):
                    row = replace(base, emotion_index=k, gt_state=gt_em.state, gt_reason=gt_em.reason,
                                  gt_source=gt_em.source_raw or ",".join(gt_em.source_ids),
                                  weight=1 / len(ev.emotions) / n)
                    if matched and best is not None:
                        em_where = f"{where} emotion {k}"
                        row = _emotion(row, gt_em, pred_emotions_of(preds[best[0]], em_where), sim, answers,
                                       out.missing, em_where)
                    out.items.append(row)
                    if matched:
                        for s in SCORES:
                            role[s] += getattr(row, s) / len(ev.emotions) / n
                role_possible += 1 / n
            for s in SCORES:
                out.totals[s] += role[s]
            out.possible += role_possible
    except _Pending:
        return out
    return out


def needed_pairs(gt: Chains, pred: Any) -> set[tuple[str, str]]:
    """Every (gt, pred) text pair, as embedded, whose cosine the walk may need: events of the same holder, and the
    reasons of every predicted emotion of those events. Parts the reference cannot read are left out (the walk
    raises before it needs them)."""
    out: set[tuple[str, str]] = set()
    for holder, events in gt.items():
        try:
            preds = event_list(holder_events(pred, holder), holder) if events else []
            texts = [embed_text(p["event"], "") for p in preds]
        except ReferenceCrash:
            continue
        reasons: list[str] = []
        for p in preds:
            try:
                reasons += [embed_text(e["reason"], "") for e in pred_emotions_of(p, "")]
            except ReferenceCrash:
                continue
        for ev in events:
            try:
                out.update((embed_text(ev.event, ""), t) for t in texts)
                out.update((embed_text(g.reason, ""), r) for g in ev.emotions for r in reasons)
            except ReferenceCrash:
                continue
    return out
