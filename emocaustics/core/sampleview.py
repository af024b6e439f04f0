"""An optional part of the task protocol (beside `core.task`'s `OwnPlan`; its own module because `core/task.py` is at
the line budget): how `emocaustics view` shows one sample of a task the way its researchers read it.

A task that has it returns sections built from the values as the eval log holds them (plain JSON: the sample's input,
its gold, the prediction, and the scorer's item rows for this sample, `Scored.items`):

    {"title": str, "kind": "text", "text": str}
    {"title": str, "kind": "table", "columns": [str], "rows": [[value]], "marks": [str | None]}  # a class per row:
                                                                        # "ok", "bad", "miss" colour the decision
    {"title": str, "kind": "json", "value": any}

Without it the viewer shows input, gold and prediction as JSON (`view/data.py`); the item decisions and the
transcript of calls are shown for every task.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class SampleView(Protocol):
    def view_sample(self, input: Any, target: Any, prediction: Any,
                    items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        ...
