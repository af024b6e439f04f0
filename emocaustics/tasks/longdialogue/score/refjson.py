"""The published chain JSON as `get_emo_score.py` reads it: lazily, part by part where its walk reads it, raising
`ReferenceCrash` (naming the place) where the script would crash; and the text pairs whose cosines that walk may need.
The walk itself is `chains.score_dialogue_chains` under `policy.REFERENCE_CHAINS`.
"""

from __future__ import annotations

import json
from typing import Any

from emocaustics.tasks.longdialogue.data.schema import Chains, Emotion
from emocaustics.tasks.longdialogue.score.judge import ReferenceCrash


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


def gt_source_ids(em: Emotion, where: str) -> set[int]:
    raw = em.source_raw or ",".join(em.source_ids)
    try:
        return {int(t) for t in raw.replace("，", ",").split(",")}
    except ValueError:
        raise ReferenceCrash(f"{where}: ground-truth source_id {raw!r} is not a list of integers; the reference's "
                             "int() raises here") from None


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
