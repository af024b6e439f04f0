"""Judges compared with each other (issue 56, item 4), from the job's per-sample rows of its `dialogue-judge`
configs (`sample_info`'s `system`, `human_z`, `judge_z`, `judge:<criterion>`, `qc_pass` and the row's `cluster`, its
assignment): the configs that rated the same conversations (one round) form a family; each pair's difference of
system-level Pearson r with its paired bootstrap interval and p (the assignments resampled once for all the family's
judges, every judge's r recomputed on the same resample, the workers' side shared), Holm-corrected across the
family's pairs (`emocaustics.stats.holm`), and Krippendorff's alpha (interval) across the judges' ratings of every
(conversation, criterion) cell. A judge that failed quality control is marked unreliable in every row it is in."""

from __future__ import annotations

import numpy as np
import polars as pl

from emocaustics.stats import holm, paired_bootstrap_p
from emocaustics.stats.bootstrap import percentile_interval
from emocaustics.tasks.dialoguejudge.agreement import interval_alpha, resampled_system_r, system_r

NEEDED = ("run", "sample_id", "cluster", "system", "human_z", "judge_z", "qc_pass")


def families(scores: pl.DataFrame) -> list[pl.DataFrame]:
    """The configs' rows grouped by the conversations they rated (one round: the same sample ids)."""
    if not set(NEEDED) <= set(scores.columns):
        return []
    by_ids: dict[tuple[str, ...], list[pl.DataFrame]] = {}
    for _, part in scores.filter(pl.col("system").is_not_null()).group_by("run", maintain_order=True):
        by_ids.setdefault(tuple(sorted(part["sample_id"].to_list())), []).append(part)
    return [pl.concat(parts, how="diagonal_relaxed") for parts in by_ids.values()]


def judge_pairs(rows: pl.DataFrame, resamples: int = 1000, seed: int = 0) -> pl.DataFrame:
    """One row per pair of the family's judges (config_a, config_b, r_a, r_b, diff = r_a - r_b, diff_low, diff_high,
    p, p_holm, significant, reliable_a, reliable_b) of one family's rows, each with `alpha` across the judges."""
    runs = rows["run"].unique(maintain_order=True).to_list()
    crit = [c for c in rows.columns if c.startswith("judge:")]
    wide = rows.filter(pl.col("run") == runs[0]).select("sample_id", "cluster", "system", "human_z")
    for k, run in enumerate(runs):
        wide = wide.join(rows.filter(pl.col("run") == run).select(
            "sample_id", pl.col("judge_z").alias(f"z{k}"), *[pl.col(c).alias(f"{k}{c}") for c in crit]),
            on="sample_id", how="left")
    column = lambda name: wide[name].cast(pl.Float64).fill_null(np.nan).to_numpy()  # noqa: E731
    alpha = interval_alpha(np.vstack([np.hstack([column(f"{k}{c}") for c in crit]) for k in range(len(runs))]))
    wide = wide.filter(pl.col("human_z").is_not_null())  # the comparison's conversations (the qc system's are not)
    sides = [("human_z", f"z{k}") for k in range(len(runs))]  # each judge's system-level r, the workers' side shared
    a, b = np.triu_indices(len(runs), 1)  # every two judges, in order: (0, 1), (0, 2), ..., (1, 2), ...
    observed = system_r(np.ones((1, wide.height)), wide, sides)[:, 0, 0]
    got = resampled_system_r(wide, sides, resamples if len(a) else 0, seed)[:, 0]  # (judges, resamples)
    diff, boot = observed[a] - observed[b], got[a] - got[b]
    low, high = percentile_interval(boot) if boot.shape[1] else (np.full(len(a), np.nan),) * 2
    p = paired_bootstrap_p(boot, diff) if boot.shape[1] else np.full(len(a), np.nan)
    adjusted = holm(p)
    reliable = dict(rows.group_by("run").agg(pl.first("qc_pass")).iter_rows())
    table = pl.DataFrame([{"config_a": runs[i], "config_b": runs[j], "r_a": observed[i], "r_b": observed[j],
                           "diff": diff[k], "diff_low": low[k], "diff_high": high[k], "p": p[k],
                           "p_holm": adjusted[k], "significant": bool(adjusted[k] < 0.05),
                           "reliable_a": bool(reliable[runs[i]]), "reliable_b": bool(reliable[runs[j]]), "alpha": alpha}
                          for k, (i, j) in enumerate(zip(a, b))],
                         schema_overrides={c: pl.Float64 for c in ("r_a", "r_b", "diff", "diff_low", "diff_high",
                                                                   "p", "p_holm", "alpha")})
    return table


def pairs_table(scores: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """The task's `job_tables`, written once by the tables phase as tables/judge_pairs.parquet: `judge_pairs` of
    each family of two or more judges, with its `family` (1, 2, ...: the report's round) and `alpha` across them."""
    parts = [judge_pairs(rows).select(pl.lit(k + 1, pl.Int64).alias("family"), pl.all())
             for k, rows in enumerate(families(scores)) if rows["run"].n_unique() > 1]
    return {"judge_pairs": pl.concat(parts)} if parts else {}
