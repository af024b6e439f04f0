"""Sentiment evaluation: the labels of each matched relationship pair (see relationships.py for the pairing).

A relationship may carry several labels (`sentiment` a string or a list); labels compare as normalised sets.
Per GT relationship with labels:
- matched to a predicted pair: shared GT-missing rule on the label set; when both are present, tp = |P & G|,
  fp = |P - G|, fn = |G - P|, and polarity (through the sentiment taxonomy) is right or wrong;
- no predicted partner: its labels were not predicted (prediction empty, GT present) -> fn += |G|.
Labels on predicted pairs without a GT partner are not compared (there is nothing to compare them with; the pair
itself is the relationships evaluator's false positive). A GT pair without labels and a labelled prediction: `extra`.

Polarity of a label set: the one polarity its labels share, else "mixed"; a GT label unknown to the taxonomy leaves
that pair's polarity unjudged (counted as GT missing for polarity); an unknown predicted label is wrong.
Metrics: label precision / recall / F1 (micro), polarity accuracy over matched pairs. Component score = mean of label
F1 and polarity accuracy (those not None). No GT relationship with labels -> not scored.
"""

from __future__ import annotations

from typing import Any

from emocaustics.tasks.narrative.alignment import Alignment
from emocaustics.tasks.narrative.characters import Resolver
from emocaustics.tasks.narrative.gtmissing import (Outcome, Tally, classify, component_result, mean_of, norm, prf,
                                                   ratio, unscored)
from emocaustics.tasks.narrative.relationships import RelPairing, describe, usable
from emocaustics.tasks.narrative.schema import Story
from emocaustics.tasks.narrative.taxonomy import Taxonomy

METRICS = ("label_precision", "label_recall", "label_f1", "polarity_accuracy")


def polarity(labels: tuple[str, ...], taxonomy: Taxonomy) -> str:
    found = {taxonomy.polarity(label) for label in labels}
    if "unknown" in found:
        return "unknown"
    return found.pop() if len(found) == 1 else "mixed"


def score_from_counts(c: dict[str, float]) -> float | None:
    _, _, f1 = prf(c.get("tp", 0), c.get("fp", 0), c.get("fn", 0))
    return mean_of([f1, ratio(c.get("polarity_correct", 0), c.get("polarity_total", 0))])


def evaluate_sentiment(pred: Story, gt: Story, alignment: Alignment, resolve: Resolver, rp: RelPairing,
                       taxonomy: Taxonomy) -> dict[str, Any]:
    labelled = sum(1 for ev in gt.events for r in ev.relationships if usable(r) and r.sentiment)
    if labelled == 0:
        return unscored("sentiment", "no ground-truth relationship carries a sentiment label",
                        len(gt.events), metrics=METRICS)
    tp = fp = fn = 0
    pol = Tally()
    extra: list[str] = []
    missing: list[str] = []
    details: list[dict[str, Any]] = []
    ok: dict[int, bool] = {}
    for p_ref, g_ref in rp.matched:
        p = pred.events[p_ref[0]].relationships[p_ref[1]]
        g = gt.events[g_ref[0]].relationships[g_ref[1]]
        name = describe(gt, g_ref)
        outcome = classify(g.sentiment, p.sentiment)
        if outcome is Outcome.BOTH_EMPTY:  # a usable GT pair without labels: counted in `unlabelled`
            continue
        if outcome is Outcome.EXTRA:
            extra.append(f"{name}: {', '.join(p.sentiment)}")
            continue
        gs, ps = {norm(x) for x in g.sentiment}, {norm(x) for x in p.sentiment}
        tp, fp, fn = tp + len(gs & ps), fp + len(ps - gs), fn + len(gs - ps)
        g_pol = polarity(g.sentiment, taxonomy)
        p_pol = polarity(p.sentiment, taxonomy) if p.sentiment else None
        if g_pol == "unknown":
            pol.add(Outcome.EXTRA if p_pol else Outcome.BOTH_EMPTY)
        else:
            pol.add(classify(g_pol, p_pol), p_pol == g_pol)
        right = gs == ps and (g_pol == "unknown" or p_pol == g_pol)
        ok[g_ref[0]] = ok.get(g_ref[0], True) and right
        details.append({"pair": name, "gt": list(g.sentiment), "pred": list(p.sentiment), "gt_polarity": g_pol,
                        "pred_polarity": p_pol, "correct": right})
    for ev_i, rel_i in rp.missed:
        g = gt.events[ev_i].relationships[rel_i]
        if g.sentiment:
            fn += len({norm(x) for x in g.sentiment})
            missing.append(describe(gt, (ev_i, rel_i)))
            ok[ev_i] = False
    counts = {"tp": tp, "fp": fp, "fn": fn, "polarity_correct": pol.correct, "polarity_total": pol.total}
    p_, r_, f_ = prf(tp, fp, fn)
    metrics = {"label_precision": p_, "label_recall": r_, "label_f1": f_, "polarity_accuracy": pol.accuracy(),
               "labelled_gt_pairs": labelled}
    unlabelled = sum(1 for ev in gt.events for r in ev.relationships if usable(r) and not r.sentiment)
    return component_result(
        "sentiment", score=score_from_counts(counts), metrics=metrics, counts=counts,
        gt_incomplete=bool(extra or unlabelled or pol.gt_empty),
        reason=f"{unlabelled} GT relationship(s) without sentiment" if unlabelled else None,
        skipped_events=sum(1 for ev in gt.events if not any(usable(r) and r.sentiment for r in ev.relationships)),
        extra=extra, missing=missing, details=details, event_ok=ok)
