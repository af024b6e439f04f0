"""How `emocaustics view` shows one judged conversation (`Report.view_sample`): the conversation as the judge read it
(its prompt's own rendering), then the worker's and the judge's rating of each criterion side by side (one judge
column per epoch), the judge's reason, and why an answer is unscored (it is counted, never read as 0)."""

from __future__ import annotations

from typing import Any

from emocaustics.tasks.dialoguejudge.prompts import user_message
from emocaustics.tasks.dialoguejudge.task import ratings_of


def view_sample(input: Any, target: Any, prediction: Any, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    inp = input if isinstance(input, dict) else {}
    human = target if isinstance(target, dict) else {}
    names = tuple(human)
    answers = prediction.get("epochs") if isinstance(prediction, dict) and "epochs" in prediction else [prediction]
    judged = [ratings_of(a, names) for a in answers]
    heads = ["judge"] if len(judged) == 1 else [f"judge, epoch {k}" for k in range(1, len(judged) + 1)]
    rows = [[n, human[n], *[(got or {}).get(n) for got, _ in judged]] for n in names]
    sections: list[dict[str, Any]] = [
        {"title": "The conversation, as the judge was shown it", "kind": "text",
         "text": user_message({"turns": [], **inp})},
        {"title": "Ratings, 0-100: the worker's and the judge's", "kind": "table",
         "columns": ["criterion", "worker", *heads], "rows": rows}]
    for head, answer, (got, why) in zip(heads, answers, judged):
        if got is None:
            sections.append({"title": f"{head}: unscored", "kind": "text", "text": why})
        elif isinstance(answer, dict) and answer.get("reason"):
            sections.append({"title": f"{head}: reason", "kind": "text", "text": str(answer["reason"])})
    return sections
