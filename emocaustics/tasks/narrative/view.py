"""The narrative task's sample page in `emocaustics view` (`Report.view_sample`): the story with each event's
annotated span, the gold and predicted events side by side (span, agents, action, relationships), and the scorer's
component matches (characters, events, actions, relationships...) with their scores and reasons."""

from __future__ import annotations

import json
from typing import Any


def _events(doc: Any) -> dict[str, dict[str, Any]]:
    events = doc.get("narrative_events") if isinstance(doc, dict) else None
    return {str(e.get("id", n)): e for n, e in enumerate(events or []) if isinstance(e, dict)}


def _span(e: dict[str, Any] | None) -> str:
    ts = (e or {}).get("text_span")
    return str(ts.get("text", "")) if isinstance(ts, dict) else ""


def _action(e: dict[str, Any] | None) -> str:
    a = (e or {}).get("action_layer") or {}
    return " / ".join(str(a[k]) for k in ("category", "type", "function", "status") if a.get(k))


def _who(e: dict[str, Any] | None) -> str:
    e = e or {}
    return f"{', '.join(e.get('agents') or [])} -> {', '.join(e.get('targets') or [])}" if e else ""


def _marked(text: str, gold: dict[str, dict[str, Any]]) -> str:
    """The story with «id:…» around each gold event's span (by offsets, last first so earlier ones stay valid)."""
    spans = []
    for eid, e in gold.items():
        ts = e.get("text_span")
        if isinstance(ts, dict) and isinstance(ts.get("start"), int) and isinstance(ts.get("end"), int):
            spans.append((ts["start"], ts["end"], eid))
    for start, end, eid in sorted(spans, reverse=True):
        if 0 <= start < end <= len(text):
            text = f"{text[:start]}«{eid}: {text[start:end]}»{text[end:]}"
    return text


def view_sample(input: Any, target: Any, prediction: Any, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    inp = input if isinstance(input, dict) else {}
    gold, pred = _events(target), _events(prediction)
    rows, marks = [], []
    for eid in list(gold) + [k for k in pred if k not in gold]:
        g, p = gold.get(eid), pred.get(eid)
        same = g is not None and p is not None and (_span(g), _who(g), _action(g)) == (_span(p), _who(p), _action(p))
        rows.append([eid, _span(g), _span(p), _who(g), _who(p), _action(g), _action(p)])
        marks.append("ok" if same else "miss" if p is None else "bad")
    comp_rows, comp_marks = [], []
    for it in items:
        metrics = it.get("metrics")
        if isinstance(metrics, str):
            try:
                metrics = json.loads(metrics)
            except ValueError:
                pass
        score = it.get("score")
        comp_rows.append([it.get("component"), score, it.get("reason") or "", metrics, it.get("missing"),
                          it.get("extra")])
        comp_marks.append(None if score is None else "ok" if score >= 1 else "bad")
    return [
        {"title": f"Story: {inp.get('title', '')} (gold event spans in «»)", "kind": "text",
         "text": _marked(str(inp.get("text", "")), gold)},
        {"title": f"Events: {sum(m == 'ok' for m in marks)} of {len(rows)} alike", "kind": "table",
         "columns": ["event", "gold span", "predicted span", "gold agents -> targets", "predicted agents -> targets",
                     "gold action", "predicted action"], "rows": rows, "marks": marks},
        {"title": "Component matches", "kind": "table",
         "columns": ["component", "score", "reason", "metrics", "missing", "extra"], "rows": comp_rows,
         "marks": comp_marks},
        {"title": "Gold", "kind": "json", "value": target, "side": "gold"},
        {"title": "Prediction", "kind": "json", "value": prediction, "side": "prediction"},
    ]
