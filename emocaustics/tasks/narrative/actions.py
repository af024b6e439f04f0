"""Action-layer evaluation: the five fields (category, type, context, status, function) per aligned event.

Accuracy of each field is taken over the fields the GT has (shared GT-missing rule per field): a GT field left empty
is not scored (a predicted value there is `extra`); a GT field present and the prediction empty, or the GT event not
aligned at all (missed), is wrong. An event whose GT action layer is wholly empty is skipped (`skipped_events`).
Complete match rate: scored events whose every GT field is right; partial: some but not all right.
Component score = field accuracy pooled over all fields (micro). No GT action field anywhere -> not scored.
"""

from __future__ import annotations

from typing import Any

from emocaustics.tasks.narrative.alignment import Alignment, event_label
from emocaustics.tasks.narrative.characters import Resolver
from emocaustics.tasks.narrative.gtmissing import (Outcome, Tally, classify, component_result, is_empty, ratio, same,
                                                   unscored)
from emocaustics.tasks.narrative.schema import ACTION_FIELDS, Action, Story

METRICS = ("field_accuracy", "complete_match_rate", "partial_match_rate",
           *(f"{f}_accuracy" for f in ACTION_FIELDS))
EMPTY = Action()


def score_from_counts(c: dict[str, float]) -> float | None:
    return ratio(c.get("correct", 0), c.get("total", 0))


def evaluate_actions(pred: Story, gt: Story, alignment: Alignment, resolve: Resolver) -> dict[str, Any]:
    g2p = alignment.gt_to_pred()
    tallies = {f: Tally() for f in ACTION_FIELDS}
    scored = complete = partial = skipped = 0
    extra: list[str] = []
    missing: list[str] = []
    details: list[dict[str, Any]] = []
    ok: dict[int, bool] = {}
    for j, g_ev in enumerate(gt.events):
        g = g_ev.action or EMPTY
        i = g2p.get(j)
        p = (pred.events[i].action or EMPTY) if i is not None else EMPTY
        label = event_label(g_ev)
        if all(is_empty(g.get(f)) for f in ACTION_FIELDS):
            skipped += 1
            extra += [f"{label}.{f}={p.get(f)}" for f in ACTION_FIELDS if not is_empty(p.get(f))]
            continue
        scored += 1
        right = 0
        have = 0
        row: dict[str, Any] = {"event": label, "aligned": i is not None}
        for f in ACTION_FIELDS:
            outcome = classify(g.get(f), p.get(f))
            good = outcome is Outcome.COMPARED and same(g.get(f), p.get(f))
            tallies[f].add(outcome, good)
            if outcome is Outcome.EXTRA:
                extra.append(f"{label}.{f}={p.get(f)}")
            if outcome in (Outcome.COMPARED, Outcome.MISSING):
                have += 1
                right += int(good)
                row[f] = "correct" if good else "wrong" if outcome is Outcome.COMPARED else "missing"
                if not good:
                    missing.append(f"{label}.{f}")
        complete += int(right == have)
        partial += int(0 < right < have)
        ok[j] = right == have
        details.append(row)
    for i in alignment.extra:
        a = pred.events[i].action or EMPTY
        extra += [f"{event_label(pred.events[i])}.{f}={a.get(f)}" for f in ACTION_FIELDS if not is_empty(a.get(f))]
    if scored == 0:
        return unscored("actions", "no ground-truth event has an action-layer field", skipped, extra=extra,
                        metrics=METRICS)
    correct = sum(t.correct for t in tallies.values())
    total = sum(t.total for t in tallies.values())
    counts = {"correct": correct, "total": total, "events_scored": scored, "complete": complete}
    metrics: dict[str, Any] = {"field_accuracy": ratio(correct, total), "complete_match_rate": complete / scored,
                               "partial_match_rate": partial / scored}
    metrics |= {f"{f}_accuracy": tallies[f].accuracy() for f in ACTION_FIELDS}
    gt_empty = sum(t.gt_empty for t in tallies.values())
    return component_result(
        "actions", score=score_from_counts(counts), metrics=metrics, counts=counts,
        gt_incomplete=bool(skipped or gt_empty), skipped_events=skipped,
        reason="; ".join(r for r in (f"{skipped} GT event(s) without an action layer skipped" if skipped else "",
                                     f"{gt_empty} GT field(s) empty in scored events" if gt_empty else "") if r)
        or None,
        extra=extra, missing=missing,
        details={"events": details, "fields": {f: t.to_json() for f, t in tallies.items()}},
        event_ok=ok)
