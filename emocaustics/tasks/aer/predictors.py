"""Calibration rows, no model: `oracle` (the gold: scores 1.0), `random` (a seeded random non-empty subset per
question) and `all-options` (always A-D: a superset of every gold that is not all four, so it scores 0 -- a check that
supersets are punished)."""

from __future__ import annotations

import hashlib
import random
from typing import Any

from emocaustics.core.errors import UsageError
from emocaustics.core.task import Sample

LETTERS = ("A", "B", "C", "D")
PREDICTORS = ("oracle", "random", "all-options")
# The 15 non-empty subsets of A-D, in a fixed order.
SUBSETS = [tuple(x for i, x in enumerate(LETTERS) if mask >> i & 1) for mask in range(1, 16)]


def random_subset(sample_id: str, seed: int) -> list[str]:
    """Uniform over the 15 non-empty subsets, seeded by (seed, question id): a question gets the same answer in any
    selection of the split."""
    digest = hashlib.sha256(f"{seed}:{sample_id}".encode()).digest()
    return list(random.Random(digest).choice(SUBSETS))


def predict(method: str, samples: list[Sample], seed: int = 0) -> dict[str, Any]:
    """id -> {"answer": letters}; oracle skips questions without gold (they end up unanswered, and unscored)."""
    if method == "oracle":
        return {s.id: {"answer": sorted(s.target)} for s in samples if s.target is not None}
    if method == "random":
        return {s.id: {"answer": random_subset(s.id, seed)} for s in samples}
    if method == "all-options":
        return {s.id: {"answer": list(LETTERS)} for s in samples}
    raise UsageError(f"task 'aer' has no calibration predictor {method!r}; choose one of {', '.join(PREDICTORS)}")
