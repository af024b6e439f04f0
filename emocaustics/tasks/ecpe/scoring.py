"""One scoring path for the command line and the task: gold + checked prediction -> official figures, per-emotion
table, per-conversation counts (from which the corpus figures are recomputed) and per-pair outcomes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from emocaustics.tasks.ecpe import official as O
from emocaustics.tasks.ecpe.validate import Checked, Gold, Problem, read_gold, read_prediction


@dataclass
class ConversationCounts:
    """One conversation's integer counts: the 7 x 7 matrix (strict, or subtask 2) and, for subtask 1, the 7 x 4
    proportional table."""

    matrix: O.Matrix
    proportional: O.Matrix | None = None

    def metric_values(self, subtask: int) -> dict[str, float]:
        """Per-conversation figures for the long score rows: micro counts over classes 1-6 and the micro F1."""
        m = self.matrix
        tp = sum(m[j][j] for j in range(1, 7))
        predicted = sum(m[i][j] for i in range(7) for j in range(1, 7))
        gold = sum(m[j][i] for j in range(1, 7) for i in range(7))
        prefix = "s1_strict" if subtask == 1 else "s2"
        out = {f"{prefix}_tp": tp, f"{prefix}_fp": predicted - tp, f"{prefix}_fn": gold - tp,
               f"{prefix}_f1": O.matrix_figures(m).micro[2]}
        if self.proportional is not None:
            t = self.proportional[1:]
            out.update({"s1_prop_overlap": sum(r[O.OVERLAP] for r in t),
                        "s1_prop_pred_tokens": sum(r[O.PRED_LEN] for r in t),
                        "s1_prop_gold_tokens": sum(r[O.GOLD_LEN] for r in t),
                        "s1_prop_f1": O.proportional_figures(self.proportional).micro[2]})
        return {k: float(v) for k, v in out.items()}


@dataclass
class SubtaskResult:
    subtask: int
    scores: dict[str, float]  # official keys, in scores.txt order
    table: pl.DataFrame  # per emotion
    conversations: dict[int, ConversationCounts]
    outcomes: list[tuple[int, tuple[int, ...], str]]  # (conversation, pair, correct|wrong|missed); strict for subtask 1
    problems: list[Problem] = field(default_factory=list)  # gold defects, then prediction warnings


def score_subtask(gold: Gold, checked: Checked) -> SubtaskResult:
    """Official scoring of a checked prediction; the gold list drives iteration (a conversation without a
    prediction counts as predicting nothing: `read_prediction` makes that an error for files)."""
    subtask = gold.subtask
    convs: dict[int, ConversationCounts] = {}
    outcomes: list[tuple[int, tuple[int, ...], str]] = []
    total, total_prop = O.zeros(7, 7), O.zeros(7, 4)
    for cid, conv in gold.conversations.items():
        pred = checked.pairs.get(cid, [])
        if subtask == 1:
            m, outs = O.strict_counts(conv.pairs, pred)  # type: ignore[arg-type]
            t = O.proportional_counts(conv.pairs, pred)  # type: ignore[arg-type]
            O.add_into(total_prop, t)
        else:
            m, outs = O.pair_counts(conv.pairs, pred)  # type: ignore[arg-type]
            t = None
        O.add_into(total, m)
        convs[cid] = ConversationCounts(m, t)
        outcomes.extend((cid, p, what) for p, what in outs)
    if subtask == 1:
        scores, table = O.subtask1_scores(total, total_prop), O.subtask1_table(total, total_prop)
    else:
        scores, table = O.subtask2_scores(total), O.subtask2_table(total)
    return SubtaskResult(subtask, scores, table, convs, outcomes, [*gold.problems, *checked.problems])


def score_records(subtask: int, gold_records: Any, pred_records: Any, *, gold_file: str = "gold",
                  pred_file: str = "prediction") -> SubtaskResult:
    """Read, check (raising `SubmissionError` on any error) and score one subtask's records."""
    gold = read_gold(gold_records, subtask, gold_file)
    return score_subtask(gold, read_prediction(pred_records, subtask, pred_file, gold))
