"""The official SemEval-2024 Task 3 metrics, reproduced to the last digit, and the per-emotion tables.

Pairs here are already parsed and checked (see `validate.py`):
- subtask 1: `Pair1 = (emotion utterance, cause utterance, span start, span end, emotion index)`,
- subtask 2: `Pair2 = (emotion utterance, cause utterance, emotion index)`,
one list per conversation. Counting is per conversation with integers (`strict_counts`, `proportional_counts`,
`pair_counts`); the corpus figure is the official formula applied once to the summed counts (`subtask_figures`).
Because every official grouping key contains the conversation, summing per-conversation counts is
exactly what the official scorer computes on the whole file.

The final formulas are the official script's (numpy sums, on six classes the bits of its builtin sums; +1e-8 on every
denominator), so that the floating-point results are bit-identical. Quirks kept on purpose (the leaderboard has them):
a perfect submission scores 0.99999999..., not 1; weighted precision ignores false positives of classes without gold
pairs (their weight is 0); neutral (index 0) predictions cost nothing; with no gold pair of classes 1-6 at all the
weighted figures are nan (0/0), the micro ones 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
import polars as pl

from emocaustics.tasks.ecpe.spans import EMOTIONS

Pair1 = tuple[int, int, int, int, int]
Pair2 = tuple[int, int, int]
# 7 x 7: [gold class][predicted class]; correct on the diagonal, wrong in row 0, missed in column 0
Matrix = list[list[int]]

# Output keys and their order, as the official scores.txt writes them.
SUBTASK1_KEYS: tuple[str, ...] = (
    "weighted_strict_precision", "weighted_strict_recall", "weighted_strict_f1",
    "weighted_Proportional_precision", "weighted_Proportional_recall", "weighted_Proportional_f1",
    "strict_precision", "strict_recall", "strict_f1",
    "Proportional_precision", "Proportional_recall", "Proportional_f1",
)
SUBTASK2_KEYS: tuple[str, ...] = (
    "precision_pair", "recall_pair", "f1_pair", "weighted_precision", "weighted_recall", "weighted_f1",
)
PRIMARY = {1: "weighted_strict_f1", 2: "weighted_f1"}

# Columns of the proportional table (one row per class).
OVERLAP, GOLD_LEN, PRED_LEN, GOLD_SPANS = range(4)


def zeros(rows: int, cols: int) -> Matrix:
    return [[0] * cols for _ in range(rows)]


# -- counting, one conversation ------------------------------------------------------------------------------------
def strict_counts(gold: Sequence[Pair1], pred: Sequence[Pair1]) -> tuple[Matrix, list[tuple[Pair1, str]]]:
    """Strict match: a prediction is correct when its (start, end, emotion) is still among the gold items of its
    (emotion utterance, cause utterance) group; the item is then used up. Also returns each pair's outcome
    (`correct` / `wrong` for predictions, `missed` for gold)."""
    m = zeros(7, 7)
    open_items: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    for eu, cu, s, e, emo in gold:
        open_items.setdefault((eu, cu), []).append((s, e, emo))
    outcomes: list[tuple[Pair1, str]] = []
    for p in pred:
        items = open_items.get((p[0], p[1]))
        item = (p[2], p[3], p[4])
        if items is not None and item in items:
            items.remove(item)
            m[p[4]][p[4]] += 1
            outcomes.append((p, "correct"))
        else:
            m[0][p[4]] += 1
            outcomes.append((p, "wrong"))
    for (eu, cu), items in open_items.items():
        for s, e, emo in items:
            m[emo][0] += 1
            outcomes.append(((eu, cu, s, e, emo), "missed"))
    return m, outcomes


def _best_gold(pred: Pair1, spans: list[tuple[int, int, int]]) -> tuple[int, int, int] | None:
    """The gold span of the same emotion maximising overlap / gold length (ties: larger overlap, then the first):
    (index, gold length, overlap), or None when nothing overlaps by at least one token."""
    _, _, s, e, emo = pred
    best: tuple[int, int, int] | None = None
    best_score, best_overlap = 0.0, 0
    for i, (gs, ge, gemo) in enumerate(spans):
        if gemo != emo or e <= gs or s >= ge:
            continue
        overlap, length = min(e, ge) - max(s, gs), ge - gs
        if length <= 0:  # a [0, 0] gold span can only get here with a negative start; the official script divides by 0
            continue
        score = overlap / float(length)
        if score > best_score or (score == best_score and score > 0 and overlap > best_overlap):
            best, best_score, best_overlap = (i, length, overlap), score, overlap
    return best if best is not None and best[2] > 0 else None


def proportional_counts(gold: Sequence[Pair1], pred: Sequence[Pair1]) -> Matrix:
    """Proportional match, 7 x 4 (overlap, gold length, predicted length, gold spans) per class.

    Every prediction adds its length to its emotion's predicted length; one that overlaps a gold span of its group
    adds the overlap and that gold span's length (again for each prediction matching the same span); each gold span
    no prediction matched adds its length once; every gold span counts 1 in `gold spans` (the w-avg weights)."""
    t = zeros(7, 4)
    groups: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    for eu, cu, s, e, emo in gold:
        groups.setdefault((eu, cu), []).append((s, e, emo))
    matched: set[tuple[int, int, int]] = set()
    for p in pred:
        t[p[4]][PRED_LEN] += p[3] - p[2]
        spans = groups.get((p[0], p[1]))
        hit = _best_gold(p, spans) if spans else None
        if hit is None:
            continue
        idx, length, overlap = hit
        t[p[4]][OVERLAP] += overlap
        t[p[4]][GOLD_LEN] += length
        matched.add((p[0], p[1], idx))
    for (eu, cu), spans in groups.items():
        for i, (s, e, emo) in enumerate(spans):
            t[emo][GOLD_SPANS] += 1
            if (eu, cu, i) not in matched:
                t[emo][GOLD_LEN] += e - s
    return t


def pair_counts(gold: Sequence[Pair2], pred: Sequence[Pair2]) -> tuple[Matrix, list[tuple[Pair2, str]]]:
    """Subtask 2: a predicted (emotion utterance, cause utterance, emotion) is correct iff it is a gold pair."""
    m = zeros(7, 7)
    gold_set, pred_set = set(gold), set(pred)
    outcomes: list[tuple[Pair2, str]] = []
    for p in pred:
        ok = p in gold_set
        m[p[2] if ok else 0][p[2]] += 1
        outcomes.append((p, "correct" if ok else "wrong"))
    for g in gold:
        if g not in pred_set:
            m[g[2]][0] += 1
            outcomes.append((g, "missed"))
    return m, outcomes


# -- the official formulas ----------------------------------------------------------------------------------------
@dataclass
class Figures:
    """Per-class P/R/F (classes 1-6), their weights, and the w-avg and micro figures of one metric."""

    precision: list[float]
    recall: list[float]
    f1: list[float]
    weight: list[float]
    weighted: tuple[float, float, float]
    micro: tuple[float, float, float]


def _figures(hits: np.ndarray, predicted: np.ndarray, gold: np.ndarray, weight_of: np.ndarray) -> Figures:
    """The official formulas over classes 1-6: P = hits / predicted, R = hits / gold, F = 2PR / (P + R), each
    denominator + 1e-8; weights = each class's share of `weight_of`; micro P/R/F from the sums over the classes."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p = hits / (predicted + 1e-8)
        r = hits / (gold + 1e-8)
        f = 2 * p * r / (p + r + 1e-8)
        w = weight_of / np.sum(weight_of)
    weighted = (np.sum(p * w), np.sum(r * w), np.sum(f * w))
    mp = np.sum(hits) / (np.sum(predicted) + 1e-8)
    mr = np.sum(hits) / (np.sum(gold) + 1e-8)
    mf = 2 * mp * mr / (mp + mr + 1e-8)
    return Figures(p.tolist(), r.tolist(), f.tolist(), w.tolist(), _floats(weighted), _floats((mp, mr, mf)))


