"""Calibration predictors (no model): `oracle` and `baseline`.

A prediction (of these and of the LLM solver alike) is a JSON-able dict holding the official pair lists:
`{"subtask1": [["5_surprise", "2_0_3"], ...], "subtask2": [["5_surprise", "2"], ...]}` (a subtask not asked is None).

- `oracle` converts the gold exactly as the official scorer does (the same token rule, `[0, 0]` for a span it cannot
  find), so every official figure comes out 0.99999999... (the +1e-8 denominators), never 1.
- `baseline` names every utterance's own whole text as the cause of one fixed emotion (default `joy`, the commonest
  class), the text read by the gold's token rule (leading/trailing punctuation tokens dropped, as the annotated spans
  are): the floor every LLM must beat.
"""

from __future__ import annotations

from typing import Any

from emocaustics.core.task import Sample
from emocaustics.tasks.ecpe.spans import gold_indices, locate_span


def _texts(sample: Sample) -> list[str]:
    return [u["text"] for u in sample.input["utterances"]]


def oracle_prediction(sample: Sample, subtasks: tuple[int, ...]) -> dict[str, Any]:
    texts = _texts(sample)
    target = sample.target or {}
    out: dict[str, Any] = {"subtask1": None, "subtask2": None}
    if 1 in subtasks:
        pairs = []
        for emotion_part, cause in target.get("subtask1") or []:
            cu, span = cause.split("_", 1)
            start, end, _ = gold_indices(span, texts[int(cu) - 1])
            pairs.append([emotion_part, f"{int(cu)}_{start}_{end}"])
        out["subtask1"] = pairs
    if 2 in subtasks:
        out["subtask2"] = [[e, str(c)] for e, c in target.get("subtask2") or []]
    return out


def baseline_prediction(sample: Sample, subtasks: tuple[int, ...], emotion: str = "joy") -> dict[str, Any]:
    texts = _texts(sample)
    spans = [locate_span(t, t)[:2] for t in texts]  # an all-punctuation utterance: the whole of it
    return {
        "subtask1": [[f"{i}_{emotion}", f"{i}_{s}_{e}"] for i, (s, e) in enumerate(spans, 1)]
        if 1 in subtasks else None,
        "subtask2": [[f"{i}_{emotion}", str(i)] for i in range(1, len(texts) + 1)] if 2 in subtasks else None,
    }


def predict(method: str, samples: list[Sample], subtasks: tuple[int, ...], emotion: str = "joy") -> dict[str, Any]:
    if method == "oracle":
        return {s.id: oracle_prediction(s, subtasks) for s in samples}
    if method == "baseline":
        return {s.id: baseline_prediction(s, subtasks, emotion) for s in samples}
    raise ValueError(f"no calibration predictor {method!r}")
