"""The ground-truth-missing rule every narrative evaluator shares, and the small arithmetic they all use.

Ground truth for narrative annotation is often incomplete, so an empty GT value never turns a prediction into an
error. For one value (a field, a list, a label set):

| GT      | prediction | outcome      | counts as                                                   |
|---------|------------|--------------|-------------------------------------------------------------|
| empty   | present    | `extra`      | listed in the report; not an error, not a false positive     |
| empty   | empty      | `both_empty` | matched, but outside every accuracy denominator              |
| present | empty      | `missing`    | a false negative (wrong, inside the denominator)             |
| present | present    | `compared`   | right or wrong by comparison                                 |

Empty means None, "" (after trimming), [] or {}. A component whose GT is wholly missing is not scored: its result
has `score: None`, `gt_incomplete: True`, a reason and how many events were skipped -- never 0, never 1
(see `unscored`). Every component result is a plain JSON-able dict built by `component_result`.
"""

from __future__ import annotations

import unicodedata
from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any


class Outcome(str, Enum):
    BOTH_EMPTY = "both_empty"
    EXTRA = "extra"
    MISSING = "missing"
    COMPARED = "compared"


def is_empty(value: Any) -> bool:
    """None, a blank string, an empty list/tuple/set or an empty dict."""
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        return len(value) == 0
    return False


def classify(gt: Any, pred: Any) -> Outcome:
    """Which row of the table above one (GT, prediction) value pair falls in."""
    g, p = is_empty(gt), is_empty(pred)
    if g:
        return Outcome.BOTH_EMPTY if p else Outcome.EXTRA
    return Outcome.MISSING if p else Outcome.COMPARED


def norm(text: str | None) -> str:
    """Comparison form of a label or a name: NFKC (full-width -> half-width), case folded, whitespace removed."""
    if text is None:
        return ""
    return "".join(unicodedata.normalize("NFKC", text).casefold().split())


def same(a: str | None, b: str | None) -> bool:
    return norm(a) == norm(b)


def ratio(num: float, den: float) -> float | None:
    """num / den, or None when there is nothing to divide by (an empty denominator is 'not measured', not 0)."""
    return num / den if den else None


def prf(tp: float, fp: float, fn: float) -> tuple[float | None, float | None, float | None]:
    """Precision, recall, F1. None when there is no GT and no prediction at all; otherwise an empty side counts 0
    (nothing predicted against a present GT is precision 0, like scikit-learn's zero_division=0)."""
    if tp + fp + fn == 0:
        return None, None, None
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def mean_of(values: list[float | None]) -> float | None:
    """Mean of the values that are not None (None when all are)."""
    got = [v for v in values if v is not None]
    return sum(got) / len(got) if got else None


@dataclass
class Tally:
    """Outcome counts of one compared field; accuracy = correct / (compared + missing)."""

    correct: int = 0
    compared: int = 0
    missing: int = 0
    extra: int = 0
    both_empty: int = 0

    def add(self, outcome: Outcome, correct: bool = False) -> None:
        setattr(self, outcome.value, getattr(self, outcome.value) + 1)  # each outcome counts in its own field
        self.correct += int(correct and outcome is Outcome.COMPARED)

    @property
    def total(self) -> int:
        return self.compared + self.missing

    @property
    def gt_empty(self) -> int:
        return self.extra + self.both_empty

    def accuracy(self) -> float | None:
        return ratio(self.correct, self.total)

    def to_json(self) -> dict[str, int]:
        return asdict(self)


def component_result(component: str, *, score: float | None, metrics: dict[str, float | None],
                     counts: dict[str, float], gt_incomplete: bool, skipped_events: int = 0,
                     reason: str | None = None, extra: list[Any] | None = None, missing: list[Any] | None = None,
                     details: Any = None, event_ok: dict[int, bool] | None = None) -> dict[str, Any]:
    """The one shape every evaluator returns (JSON-able).

    `counts` are the additive quantities the score is computed from, so many files can be pooled (micro);
    `event_ok` says, per GT event index, whether this component found that event fully right (for the summary's
    correct-event count)."""
    return {"component": component, "score": score, "gt_incomplete": gt_incomplete, "reason": reason,
            "skipped_events": skipped_events, "metrics": metrics, "counts": counts, "extra": extra or [],
            "missing": missing or [], "details": details if details is not None else [],
            "event_ok": {str(k): v for k, v in (event_ok or {}).items()}}


def unscored(component: str, reason: str, skipped_events: int, *, extra: list[Any] | None = None,
             metrics: tuple[str, ...] = ()) -> dict[str, Any]:
    """A component whose GT is wholly missing: every score None, gt_incomplete true, with the reason."""
    return component_result(component, score=None, metrics={m: None for m in metrics}, counts={},
                            gt_incomplete=True, skipped_events=skipped_events, reason=reason, extra=extra)
