"""One scoring path for the command line and the task: gold + checked prediction -> official figures, per-emotion
table, per-conversation counts (from which the corpus figures are recomputed) and per-pair outcomes.

The per-conversation counts also travel as flat integer columns, one per (subtask, emotion, count)
(`ecpe_s1_joy_correct`, ...): the job's per-sample score table (scores.parquet) carries them, and summing them over a
config's conversations gives back the official figures and per-emotion tables bit for bit (`figures_from_sums`), which
is how the report shows them without the scorer's in-memory results."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from emocaustics.tasks.ecpe import official as O
from emocaustics.tasks.ecpe.gold import read_gold
from emocaustics.tasks.ecpe.validate import Checked, Gold, Problem, SubmissionError, check_prediction


@dataclass
class ConversationCounts:
    """One conversation's integer counts: the 7 x 7 matrix (strict, or subtask 2) and, for subtask 1, the 7 x 4
    proportional table."""

    matrix: O.Matrix
    proportional: O.Matrix | None = None

    def metric_values(self, subtask: int) -> dict[str, float]:
        """Per-conversation figures for the long score rows: the micro F1 first (the job's per-sample `score`), then
        the micro counts over classes 1-6."""
        m = self.matrix
        tp = sum(m[j][j] for j in range(1, 7))
        predicted = sum(m[i][j] for i in range(7) for j in range(1, 7))
        gold = sum(m[j][i] for j in range(1, 7) for i in range(7))
        prefix = "s1_strict" if subtask == 1 else "s2"
        out = {f"{prefix}_f1": O.matrix_figures(m).micro[2],
               f"{prefix}_tp": tp, f"{prefix}_fp": predicted - tp, f"{prefix}_fn": gold - tp}
        if self.proportional is not None:
            t = self.proportional[1:]
            out.update({"s1_prop_f1": O.proportional_figures(self.proportional).micro[2],
                        "s1_prop_overlap": sum(r[O.OVERLAP] for r in t),
                        "s1_prop_pred_tokens": sum(r[O.PRED_LEN] for r in t),
                        "s1_prop_gold_tokens": sum(r[O.GOLD_LEN] for r in t)})
        return {k: float(v) for k, v in out.items()}

    def is_empty(self) -> bool:
        """No gold pair and no predicted pair of classes 1-6: the conversation's own F1 is undefined (0 / 0)."""
        m = self.matrix
        return not any(m[i][j] for i in range(7) for j in range(7) if i or j)

    def emotion_counts(self, subtask: int) -> dict[str, int]:
        """The counts per emotion (classes 1-6) as flat columns (see `count_columns`)."""
        m = self.matrix
        out: dict[str, int] = {}
        for j, emo in enumerate(O.EMOTIONS[1:], 1):
            values = {"correct": m[j][j], "predicted": sum(m[i][j] for i in range(7)), "gold": sum(m[j])}
            if subtask == 1 and self.proportional is not None:
                row = self.proportional[j]
                values.update({"overlap": row[O.OVERLAP], "pred_tokens": row[O.PRED_LEN],
                               "gold_tokens": row[O.GOLD_LEN], "gold_spans": row[O.GOLD_SPANS]})
            out.update({count_column(subtask, emo, k): v for k, v in values.items()})
        return out


# Per-emotion counts: strict (or subtask 2) matrix counts, then subtask 1's proportional table.
MATRIX_COUNTS = ("correct", "predicted", "gold")
PROPORTIONAL_COUNTS = ("overlap", "pred_tokens", "gold_tokens", "gold_spans")


def count_column(subtask: int, emotion: str, count: str) -> str:
    return f"ecpe_s{subtask}_{emotion}_{count}"


def count_columns(subtask: int) -> list[str]:
    """Every flat count column of one subtask, in a fixed order."""
    counts = MATRIX_COUNTS + (PROPORTIONAL_COUNTS if subtask == 1 else ())
    return [count_column(subtask, e, c) for e in O.EMOTIONS[1:] for c in counts]


def figures_from_sums(sums: dict[str, int], subtask: int) -> tuple[dict[str, float], pl.DataFrame]:
    """The official figures and the per-emotion table from the count columns summed over a set of conversations.

    Classes 1-6 only ever need the diagonal, the column sums and the row sums of the matrix (wrong predictions sit in
    row 0, missed gold in column 0), so the matrix rebuilt here has exactly the official one's sums: the figures are
    bit-identical to scoring the conversations together."""
    m = O.zeros(7, 7)
    t = O.zeros(7, 4)
    for j, emo in enumerate(O.EMOTIONS[1:], 1):
        def get(count: str) -> int:
            return int(sums[count_column(subtask, emo, count)])
        correct = get("correct")
        m[j][j], m[0][j], m[j][0] = correct, get("predicted") - correct, get("gold") - correct
        if subtask == 1:
            t[j][O.OVERLAP], t[j][O.PRED_LEN] = get("overlap"), get("pred_tokens")
            t[j][O.GOLD_LEN], t[j][O.GOLD_SPANS] = get("gold_tokens"), get("gold_spans")
    return O.subtask_figures(subtask, m, t)


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
    prediction counts as predicting nothing: a failed sample for the job and for `score ecpe`)."""
    subtask = gold.subtask
    convs: dict[int, ConversationCounts] = {}
    outcomes: list[tuple[int, tuple[int, ...], str]] = []
    sums: Counter[str] = Counter()  # the conversations' count columns, summed: the figures of them all
    for cid, conv in gold.conversations.items():
        pred = checked.pairs.get(cid, [])
        if subtask == 1:
            m, outs = O.strict_counts(conv.pairs, pred)  # type: ignore[arg-type]
            t = O.proportional_counts(conv.pairs, pred)  # type: ignore[arg-type]
        else:
            m, outs = O.pair_counts(conv.pairs, pred)  # type: ignore[arg-type]
            t = None
        convs[cid] = ConversationCounts(m, t)
        sums.update(convs[cid].emotion_counts(subtask))
        outcomes.extend((cid, p, what) for p, what in outs)
    return SubtaskResult(subtask, *figures_from_sums(sums, subtask), convs, outcomes,
                         [*gold.problems, *checked.problems])


def score_records(subtask: int, gold_records: Any, pred_records: Any, *, gold_file: str = "gold",
                  pred_file: str = "prediction") -> SubtaskResult:
    """Read, check (raising `SubmissionError` on any error) and score one subtask's records."""
    gold = read_gold(gold_records, subtask, gold_file)
    checked = check_prediction(pred_records, subtask, pred_file, gold)
    if checked.errors:
        raise SubmissionError(checked.problems)
    return score_subtask(gold, checked)
