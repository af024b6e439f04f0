"""The judge as a worker, by the human-assessment method's own functions (`tasks/human/method.py`), and its agreement
with the workers.

The judge takes each worker's place: its ratings of a worker's conversations become one more assignment, of the
worker `judge@<worker>`, beside the worker's own, so that they are z-scored exactly as that worker's are (over the
same conversations); quality control pools all of the judge's z (one worker, `judge`) in the method's test. The
system z-scores of QC-passed workers are compared with the judge's over the same assignments (Pearson and Spearman
over the systems, overall and per criterion, with percentile bootstrap intervals that resample assignments, each
with its judge twin); at the item level, Pearson r of the conversations' mean ratings and Krippendorff's alpha
(interval) over every (conversation, criterion) cell the two rated. The oracle (the workers' own ratings) gives r = 1
and alpha = 1 and passes QC as the workers do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import polars as pl

from emocaustics.core.task import Sample
from emocaustics.stats.bootstrap import cluster_index, percentile_interval, resample_counts
from emocaustics.stats.correlation import correlate
from emocaustics.tasks.human.data import Assignment, Hits, Metadata, Rating
from emocaustics.tasks.human.method import (conversation_table, quality_control, standardise, system_scores,
                                            worker_moments, z_col)

JUDGE = "judge"
# System z-scores spread less than this are one value: a judge that rates every conversation alike still differs in
# the last bits between its twins (their means are sums in another order), and r over rounding noise is no r.
FLAT = 1e-9
Ratings = Mapping[str, Mapping[str, float]]  # sample id -> the judge's ratings (criterion -> 0-100)


def twin(worker: str) -> str:
    return f"{JUDGE}@{worker}"


@dataclass
class Judged:
    workers: pl.DataFrame  # every worker's QC row, then the judge's (`human.method.quality_control`)
    human: pl.DataFrame  # system z of QC-passed workers (model, N, z, criteria)
    judge: pl.DataFrame  # the judge's system z over the same assignments, in the same order
    agreement: pl.DataFrame  # column (z, criteria), pearson, spearman and their 95 % intervals
    item_r: float  # Pearson r of the conversations' mean raw rating, judge against worker
    item_alpha: float  # Krippendorff's alpha (interval), every (conversation, criterion) cell
    contribution: dict[str, float]  # sample id -> its share of the overall system-level Pearson r (they sum to r)
    per_sample: pl.DataFrame  # sample_id, system, human_z / judge_z (the comparison's conversation z), judge:<c> raw


def as_hits(meta: Metadata, samples: list[Sample], ratings: Ratings) -> tuple[Hits, list[str]]:
    """The workers' assignments, each followed by its judge twin (the conversations the judge rated), and the sample
    id of each conversation row `conversation_table` makes of them."""
    groups: dict[str, list[Sample]] = {}
    for s in samples:
        groups.setdefault(s.meta["assignment"], []).append(s)
    out: list[Assignment] = []
    ids: list[str] = []
    for k, (aid, group) in enumerate(groups.items()):
        hit, worker = group[0].meta["hit"], group[0].meta["worker"]
        out.append(Assignment(k, hit, aid, worker, 0.0, tuple(Rating(s.meta["model"], s.target) for s in group)))
        rated = [s for s in group if s.id in ratings]
        if rated:
            out.append(Assignment(k, hit, f"{JUDGE}:{aid}", twin(worker), 0.0,
                                  tuple(Rating(s.meta["model"], dict(ratings[s.id])) for s in rated)))
        ids += [s.id for s in group] + [s.id for s in rated]
    return Hits("<dialogue-judge>", meta, out), ids


def judge(meta: Metadata, samples: list[Sample], ratings: Ratings, *,
          threshold: float, resamples: int, seed: int) -> Judged:
    hits, ids = as_hits(meta, samples, ratings)
    conv = conversation_table(hits).with_columns(pl.Series("sample_id", ids))
    conv = standardise(conv, worker_moments(conv, meta.score_names), meta.score_names)
    is_judge = pl.col("worker").str.starts_with(f"{JUDGE}@")
    workers = quality_control(conv.filter(~is_judge), meta, threshold)
    pooled = conv.filter(is_judge).with_columns(pl.lit(JUDGE).alias("worker"), pl.col("sd").max())
    mine_qc = quality_control(pooled, meta, threshold)
    passed = set(workers.filter(pl.col("passed")).get_column("worker").to_list())
    human, _ = system_scores(conv, meta, passed)
    order = tuple(human.get_column("model").to_list())
    mine, _ = system_scores(conv, meta, {twin(w) for w in passed}, order)
    columns = ("z", *meta.sorted_scores)
    raw, mine_raw = [f"raw:{s}" for s in meta.score_names], [f"judge:{s}" for s in meta.score_names]
    # each conversation's z on either side of the comparison (null outside it: a failing worker's, the qc system's),
    # of which the system z, and so r, are means again: in the bootstrap's resamples, and for judges compared on
    # the same resamples (`across.py`, from the per-sample columns)
    zs = ("z", *[z_col(c) for c in meta.sorted_scores])
    compared = pl.col("model").is_in(list(meta.models))
    side = lambda who, tag: [pl.when(compared & pl.col("worker").is_in(sorted(who)))  # noqa: E731
                             .then(pl.col(z)).alias(f"{tag}_{z}") for z in zs]
    wide = (conv.filter(~is_judge).select("sample_id", pl.col("model").alias("system"),
                                          pl.col("assignment").alias("cluster"), *side(passed, "human"), *raw)
            .join(conv.filter(is_judge).select("sample_id", *side({twin(w) for w in passed}, "judge"),
                                               *[pl.col(r).alias(m) for r, m in zip(raw, mine_raw)]),
                  on="sample_id", how="left"))
    boot = resampled_system_r(wide.filter(pl.col("human_z").is_not_null()), [(f"human_{z}", f"judge_{z}") for z in zs],
                              resamples, seed, ranks=(False, True))
    low, high = percentile_interval(boot) if boot.shape[-1] else (np.full(boot.shape[:2], np.nan),) * 2
    rows = []
    for j, c in enumerate(columns):
        x, y = human.get_column(c).to_numpy(), mine.get_column(c).to_numpy()
        ok = np.isfinite(x) & np.isfinite(y) & _spread(y)
        rows.append({"column": c, **{m: correlate(x[ok], y[ok], m) for m in ("pearson", "spearman")},
                     **{f"{m}_{e}": float(v[j, k]) for k, m in enumerate(("pearson", "spearman"))
                        for e, v in (("low", low), ("high", high))}})
    rated = [wide.filter(pl.col(mine_raw[0]).is_not_null()).select(cols).to_numpy() for cols in (raw, mine_raw)]
    per_sample = wide.select("sample_id", "system", "human_z", "judge_z", pl.col("^judge:.*$"))
    return Judged(pl.concat([workers, mine_qc]), human, mine, pl.DataFrame(rows),
                  correlate(*[v.mean(1) for v in rated]), interval_alpha(np.vstack([v.ravel() for v in rated])),
                  _contributions(wide, human, mine), per_sample)


def replication(meta: Metadata, samples: list[Sample], epochs: list[Ratings]) -> float:
    """The judge's self-replication, as the humans' round-to-round r: Pearson r between two epochs' overall system
    z-scores (each epoch the judge of its own), the mean over every two epochs; NaN for one epoch or a flat one."""
    z = [judge(meta, samples, r, threshold=0.05, resamples=0, seed=0).judge.get_column("z").to_numpy()
         for r in epochs]
    found = [correlate(a[ok], b[ok]) if _spread(a) and _spread(b) else float("nan")
             for i, a in enumerate(z) for b in z[i + 1:] for ok in [np.isfinite(a) & np.isfinite(b)]]
    return float(np.mean(found)) if found else float("nan")


def _spread(v: np.ndarray) -> bool:
    """Whether the finite values of `v` are more than one value (beyond rounding: `FLAT`)."""
    v = v[np.isfinite(v)]
    return bool(v.size) and float(v.max() - v.min()) > FLAT


def interval_alpha(values: np.ndarray) -> float:
    """Krippendorff's alpha, interval metric, of coders (rows) rating units (columns), NaN where a coder did not rate
    a unit: 1 - D_o / D_e over the pairable values (units with two or more), D_o the within-unit squared differences
    of every ordered pair weighted 1 / (m_u - 1), D_e those of every two pooled values (Krippendorff 2011, "Computing
    Krippendorff's alpha"; two coders who rated every unit: D_e = 2 var(pooled, ddof=1))."""
    v = np.asarray(values, dtype=float)
    v = v[:, (~np.isnan(v)).sum(0) >= 2]
    m = (~np.isnan(v)).sum(0)
    pooled = v[~np.isnan(v)]
    n = pooled.size
    if n < 3 or np.all(pooled == pooled[0]):
        return float("nan")
    # the squared differences of a unit's ordered pairs sum to 2 m_u SS_u; of all pooled values', to 2 n SS
    within = 2 * m * np.nansum((v - np.nanmean(v, 0)) ** 2, 0) / (m - 1)
    return float(1 - within.sum() / n / (2 * n * np.var(pooled) / (n - 1)))


def _contributions(wide: pl.DataFrame, human: pl.DataFrame, mine: pl.DataFrame) -> dict[str, float]:
    """Each judged conversation's share c_i of the overall system-level Pearson r: with a and b the workers' and the
    judge's system z centred, r = sum_s a_s b_s / (|a| |b|) and b_s = the mean of its N_s conversations' z (the
    centring term sums to 0), so c_i = a_s z_i / (|a| |b| N_s); 0 outside the comparison (qc, failing workers'
    twins: no `judge_z`), NaN for every conversation when r is undefined."""
    a, b = human.get_column("z").to_numpy(), mine.get_column("z").to_numpy()
    ok = np.isfinite(a) & np.isfinite(b)
    a_c, b_c = (np.where(ok, v - (v[ok].mean() if ok.sum() > 1 else np.nan), 0.0) for v in (a, b))
    n = dict(wide.group_by("system").agg(pl.col("judge_z").count()).iter_rows())
    with np.errstate(invalid="ignore", divide="ignore"):
        weight = np.where(ok, a_c / np.linalg.norm(a_c) / np.linalg.norm(b_c), 0.0)
    by_model = {m: w / n[m] for m, w in zip(human.get_column("model").to_list(), weight) if n.get(m)}
    undefined = not np.isfinite(weight).all() or not weight.any() or not _spread(b[ok])
    return {sid: float("nan") if undefined else by_model.get(model, 0.0) * (z or 0.0)
            for sid, model, z in wide.select("sample_id", "system", "judge_z").iter_rows()}


def system_r(counts: np.ndarray, wide: pl.DataFrame, pairs: list[tuple[str, str]],
             ranks: tuple[bool, ...] = (False,)) -> np.ndarray:
    """(pairs, ranks, resamples): for each pair of per-conversation columns of `wide` (the workers' z, a judge's z),
    Pearson (with a rank: Spearman) r of the system means in each resample of `counts` (a resample's draws of the
    rows): each system's mean of the non-null values of its rows, each row weighted by its count. NaN where a resample
    drew none of a system's rows, or where the judge's means are one value (`FLAT`)."""
    from scipy.stats import rankdata

    system = wide.get_column("system").to_numpy()
    onehot = system[:, None] == np.unique(system)[None, :]

    def means(column: str) -> np.ndarray:  # (resamples, systems)
        values = wide.get_column(column).cast(pl.Float64).fill_null(np.nan).to_numpy()
        seen = ~np.isnan(values)
        return (counts * np.where(seen, values, 0.0)) @ onehot / ((counts * seen) @ onehot)

    def rowwise_r(x: np.ndarray, y: np.ndarray) -> np.ndarray:  # Pearson r of each row pair
        x, y = x - x.mean(1, keepdims=True), y - y.mean(1, keepdims=True)
        return (x * y).sum(1) / np.sqrt((x * x).sum(1) * (y * y).sum(1))

    with np.errstate(invalid="ignore", divide="ignore"):
        return np.array([[np.where(np.ptp(g, axis=1) <= FLAT, np.nan,
                                   rowwise_r(rankdata(h, axis=1), rankdata(g, axis=1)) if rank else rowwise_r(h, g))
                          for rank in ranks] for h, g in [(means(h), means(g)) for h, g in pairs]])


def resampled_system_r(wide: pl.DataFrame, pairs: list[tuple[str, str]], resamples: int, seed: int,
                       ranks: tuple[bool, ...] = (False,)) -> np.ndarray:
    """`system_r` in each percentile-bootstrap resample (`emocaustics.stats.bootstrap`) of the comparison's
    conversations (`wide`): the round's assignments (`cluster`) drawn with replacement, each bringing its judge twin;
    the z-scores and QC verdicts stay the round's. No resamples (last axis 0) without `resamples` or conversations."""
    if resamples < 1 or wide.is_empty():
        return np.full((len(pairs), len(ranks), 0), np.nan)
    return np.concatenate([system_r(counts, wide, pairs, ranks) for counts in resample_counts(
        wide.height, resamples, np.random.default_rng(seed), cluster_index(wide.get_column("cluster").to_list()))],
        axis=-1)
