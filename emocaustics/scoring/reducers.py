"""Reducers: a sample solved in N epochs (`epochs: N`) gets one score, reduced from its N per-epoch scores, and the
spread between epochs is reported per config.

- `mean`: the mean of the epochs' scores (a failed epoch counts 0, as a failed sample does);
- `mode`: the most frequent score (ties: the one reached first, in epoch order); a task may instead reduce its
  epochs' *predictions* by a vote and score the result (its `Options.reducers`' vote, e.g. AER's majority per option);
- `max`: the best epoch;
- `pass@k`: the unbiased estimator of the chance that at least one of k epochs drawn from the n is correct,
  1 - C(n-c, k) / C(n, k), where c epochs scored full credit (score >= 1) (Chen et al. 2021); k <= n.

A task declares which reducers fit its predictions, and its default, on its `Options` class (`reducers_of`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import polars as pl

REDUCERS = ("mean", "mode", "max", "pass@k")
_PASS = re.compile(r"^pass@([1-9][0-9]*)$")


def parse_reducer(name: str) -> tuple[str, int]:
    """("mean"|"mode"|"max"|"pass@k", k) of a reducer's name (`pass@3` -> ("pass@k", 3)); a ValueError names the
    reducers there are."""
    if name in ("mean", "mode", "max"):
        return name, 0
    m = _PASS.match(name)
    if m:
        return "pass@k", int(m.group(1))
    raise ValueError(f"unknown reducer {name!r}; choose one of mean, mode, max, pass@K (K a whole number >= 1)")


def reducers_of(options_class: type) -> tuple[tuple[str, ...], str]:
    """(the reducers a task's predictions allow, its default): the keys of its `Options.reducers` (reducer -> the
    vote over the epochs' predictions, or None: the epochs' scores are reduced), the first the default; else every
    reducer, `mean` first."""
    allowed = tuple(getattr(options_class, "reducers", None) or REDUCERS)
    return allowed, allowed[0]


def check_reducer(name: str, options_class: type, epochs: int) -> None:
    """A ValueError naming what is wrong: an unknown reducer, one the task does not allow, or pass@k with k over
    the epochs."""
    kind, k = parse_reducer(name)
    allowed, _ = reducers_of(options_class)
    if kind not in allowed:
        raise ValueError(f"reducer {name!r} does not fit this task's predictions; it allows {', '.join(allowed)}")
    if kind == "pass@k" and k > epochs:
        raise ValueError(f"reducer {name}: k = {k} is more than the {epochs} epoch(s); give epochs >= {k}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """1 - C(n-c, k) / C(n, k): the chance that k of the n epochs, drawn without replacement, hold a correct one."""
    if not 1 <= k <= n or not 0 <= c <= n:
        raise ValueError(f"pass@k needs 1 <= k <= n and 0 <= c <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def reduce_scores(values: Sequence[float | None], reducer: str) -> float | None:
    """One score from a sample's per-epoch scores (epoch order); None values (unscored epochs) are left out, and
    a sample with no scored epoch stays None."""
    kind, k = parse_reducer(reducer)
    got = [float(v) for v in values if v is not None]
    if not got:
        return None
    if kind == "mean":
        return sum(got) / len(got)
    if kind == "max":
        return max(got)
    if kind == "mode":  # most_common orders equal counts as first met: the tie goes to the earliest epoch
        return Counter(got).most_common(1)[0][0]
    return pass_at_k(len(got), sum(1 for v in got if v >= 1.0), k)


def majority(answers: list[list[str]], n: int) -> tuple[list[str], dict[str, int], bool]:
    """A vote over set-valued answers (AER's self-consistency, and its `mode` over epochs): (chosen elements, votes
    per element, fallback?): an element is chosen when more than n/2 answers chose it; with no such element, the
    most frequent answer set (ties: the earliest)."""
    votes = Counter(x for a in answers for x in set(a))
    chosen = sorted(x for x, k in votes.items() if 2 * k > n)
    if chosen:
        return chosen, dict(sorted(votes.items())), False
    first = Counter(tuple(a) for a in answers).most_common(1)[0][0]  # ties: the answer met first
    return list(first), dict(sorted(votes.items())), True


def epoch_spread(per_epoch: pl.DataFrame) -> pl.DataFrame:
    """Per config (`run`), from its per-epoch rows (run, sample_id, epoch, score): `epochs`, `epoch_sd` (the mean
    over samples of the standard deviation of a sample's score over its epochs, population form) and
    `epoch_changed` (the share of samples whose score is not the same in every epoch)."""
    if per_epoch.is_empty():
        return pl.DataFrame(schema={"run": pl.Utf8, "epochs": pl.Int64, "epoch_sd": pl.Float64,
                                    "epoch_changed": pl.Float64})
    per_sample = (per_epoch.group_by("run", "sample_id", maintain_order=True)
                  .agg(pl.col("epoch").n_unique().alias("n"), pl.col("score").fill_null(0.0).std(ddof=0).alias("sd"),
                       (pl.col("score").fill_null(0.0).n_unique() > 1).alias("changed")))
    return (per_sample.group_by("run", maintain_order=True)
            .agg(pl.col("n").max().cast(pl.Int64).alias("epochs"), pl.col("sd").mean().alias("epoch_sd"),
                 pl.col("changed").cast(pl.Float64).mean().alias("epoch_changed")))


def reduce_votes(predictions: list[Any], key: str = "answer") -> dict[str, Any] | None:
    """The epochs' set-valued answers (`{key: [...]}` each; anything else, a failed epoch, has no vote) voted by
    `majority`: the first readable epoch's prediction with the voted answer and the vote's record, or None when no
    epoch has an answer."""
    read = [p for p in predictions if isinstance(p, dict) and isinstance(p.get(key), list)]
    if not read:
        return None
    chosen, votes, fallback = majority([list(p[key]) for p in read], len(read))
    return {**read[0], key: chosen, "epoch_answers": [p.get(key) if isinstance(p, dict) else None
                                                      for p in predictions],
            "votes": votes, "vote_fallback": fallback, "unreadable": len(predictions) - len(read)}


def table_rows(scores: pl.DataFrame) -> pl.DataFrame:
    """The rows of scores.parquet the tables use: the reduced row of each sample (`epoch` null), without the
    per-epoch rows (`epoch` 1..N) of configs solved in epochs."""
    if "epoch" not in scores.columns:
        return scores
    return scores.filter(pl.col("epoch").is_null()).drop("epoch")


def epoch_rows(scores: pl.DataFrame) -> pl.DataFrame:
    """The per-epoch rows of scores.parquet (none when no config was solved in epochs)."""
    if "epoch" not in scores.columns:
        return scores.clear()
    return scores.filter(pl.col("epoch").is_not_null())
