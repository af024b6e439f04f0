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


def test_a_subtasks_figures_and_table_compute_each_metric_once(monkeypatch):
    """The official figures and the per-emotion table of a subtask come from one computation of each metric's
    figures (`official.subtask_figures`), not one for the figures and another for the table."""
    from emocaustics.tasks.ecpe import scoring

    calls: list[str] = []
    for name in ("matrix_figures", "proportional_figures"):
        real = getattr(O, name)
        monkeypatch.setattr(O, name, lambda table, real=real, name=name: calls.append(name) or real(table))
    hits, predicted, gold = [1, 0, 2, 0, 0, 3], [2, 1, 2, 0, 0, 3], [1, 0, 4, 1, 0, 3]
    sums = {}
    for st in (1, 2):
        for e, emo in enumerate(O.EMOTIONS[1:]):
            sums |= {scoring.count_column(st, emo, k): v for k, v in (("correct", hits[e]), ("predicted", predicted[e]),
                                                                      ("gold", gold[e]), ("overlap", hits[e]),
                                                                      ("pred_tokens", predicted[e]),
                                                                      ("gold_tokens", gold[e]), ("gold_spans", gold[e]))}
    figures, table = scoring.figures_from_sums(sums, 1)
    assert calls == ["matrix_figures", "proportional_figures"] and table.height == 6 and len(figures) == 12
    calls.clear()
    figures, table = scoring.figures_from_sums(sums, 2)
    assert calls == ["matrix_figures"] and table.height == 6 and len(figures) == 6
