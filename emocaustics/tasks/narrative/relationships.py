"""Relationship evaluation: (agent, target) pairs per aligned event, names resolved through aliases.

Per GT event:
- GT relationships with no agent or no target cannot be keyed: skipped and counted (`skipped_relationships`).
- No usable GT relationship: the event is skipped (`skipped_events`); predicted relationships there are `extra`.
- GT event unaligned: its pairs are missed (false negatives).
- Aligned: predicted and GT relationships of the event are matched one-to-one by resolved (agent, target) key
  (one-to-many and many-to-one are just several keys; a repeated key matches occurrence by occurrence). A predicted
  pair with no GT partner is a false positive (the event's GT relationships are present, so they are compared).
Relationships of extra (unaligned predicted) events are `extra`.

Metrics: pair precision / recall / F1 (micro over events); `level1_accuracy`, `level2_accuracy` over matched pairs
(shared GT-missing rule per label); `pair_coverage` = matched / GT pairs of aligned events (recall without the pairs
of missed events). Component score = mean of pair F1, level1 and level2 accuracy (those not None).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from emocaustics.tasks.narrative.alignment import Alignment, event_label
from emocaustics.tasks.narrative.characters import Resolver
from emocaustics.tasks.narrative.gtmissing import (Outcome, Tally, classify, component_result, mean_of, prf, ratio,
                                                   same, unscored)
from emocaustics.tasks.narrative.schema import Relationship, Story

METRICS = ("pair_precision", "pair_recall", "pair_f1", "level1_accuracy", "level2_accuracy", "pair_coverage")
Ref = tuple[int, int]  # (event index, relationship index)


@dataclass
class RelPairing:
    """How the relationships of two stories pair up (shared by the relationship and sentiment evaluators)."""

    matched: list[tuple[Ref, Ref]] = field(default_factory=list)  # (pred ref, gt ref)
    false_pos: list[Ref] = field(default_factory=list)  # predicted pairs of aligned events whose GT pairs exist
    missed: list[Ref] = field(default_factory=list)  # GT pairs with no predicted partner (aligned or not)
    missed_in_aligned: int = 0
    extra: list[Ref] = field(default_factory=list)  # predicted pairs where GT has none (or extra events)
    skipped_events: list[int] = field(default_factory=list)  # GT events without usable relationships
    skipped_relationships: list[str] = field(default_factory=list)  # GT relationships without agent or target
    events_with_gt: int = 0


def usable(rel: Relationship) -> bool:
    return bool(rel.agent) and bool(rel.target)


def pair_relationships(pred: Story, gt: Story, alignment: Alignment, resolve: Resolver) -> RelPairing:
    out = RelPairing()
    g2p = alignment.gt_to_pred()
    for j, g_ev in enumerate(gt.events):
        gt_rels = [(k, r) for k, r in enumerate(g_ev.relationships) if usable(r)]
        out.skipped_relationships += [r.path for r in g_ev.relationships if not usable(r)]
        i = g2p.get(j)
        pred_rels = [(k, r) for k, r in enumerate(pred.events[i].relationships)] if i is not None else []
        if not gt_rels:
            out.skipped_events.append(j)
            out.extra += [(i, k) for k, _ in pred_rels if i is not None]
            continue
        out.events_with_gt += 1
        if i is None:
            out.missed += [(j, k) for k, _ in gt_rels]
            continue
        waiting: dict[tuple[str, str], list[int]] = defaultdict(list)
        for k, r in gt_rels:
            waiting[(resolve(r.agent), resolve(r.target))].append(k)
        for k, r in pred_rels:
            slot = waiting.get((resolve(r.agent), resolve(r.target)))
            if slot:
                out.matched.append(((i, k), (j, slot.pop(0))))
            else:
                out.false_pos.append((i, k))
        left = [(j, k) for ks in waiting.values() for k in ks]
        out.missed += left
        out.missed_in_aligned += len(left)
    for i in alignment.extra:
        out.extra += [(i, k) for k in range(len(pred.events[i].relationships))]
    return out


def score_from_counts(c: dict[str, float]) -> float | None:
    _, _, f1 = prf(c.get("tp", 0), c.get("fp", 0), c.get("fn", 0))
    return mean_of([f1, ratio(c.get("l1_correct", 0), c.get("l1_total", 0)),
                    ratio(c.get("l2_correct", 0), c.get("l2_total", 0))])


def describe(story: Story, ref: Ref) -> str:
    """`event: agent -> target` of the relationship at `ref` (the name both this and the sentiment component list)."""
    ev = story.events[ref[0]]
    r = ev.relationships[ref[1]]
    return f"{event_label(ev)}: {r.agent} -> {r.target}"


def evaluate_relationships(pred: Story, gt: Story, alignment: Alignment, resolve: Resolver,
                           rp: RelPairing) -> dict[str, Any]:
    if rp.events_with_gt == 0:
        reason = "no ground-truth event has a relationship with both agent and target"
        return unscored("relationships", reason, len(gt.events), extra=[describe(pred, r) for r in rp.extra],
                        metrics=METRICS)
    l1, l2 = Tally(), Tally()
    ok: dict[int, bool] = {}
    details = []
    for p_ref, g_ref in rp.matched:
        p = pred.events[p_ref[0]].relationships[p_ref[1]]
        g = gt.events[g_ref[0]].relationships[g_ref[1]]
        row: dict[str, Any] = {"pair": describe(gt, g_ref)}
        for tally, name, gv, pv in ((l1, "level1", g.level1, p.level1), (l2, "level2", g.level2, p.level2)):
            outcome = classify(gv, pv)
            right = outcome is Outcome.COMPARED and same(gv, pv)
            tally.add(outcome, right)
            row[name] = "correct" if right else "wrong" if outcome is Outcome.COMPARED else outcome.value
            wrong = outcome is Outcome.MISSING or (outcome is Outcome.COMPARED and not right)
            ok[g_ref[0]] = ok.get(g_ref[0], True) and not wrong
        details.append(row)
    for ref in rp.false_pos:
        ok[alignment.pred_to_gt()[ref[0]]] = False
    for ref in rp.missed:
        ok[ref[0]] = False
    tp, fp, fn = len(rp.matched), len(rp.false_pos), len(rp.missed)
    counts = {"tp": tp, "fp": fp, "fn": fn, "l1_correct": l1.correct, "l1_total": l1.total,
              "l2_correct": l2.correct, "l2_total": l2.total}
    p_, r_, f_ = prf(tp, fp, fn)
    metrics = {"pair_precision": p_, "pair_recall": r_, "pair_f1": f_, "level1_accuracy": l1.accuracy(),
               "level2_accuracy": l2.accuracy(), "pair_coverage": ratio(tp, tp + rp.missed_in_aligned),
               "false_positives": fp, "level_extra": l1.extra + l2.extra}
    incomplete = bool(rp.skipped_events or rp.skipped_relationships or rp.extra or l1.gt_empty or l2.gt_empty)
    reasons = []
    if rp.skipped_events:
        reasons.append(f"{len(rp.skipped_events)} GT event(s) without relationships skipped")
    if rp.skipped_relationships:
        reasons.append(f"{len(rp.skipped_relationships)} GT relationship(s) without agent or target skipped")
    return component_result(
        "relationships", score=score_from_counts(counts), metrics=metrics, counts=counts, gt_incomplete=incomplete,
        skipped_events=len(rp.skipped_events), reason="; ".join(reasons) or None,
        extra=[describe(pred, r) for r in rp.extra],
        missing=[describe(gt, r) for r in rp.missed],
        details={"matched": details, "false_positives": [describe(pred, r) for r in rp.false_pos]}, event_ok=ok)
