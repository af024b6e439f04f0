"""The composite evaluation of one story: every component evaluator on one (prediction, GT) pair, combined.

`overall_score` is the weighted mean of the component scores that are not None; the weights (default 1 each,
configurable) are renormalised over the components that could be scored, so a component whose GT is missing neither
pulls the score down nor up. The result:
`{"overall_score", "component_scores": {name: score|None}, "detailed_results": {name: component result},
  "summary": {total/aligned/correct/missed/extra events, unscored components, issues, out-of-taxonomy labels,
              weights used}}`.

A GT event is *correct* when it is aligned and every component that has something to say about it found it right
(same sentence range, no relationship error, right labels, complete action match).

`score_pair(pred_obj, gt_obj, weights)` works on decoded JSON values and never raises for bad input: the error comes
back in the result (this is the function a Ray Data map applies to thousands of file pairs).
"""

from __future__ import annotations

from typing import Any, Callable

from emocaustics.core.errors import UsageError
from emocaustics.tasks.narrative import actions, alignment, characters, relationships, sentiment, spans
from emocaustics.tasks.narrative.schema import Issue, NarrativeFormatError, Story, check_spans, parse_story
from emocaustics.tasks.narrative.taxonomy import Taxonomy, default_taxonomy

COMPONENTS = ("characters", "events", "relationships", "sentiment", "actions", "spans")
DEFAULT_WEIGHTS: dict[str, float] = {c: 1.0 for c in COMPONENTS}
# counts -> score, per component (the same function scores one file and a pool of files: micro averages)
SCORE_FROM_COUNTS: dict[str, Callable[[dict[str, float]], float | None]] = {
    "characters": characters.score_from_counts, "events": alignment.score_from_counts,
    "relationships": relationships.score_from_counts, "sentiment": sentiment.score_from_counts,
    "actions": actions.score_from_counts, "spans": spans.score_from_counts,
}


def parse_weights(text: str | dict[str, float] | None) -> dict[str, float]:
    """`characters=2,spans=0.5` (or a dict) -> full weight map; unknown names and negative weights are errors."""
    weights = dict(DEFAULT_WEIGHTS)
    if not text:
        return weights
    items = text.items() if isinstance(text, dict) else (
        part.split("=", 1) if "=" in part else (part, "") for part in str(text).split(",") if part.strip())
    for key, value in items:
        key = str(key).strip()
        if key not in weights:
            raise UsageError(f"unknown component {key!r} in weights; components: {', '.join(COMPONENTS)}")
        try:
            w = float(value)
        except (TypeError, ValueError):
            raise UsageError(f"weight for {key!r} must be a number, got {value!r}") from None
        if w < 0:
            raise UsageError(f"weight for {key!r} must not be negative")
        weights[key] = w
    return weights


def weighted_overall(scores: dict[str, float | None], weights: dict[str, float]) -> float | None:
    """Weighted mean of the scores that are not None, weights renormalised over them (None if none has weight)."""
    got = {k: v for k, v in scores.items() if v is not None and weights.get(k, 0) > 0}
    total = sum(weights[k] for k in got)
    return sum(weights[k] * v for k, v in got.items()) / total if total else None


