"""Character evaluation and the name resolver the other evaluators use.

Matching: a predicted and a GT character match when their normalised name-or-alias sets intersect (`norm`: case,
full-/half-width, whitespace). Matching is one-to-one by Hungarian assignment (two predicted characters cannot both
claim one GT character): as many pairs as possible, then, among assignments with that many, as many name = name pairs
as possible; both lists are put in one canonical order first, so that the pairs (and the scores) do not depend on the
order either list is in. (Weighting a name pair 2 and an alias pair 1 instead left exact ties, e.g. one name pair
against two alias pairs, to the solver, which settles them by list order: the same cast scored 1 or 2 true positives
depending on the order of the characters.)

Scores: precision, recall, F1 over characters (a GT cast list that is present is taken as complete, so an
unmatched predicted character is a false positive and is listed under `extra`); archetype accuracy over matched
characters under the shared GT-missing rule; component score = mean of F1 and archetype accuracy (those not None).
No usable GT character (list empty, or no name/alias anywhere) -> not scored (gt_incomplete).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from emocaustics.tasks.narrative.gtmissing import (Outcome, Tally, classify, component_result, mean_of, norm, prf,
                                                   ratio, same, unscored)
from emocaustics.tasks.narrative.schema import Character, Story

METRICS = ("precision", "recall", "f1", "archetype_accuracy")


def names_of(c: Character) -> set[str]:
    return {n for n in (norm(c.name), *(norm(a) for a in c.aliases)) if n}


def label_of(c: Character) -> str:
    return c.name or (c.aliases[0] if c.aliases else "?")


def _canonical(c: Character) -> tuple[str, list[str]]:
    return norm(c.name), sorted(names_of(c))


def match_characters(pred: list[Character], gt: list[Character]) -> list[tuple[int, int]]:
    """One-to-one (pred index, gt index) pairs whose names or aliases intersect: the most pairs, then the most
    name-to-name pairs among those (module docstring); sorted by pred index."""
    if not pred or not gt:
        return []
    p_order = sorted(range(len(pred)), key=lambda i: _canonical(pred[i]))
    g_order = sorted(range(len(gt)), key=lambda j: _canonical(gt[j]))
    pair = min(len(pred), len(gt)) + 1.0  # one more pair outweighs every name match an assignment can hold
    w = np.zeros((len(pred), len(gt)))
    for a, i in enumerate(p_order):
        p, pn = pred[i], names_of(pred[i])
        for b, j in enumerate(g_order):
            g = gt[j]
            if pn & names_of(g):
                w[a, b] = pair + (1.0 if p.name and g.name and same(p.name, g.name) else 0.0)
    # imported here: scipy.optimize takes 0.3 s, and every command imports this module (task discovery)
    from scipy.optimize import linear_sum_assignment
    rows, cols = linear_sum_assignment(w, maximize=True)
    return sorted((p_order[a], g_order[b]) for a, b in zip(rows, cols) if w[a, b] > 0)


class Resolver:
    """Maps any name or alias to one canonical key: the GT character it denotes (`gt#j`), a predicted character with
    no GT counterpart (`pred#i`), or the normalised name itself. GT names win over predicted ones."""

    def __init__(self, gt: list[Character], pred: list[Character]) -> None:
        self.keys: dict[str, str] = {}
        for j, g in enumerate(gt):
            for n in sorted(names_of(g)):
                self.keys.setdefault(n, f"gt#{j}")
        matched = dict(match_characters(pred, gt))
        for i, p in enumerate(pred):
            key = f"gt#{matched[i]}" if i in matched else f"pred#{i}"
            for n in sorted(names_of(p)):
                self.keys.setdefault(n, key)

    def __call__(self, name: str | None) -> str:
        n = norm(name)
        return self.keys.get(n, f"name:{n}")

    def many(self, names: tuple[str, ...] | list[str]) -> set[str]:
        return {self(n) for n in names if norm(n)}


def score_from_counts(c: dict[str, float]) -> float | None:
    _, _, f1 = prf(c.get("tp", 0), c.get("fp", 0), c.get("fn", 0))
    return mean_of([f1, ratio(c.get("archetype_correct", 0), c.get("archetype_total", 0))])


def evaluate_characters(pred: Story, gt: Story) -> dict[str, Any]:
    usable = [g for g in gt.characters if names_of(g)]
    skipped_gt = [g.path for g in gt.characters if not names_of(g)]
    if not usable:
        reason = ("ground truth lists no characters" if not gt.characters
                  else "no ground-truth character has a name or alias")
        return unscored("characters", reason, 0, extra=[label_of(p) for p in pred.characters], metrics=METRICS)
    preds = [p for p in pred.characters if names_of(p)]
    pairs = match_characters(preds, usable)
    matched_p = {i for i, _ in pairs}
    matched_g = {j for _, j in pairs}
    tp, fp, fn = len(pairs), len(preds) - len(pairs), len(usable) - len(pairs)
    arch = Tally()
    details = []
    for i, j in pairs:
        p, g = preds[i], usable[j]
        outcome = classify(g.archetype, p.archetype)
        ok = outcome is Outcome.COMPARED and same(g.archetype, p.archetype)
        arch.add(outcome, ok)
        details.append({"gt": label_of(g), "pred": label_of(p), "archetype": outcome.value,
                        "archetype_correct": ok if outcome in (Outcome.COMPARED, Outcome.MISSING) else None})
    p_, r_, f_ = prf(tp, fp, fn)
    counts = {"tp": tp, "fp": fp, "fn": fn, "archetype_correct": arch.correct, "archetype_total": arch.total}
    metrics = {"precision": p_, "recall": r_, "f1": f_, "archetype_accuracy": arch.accuracy(),
               "archetype_extra": arch.extra, "gt_characters": len(usable), "pred_characters": len(preds)}
    return component_result(
        "characters", score=score_from_counts(counts), metrics=metrics, counts=counts,
        gt_incomplete=bool(skipped_gt) or arch.gt_empty > 0,
        reason=f"{len(skipped_gt)} GT character(s) without name or alias skipped" if skipped_gt else None,
        extra=[label_of(p) for i, p in enumerate(preds) if i not in matched_p],
        missing=[label_of(g) for j, g in enumerate(usable) if j not in matched_g], details=details)
