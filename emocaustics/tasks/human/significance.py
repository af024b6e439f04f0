"""Step 7 of the human-assessment method: significance between systems, rater agreement, correlation between score
types, and self-replication between two runs. The statistics themselves live in `emocaustics.stats`.

- `system_significance`: for every ordered pair of systems (ranked order), one-sided Mann-Whitney "greater" on the
  per-conversation mean z of passing workers; [i, j] small = system i significantly better than j; diagonal 1.
- `rater_agreement`: assignments grouped by their set of rated systems (qc included, as in the tool); within a group,
  Pearson r between every two assignments' z vectors (one per-conversation mean z per system, systems sorted by
  name). Pairs whose r is undefined (a constant vector) are counted, not kept.
- `score_correlations`: between the columns of a system table (overall and each score type) across systems:
  Pearson above the diagonal, Spearman below.
- `self_replication`: Pearson, Spearman and Kendall between two runs' system tables, per column, run 2's systems
  aligned to run 1's order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import polars as pl

from emocaustics.stats.correlation import METHODS, correlate, split_correlation_matrix
from emocaustics.stats.mannwhitney import mannwhitney_matrix
from emocaustics.stats.matrix import significance_frame

KEY_COLUMNS = ("model", "N")


def system_significance(passed_rows: pl.DataFrame, models: list[str]) -> np.ndarray:
    """(k x k) one-sided p-values over `models` (in that order) from the conversation rows of passing workers."""
    groups = [passed_rows.filter(pl.col("model") == m).get_column("z").to_numpy() for m in models]
    return mannwhitney_matrix(groups, alternative="greater")


@dataclass
class Agreement:
    pairs: pl.DataFrame  # assignment_a, assignment_b, systems, correlation
    undefined: int  # pairs left out because r was undefined


def rater_agreement(rows: pl.DataFrame) -> Agreement:
    """Pearson r between the z vectors of every two assignments that rated the same set of systems."""
    groups: dict[tuple[str, ...], list[tuple[str, list[float]]]] = {}
    for (assignment,), part in rows.sort("assignment").group_by("assignment", maintain_order=True):
        part = part.sort("model", maintain_order=True)
        key = tuple(part.get_column("model").to_list())
        groups.setdefault(key, []).append((str(assignment), part.get_column("z").to_list()))
    out: list[dict] = []
    undefined = 0
    for key, members in groups.items():
        names = [a for a, _ in members]
        r_all = pairwise_pearson(np.array([z for _, z in members], dtype=np.float64))
        for i, j in combinations(range(len(members)), 2):  # the order of combinations(members, 2)
            r = float(r_all[i, j])
            if math.isnan(r):
                undefined += 1
                continue
            out.append({"assignment_a": names[i], "assignment_b": names[j], "systems": ",".join(key),
                        "correlation": r})
    schema = {"assignment_a": pl.Utf8, "assignment_b": pl.Utf8, "systems": pl.Utf8, "correlation": pl.Float64}
    return Agreement(pl.DataFrame(out, schema=schema), undefined)


def pairwise_pearson(rows: np.ndarray) -> np.ndarray:
    """(n x n) Pearson r between every two rows of an (n x k) matrix, in one matrix product (a round has thousands
    of pairs; one scipy call each took seconds). NaN where either row is constant or k < 2, as `correlate` gives;
    agrees with scipy.stats.pearsonr to rounding (tests/tasks/human/test_significance.py)."""
    n, k = rows.shape
    if k < 2:
        return np.full((n, n), np.nan)
    centred = rows - rows.mean(axis=1, keepdims=True)
    norms = np.linalg.norm(centred, axis=1)
    constant = np.all(rows == rows[:, :1], axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        unit = centred / norms[:, None]
        r = np.clip(unit @ unit.T, -1.0, 1.0)
    r[constant, :] = np.nan
    r[:, constant] = np.nan
    return r


def score_correlations(table: pl.DataFrame) -> pl.DataFrame:
    """corr_between_scores.csv: over a system table's value columns (all but model and N), Pearson above the
    diagonal, Spearman below, empty diagonal; an unnamed first column names the rows."""
    cols = [c for c in table.columns if c not in KEY_COLUMNS]
    mat = split_correlation_matrix({c: table.get_column(c).to_numpy() for c in cols})
    return significance_frame(mat, cols, corner="")


def self_replication(run1: pl.DataFrame, run2: pl.DataFrame) -> pl.DataFrame:
    """Rows pearson, spearman, kendall (unnamed first column); one column per value column of run 1's table, the
    systems of run 2 put in run 1's order. Raises ValueError when the two runs rated different systems or columns."""
    models1 = run1.get_column("model").to_list()
    models2 = run2.get_column("model").to_list()
    if sorted(models1) != sorted(models2):
        raise ValueError(f"the runs rated different systems: only in run 1 {sorted(set(models1) - set(models2))}, "
                         f"only in run 2 {sorted(set(models2) - set(models1))}")
    cols = [c for c in run1.columns if c not in KEY_COLUMNS]
    absent = [c for c in cols if c not in run2.columns]
    if absent:
        raise ValueError(f"run 2's table lacks column(s) {absent}")
    aligned = pl.DataFrame({"model": models1}).join(run2, on="model", how="left", maintain_order="left")
    rows: dict[str, list] = {"": list(METHODS)}
    for c in cols:
        x, y = run1.get_column(c).to_numpy(), aligned.get_column(c).to_numpy()
        rows[c] = [correlate(x, y, m) for m in METHODS]
    return pl.DataFrame(rows, schema={"": pl.Utf8, **{c: pl.Float64 for c in cols}})
