"""The official P/R/F, weight and micro formulas written once (`official._figures`): the strict (and subtask-2)
matrix and the proportional table are two ways of giving it hits, predicted, gold and weights per class, so the
same numbers give the same figures bit for bit, whichever table they come in."""

from __future__ import annotations

import random

from emocaustics.tasks.ecpe import official as O


def as_matrix(hits, predicted, gold):
    """A 7 x 7 matrix with these per-class diagonal, column and row sums (the rest in row / column 0)."""
    m = O.zeros(7, 7)
    for j in range(1, 7):
        m[j][j], m[0][j], m[j][0] = hits[j - 1], predicted[j - 1] - hits[j - 1], gold[j - 1] - hits[j - 1]
    return m


def as_table(hits, predicted, gold):
    t = O.zeros(7, 4)
    for j in range(1, 7):
        t[j][O.OVERLAP], t[j][O.PRED_LEN], t[j][O.GOLD_LEN], t[j][O.GOLD_SPANS] = (hits[j - 1], predicted[j - 1],
                                                                                    gold[j - 1], gold[j - 1])
    return t


def test_the_same_counts_give_the_same_figures_in_either_table(monkeypatch):
    calls = []
    real = O._figures
    monkeypatch.setattr(O, "_figures", lambda *a: calls.append(len(a)) or real(*a))
    rng = random.Random(5)
    for _ in range(500):
        hits = [rng.randint(0, 9) for _ in range(6)]
        predicted = [h + rng.randint(0, 5) for h in hits]
        gold = [h + rng.randint(0, 5) * rng.randint(0, 1) for h in hits]
        a, b = O.matrix_figures(as_matrix(hits, predicted, gold)), O.proportional_figures(as_table(hits, predicted,
                                                                                                   gold))
        assert repr(a) == repr(b)
    assert calls == [4] * 1000
    empty = O.matrix_figures(O.zeros(7, 7))
    assert empty.micro == (0.0, 0.0, 0.0) and all(w != w for w in empty.weight)  # 0 / 0 weights: nan
