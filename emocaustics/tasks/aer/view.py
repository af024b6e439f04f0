"""How `emocaustics view` shows one AER question (`Report.view_sample`): the observed event, the four
options with gold and predicted marks, the credit (1 / 0.5 / 0, the official rule) and, under cot, the reasoning."""

from __future__ import annotations

from typing import Any

from emocaustics.tasks.aer import scoring


def view_sample(input: Any, target: Any, prediction: Any, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    inp = input if isinstance(input, dict) else {}
    gold = set(target or [])
    pred = prediction.get("answer") if isinstance(prediction, dict) else None
    chosen = set(pred or [])
    rows, marks = [], []
    for letter, text in sorted((inp.get("options") or {}).items()):
        rows.append([letter, text, "gold" if letter in gold else "", "chosen" if letter in chosen else ""])
        marks.append(("ok" if letter in gold else "bad") if letter in chosen else ("miss" if letter in gold else None))
    credit = scoring.question_score(pred, gold)
    sections: list[dict[str, Any]] = [
        {"title": f"Observed event (topic {inp.get('topic_id')})", "kind": "text", "text": inp.get("target_event", "")},
        {"title": f"Options: credit {credit:g} ({scoring.outcome(pred, gold)})", "kind": "table",
         "columns": ["option", "text", "gold", "prediction"], "rows": rows, "marks": marks},
        {"title": "Gold", "kind": "json", "value": target, "side": "gold"},
        {"title": "Prediction", "kind": "json", "value": prediction, "side": "prediction"},
    ]
    if isinstance(prediction, dict) and prediction.get("reasoning"):
        sections.insert(2, {"title": "Reasoning", "kind": "text", "text": prediction["reasoning"]})
    return sections