def score_story(pred: Story, gt: Story, weights: dict[str, float] | str | None = None,
                taxonomy: Taxonomy | None = None, n_t: int = 2) -> dict[str, Any]:
    """Every component on one story pair -> the composite result (see the module docstring)."""
    w = parse_weights(weights)
    tax = taxonomy or default_taxonomy()
    text = gt.text or pred.text
    issues = check_spans(gt, text, "gt") + check_spans(pred, text, "pred")
    if gt.text and pred.text and gt.text != pred.text:
        issues.append(Issue("text_mismatch", "$.source_info.text_content",
                            "prediction text_content differs from the ground truth's; spans placed in the GT text",
                            "pred"))
    resolve = characters.Resolver(gt.characters, pred.characters)
    align = alignment.align_events(pred, gt, text, resolve)
    pairing = relationships.pair_relationships(pred, gt, align, resolve)
    results = {
        "characters": characters.evaluate_characters(pred, gt),
        "events": alignment.evaluate_events(pred, gt, align),
        "relationships": relationships.evaluate_relationships(pred, gt, align, resolve, pairing),
        "sentiment": sentiment.evaluate_sentiment(pred, gt, align, resolve, pairing, tax),
        "actions": actions.evaluate_actions(pred, gt, align, resolve),
        "spans": spans.evaluate_spans(pred, gt, align, text, n_t),
    }
    scores = {k: r["score"] for k, r in results.items()}
    correct = 0
    for j in {str(g) for _, g, _, _ in align.pairs}:
        verdicts = [r["event_ok"][j] for r in results.values() if j in r["event_ok"]]
        correct += int(all(verdicts))
    summary = {
        "total_events": len(gt.events), "predicted_events": len(pred.events), "aligned_events": len(align.pairs),
        "correct_events": correct, "missed_events": len(align.missed), "extra_events": len(align.extra),
        "unscored_components": {k: r["reason"] for k, r in results.items() if r["score"] is None},
        "gt_incomplete_components": [k for k, r in results.items() if r["gt_incomplete"]],
        "issues": [i.to_json() for i in issues + gt.issues + pred.issues],
        "out_of_taxonomy": [i.to_json() for i in tax.check_story(gt, "gt") + tax.check_story(pred, "pred")],
        "weights_used": _weights_used(scores, w),
    }
    return {"overall_score": weighted_overall(scores, w), "component_scores": scores, "detailed_results": results,
            "summary": summary}


def _weights_used(scores: dict[str, float | None], w: dict[str, float]) -> dict[str, float]:
    got = {k: w[k] for k, v in scores.items() if v is not None and w.get(k, 0) > 0}
    total = sum(got.values())
    return {k: v / total for k, v in got.items()} if total else {}


def error_result(message: str, role: str) -> dict[str, Any]:
    return {"overall_score": None, "component_scores": {c: None for c in COMPONENTS}, "detailed_results": {},
            "summary": {}, "error": message, "error_in": role}


EMPTY_PREDICTION: dict[str, Any] = {"version": "3.0"}


def failed_result(gt: Story, reason: str, weights: dict[str, float] | str | None = None,
                  taxonomy: Taxonomy | None = None, n_t: int = 2) -> dict[str, Any]:
    """The result of a story whose prediction is missing or unusable (a failed sample, as everywhere in the tool):
    scored as if nothing was predicted, so it counts 0 on every component its GT can score and in `overall`, and
    its GT items enter the micro pools as missed; components without GT stay None. `failed` carries the reason."""
    floor = score_story(parse_story(EMPTY_PREDICTION, "empty prediction"), gt, weights, taxonomy, n_t)
    zero = {c: (None if v is None else 0.0) for c, v in floor["component_scores"].items()}
    return {**floor, "overall_score": None if floor["overall_score"] is None else 0.0, "component_scores": zero,
            "failed": reason}


def score_pair(pred_obj: Any, gt_obj: Any, weights: dict[str, float] | str | None = None, *,
               pred_name: str = "prediction", gt_name: str = "ground truth", taxonomy: Taxonomy | None = None,
               n_t: int = 2) -> dict[str, Any]:
    """Decoded JSON v3 prediction and GT -> composite result; a file that cannot be read gives `error` instead."""
    stories: dict[str, Story] = {}
    for role, obj, name in (("gt", gt_obj, gt_name), ("pred", pred_obj, pred_name)):  # the GT's error first
        try:
            stories[role] = parse_story(obj, name)
        except NarrativeFormatError as exc:
            return error_result(str(exc), role)
    return score_story(stories["pred"], stories["gt"], weights, taxonomy, n_t)
