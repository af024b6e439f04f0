"""Event alignment: which predicted event is which GT event (one-to-one), and the `events` component.

The design left this open; the decision:
- **Both spans valid** (offsets inside the text): weight = character IoU of the two spans. Spans decide alone here:
  an IoU of 0 means the events are not the same, whatever their participants.
- **A span missing or invalid on either side**: fall back to participants and action type,
  weight = 0.5 * Jaccard(agents+targets, names resolved through aliases) + 0.5 * [same action type], and only when
  the participants overlap (an equal action type alone is too weak an identity).
- One-to-one by maximum total weight (Hungarian assignment, `scipy.optimize.linear_sum_assignment`); pairs of
  weight 0 are dropped. Maximising the total, not taking best pairs greedily, keeps one long predicted span from
  stealing the GT event that a second predicted event fits better.
- Equal totals are broken towards events at similar positions in story order (events are told in order).
- Unaligned GT events are **missed** (each evaluator counts their contents as false negatives); unaligned predicted
  events are **extra**: the GT event list is not taken as exhaustive (an annotator marks the events they annotate),
  so an event absent from GT is listed, never a false positive.

`events` component: recall = aligned GT events / GT events (extra events are listed, not penalised); no GT events ->
not scored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from emocaustics.tasks.narrative.characters import Resolver
from emocaustics.tasks.narrative.gtmissing import component_result, ratio, same, unscored
from emocaustics.tasks.narrative.schema import Event, Story

FALLBACK_PARTICIPANTS = 0.5  # share of the fallback weight given to participant overlap (the rest: action type)
TIE_BREAK = 1e-6  # far below any real weight difference: only decides between equal totals


@dataclass
class Alignment:
    pairs: list[tuple[int, int, float, str]] = field(default_factory=list)  # (pred idx, gt idx, weight, basis)
    extra: list[int] = field(default_factory=list)  # predicted events with no GT counterpart
    missed: list[int] = field(default_factory=list)  # GT events with no predicted counterpart

    def gt_to_pred(self) -> dict[int, int]:
        return {g: p for p, g, _, _ in self.pairs}

    def pred_to_gt(self) -> dict[int, int]:
        return {p: g for p, g, _, _ in self.pairs}


def iou(a: tuple[int, int], b: tuple[int, int]) -> float:
    inter = min(a[1], b[1]) - max(a[0], b[0])
    if inter <= 0:
        return 0.0
    return inter / (max(a[1], b[1]) - min(a[0], b[0]))


def _range(ev: Event, length: int | None) -> tuple[int, int] | None:
    return ev.span.range_in(length) if ev.span is not None and length is not None else None


def _type(ev: Event) -> str | None:
    return ev.action.type if ev.action else None


def pair_weight(p: Event, g: Event, length: int | None, resolve: Resolver) -> tuple[float, str]:
    """(weight, basis) of aligning predicted event p with GT event g; weight 0 = not alignable."""
    pr, gr = _range(p, length), _range(g, length)
    if pr is not None and gr is not None:
        return iou(pr, gr), "span"
    pp = resolve.many(p.agents + p.targets)
    gp = resolve.many(g.agents + g.targets)
    if not pp & gp:
        return 0.0, "fallback"
    jac = len(pp & gp) / len(pp | gp)
    same_type = _type(p) is not None and _type(g) is not None and same(_type(p), _type(g))
    return FALLBACK_PARTICIPANTS * jac + (1 - FALLBACK_PARTICIPANTS) * float(same_type), "fallback"


def align_events(pred: Story, gt: Story, text: str | None, resolve: Resolver) -> Alignment:
    """Align predicted with GT events by maximum total weight (see the module docstring)."""
    length = len(text) if text is not None else None
    n, m = len(pred.events), len(gt.events)
    out = Alignment()
    if n and m:
        w = np.zeros((n, m))
        basis: dict[tuple[int, int], str] = {}
        for i, p in enumerate(pred.events):
            for j, g in enumerate(gt.events):
                w[i, j], basis[i, j] = pair_weight(p, g, length, resolve)
        # ties (e.g. two events with the same participants and no spans) go to the pair closer in story order
        closeness = 1 - np.abs(np.arange(n)[:, None] / n - np.arange(m)[None, :] / m)
        # imported here: scipy.optimize takes 0.3 s, and every command imports this module (task discovery)
        from scipy.optimize import linear_sum_assignment
        rows, cols = linear_sum_assignment(w + TIE_BREAK * closeness * (w > 0), maximize=True)
        out.pairs = [(int(i), int(j), float(w[i, j]), basis[i, j]) for i, j in zip(rows, cols) if w[i, j] > 0]
    p2g, g2p = out.pred_to_gt(), out.gt_to_pred()
    out.extra = [i for i in range(n) if i not in p2g]
    out.missed = [j for j in range(m) if j not in g2p]
    return out


def event_label(ev: Event) -> str:
    return ev.id if ev.id is not None else f"#{ev.index}"


def score_from_counts(c: dict[str, float]) -> float | None:
    return ratio(c.get("aligned", 0), c.get("gt_events", 0))


def evaluate_events(pred: Story, gt: Story, alignment: Alignment) -> dict[str, Any]:
    metrics = ("recall", "aligned", "missed", "extra")
    if not gt.events:
        return unscored("events", "ground truth has no narrative events", len(pred.events),
                        extra=[event_label(e) for e in pred.events], metrics=metrics)
    counts = {"aligned": len(alignment.pairs), "gt_events": len(gt.events)}
    spans = [w for _, _, w, b in alignment.pairs if b == "span"]
    details = [{"pred": event_label(pred.events[p]), "gt": event_label(gt.events[g]), "weight": round(w, 4),
                "basis": b} for p, g, w, b in alignment.pairs]
    metrics_v = {"recall": score_from_counts(counts), "aligned": len(alignment.pairs), "missed": len(alignment.missed),
                 "extra": len(alignment.extra), "by_span": len(spans), "by_fallback": len(alignment.pairs) - len(spans),
                 "mean_span_iou": sum(spans) / len(spans) if spans else None}
    return component_result(
        "events", score=score_from_counts(counts), metrics=metrics_v, counts=counts,
        gt_incomplete=bool(alignment.extra),
        reason=f"{len(alignment.extra)} predicted event(s) absent from GT listed as extra" if alignment.extra else None,
        extra=[event_label(pred.events[i]) for i in alignment.extra],
        missing=[event_label(gt.events[j]) for j in alignment.missed], details=details,
        event_ok={g: True for _, g, _, _ in alignment.pairs} | {j: False for j in alignment.missed})