def matrix_figures(matrix: Matrix) -> Figures:
    """Strict and subtask-2 figures from a 7 x 7 matrix: hits the diagonal, predicted its column sums, gold its row
    sums, which are also the weights (each class's share of gold pairs)."""
    a = np.asarray(matrix, dtype=np.float64)
    return _figures(np.diagonal(a)[1:], np.sum(a, axis=0)[1:], np.sum(a, axis=1)[1:], np.sum(a, axis=1)[1:])


def proportional_figures(table: Matrix) -> Figures:
    """Proportional figures from the 7 x 4 table: hits the overlap, predicted and gold the two lengths; weights =
    each class's share of gold spans."""
    t = np.asarray(table, dtype=np.float64)[1:]
    return _figures(t[:, OVERLAP], t[:, PRED_LEN], t[:, GOLD_LEN], t[:, GOLD_SPANS])


def _floats(xs: Iterable[object]) -> tuple[float, float, float]:
    a, b, c = (float(x) for x in xs)  # type: ignore[arg-type]
    return a, b, c


def scores_txt(scores: dict[str, float]) -> str:
    """`key:value` lines exactly as the official scores.txt (Python's shortest repr of each float; nan as `nan`)."""
    return "".join(f"{k}:{v!r}\n" for k, v in scores.items())


# -- per-emotion tables -------------------------------------------------------------------------------------------
def _pair_columns(m: Matrix) -> dict[str, list[object]]:
    """Per emotion (classes 1-6): gold pairs (row sums), predicted pairs (column sums), correct (the diagonal)."""
    return {"emotion": list(EMOTIONS[1:]), "gold_pairs": [sum(m[j]) for j in range(1, 7)],
            "predicted_pairs": [sum(row[j] for row in m) for j in range(1, 7)],
            "correct": [m[j][j] for j in range(1, 7)]}


def subtask_figures(subtask: int, strict: Matrix, proportional: Matrix) -> tuple[dict[str, float], pl.DataFrame]:
    """A subtask's official figures in scores.txt order (subtask 1: the 12 of the strict matrix and the proportional
    table; subtask 2: the 6 of its matrix, micro first, then weighted) and its table, one row per emotion (classes
    1-6): counts, weights and P/R/F of each metric. Each metric's figures are computed once for both."""
    s = matrix_figures(strict)
    if subtask == 2:
        return dict(zip(SUBTASK2_KEYS, (*s.micro, *s.weighted))), pl.DataFrame({
            **_pair_columns(strict), "weight": s.weight, "precision": s.precision, "recall": s.recall, "f1": s.f1})
    t, p = proportional, proportional_figures(proportional)  # subtask 2's is not read
    return dict(zip(SUBTASK1_KEYS, (*s.weighted, *p.weighted, *s.micro, *p.micro))), pl.DataFrame({
        **_pair_columns(strict),
        "strict_weight": s.weight, "strict_precision": s.precision, "strict_recall": s.recall, "strict_f1": s.f1,
        "gold_spans": [t[j][GOLD_SPANS] for j in range(1, 7)],
        "overlap_tokens": [t[j][OVERLAP] for j in range(1, 7)],
        "predicted_tokens": [t[j][PRED_LEN] for j in range(1, 7)],
        "gold_tokens": [t[j][GOLD_LEN] for j in range(1, 7)],
        "proportional_weight": p.weight, "proportional_precision": p.precision,
        "proportional_recall": p.recall, "proportional_f1": p.f1,
    })
