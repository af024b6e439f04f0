"""The statistics under every score table: `config_stats(per_item)` -> (ci_table, pairs_table).

Input: one row per (config, item) with the item's score (`value`; null or NaN = the item was not scored for that
config: counted in `n_missing`, never silently dropped). Output:

- ci_table: config, n, n_missing, mean, ci_low, ci_high -- the mean over the config's scored items and its percentile
  bootstrap interval (resampling items; configs with the same scored items share every resample).
- pairs_table: one row per unordered pair (configs in input order, a before b): config_a, config_b, n_common,
  n_only_a, n_only_b (items scored in one config only: excluded from the pair), diff = mean(a - b) over the common
  items, its bootstrap interval diff_low/diff_high, p_bootstrap (paired bootstrap, two-sided), p_wilcoxon (Wilcoxon
  signed-rank), p_holm (Holm over all pairs of the call, applied to the test named by `test`), p_holm_other (Holm on
  the other test) and significant = p_holm < alpha.

Means are unweighted (every item counts once); callers with weighted rows aggregate to one value per item first.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import polars as pl

from emocaustics.stats.bootstrap import DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED, bootstrap_means, \
    percentile_interval
from emocaustics.stats.paired import holm, paired_bootstrap_p, wilcoxon_p

CI_SCHEMA = {"config": pl.Utf8, "n": pl.Int64, "n_missing": pl.Int64, "mean": pl.Float64, "ci_low": pl.Float64,
             "ci_high": pl.Float64}
PAIRS_SCHEMA = {"config_a": pl.Utf8, "config_b": pl.Utf8, "n_common": pl.Int64, "n_only_a": pl.Int64,
                "n_only_b": pl.Int64, "diff": pl.Float64, "diff_low": pl.Float64, "diff_high": pl.Float64,
                "p_bootstrap": pl.Float64, "p_wilcoxon": pl.Float64, "p_holm": pl.Float64,
                "p_holm_other": pl.Float64, "significant": pl.Boolean}


class ConfigStats(NamedTuple):
    ci: pl.DataFrame
    pairs: pl.DataFrame


def config_matrix(per_item: pl.DataFrame) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """(configs in first-seen order, items in first-seen order, values (configs x items, NaN = not scored),
    n_missing per config). Raises ValueError on missing columns, null keys or a repeated (config, item)."""
    missing = [c for c in ("config", "item", "value") if c not in per_item.columns]
    if missing:
        raise ValueError(f"config_stats: per_item lacks column(s) {missing}; has {per_item.columns}")
    df = per_item.select(pl.col("config").cast(pl.Utf8), pl.col("item").cast(pl.Utf8),
                         pl.col("value").cast(pl.Float64))
    for key in ("config", "item"):
        nulls = df.filter(pl.col(key).is_null()).height
        if nulls:
            raise ValueError(f"config_stats: {nulls} row(s) with a null {key}")
    dup = df.group_by("config", "item").len().filter(pl.col("len") > 1)
    if dup.height:
        first = dup.row(0, named=True)
        raise ValueError(f"config_stats: {dup.height} (config, item) pair(s) repeated, e.g. config "
                         f"{first['config']!r} item {first['item']!r} x{first['len']}")
    configs = df.get_column("config").unique(maintain_order=True).to_list()
    items = df.get_column("item").unique(maintain_order=True).to_list()
    coded = df.with_columns(pl.col("config").cast(pl.Enum(configs)).to_physical().alias("ci"),
                            pl.col("item").cast(pl.Enum(items)).to_physical().alias("ii"))
    values = np.full((len(configs), len(items)), np.nan)
    ci = coded.get_column("ci").to_numpy()
    ii = coded.get_column("ii").to_numpy()
    v = coded.get_column("value").fill_null(np.nan).to_numpy()
    values[ci, ii] = v
    n_missing = np.bincount(ci[np.isnan(v)], minlength=len(configs))
    return configs, items, values, n_missing


def config_stats(per_item: pl.DataFrame, *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                 level: float = DEFAULT_LEVEL, alpha: float = 0.05, test: str = "bootstrap") -> ConfigStats:
    """Confidence intervals per config and paired tests between every two configs (see the module docstring).
    `test` ("bootstrap" | "wilcoxon") is the test that Holm's correction and `significant` use."""
    if test not in ("bootstrap", "wilcoxon"):
        raise ValueError(f"test must be 'bootstrap' or 'wilcoxon', got {test!r}")
    configs, _, values, n_missing = config_matrix(per_item)
    present = ~np.isnan(values)
    k = len(configs)
    ss = np.random.SeedSequence(seed)

    # -- intervals: configs with the same scored items share resamples (one draw per distinct item set) --
    mean = np.full(k, np.nan)
    low = np.full(k, np.nan)
    high = np.full(k, np.nan)
    boot_of: dict[int, np.ndarray] = {}
    group_of: dict[int, bytes] = {}
    groups = _group_rows(present)
    for g, (mask, rows) in enumerate(groups.items()):
        cols = np.frombuffer(mask, dtype=bool)
        if not cols.any():
            continue
        sub = values[np.ix_(rows, cols)]
        boot = bootstrap_means(sub, n_resamples=n_resamples, seed=np.random.default_rng(ss.spawn(1)[0]))
        lo, hi = percentile_interval(boot, level)
        for r, row in enumerate(rows):
            mean[row], low[row], high[row] = sub[r].mean(), lo[r], hi[r]
            boot_of[row], group_of[row] = boot[r], mask

    # -- pairs: same item set -> difference of the shared resampled means; otherwise resample the common items --
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    m = len(pairs)
    n_common = np.zeros(m, dtype=np.int64)
    only_a = np.zeros(m, dtype=np.int64)
    only_b = np.zeros(m, dtype=np.int64)
    diff = np.full(m, np.nan)
    d_low = np.full(m, np.nan)
    d_high = np.full(m, np.nan)
    p_boot = np.full(m, np.nan)
    p_wil = np.full(m, np.nan)
    pending: dict[bytes, list[int]] = {}
    for p, (i, j) in enumerate(pairs):
        common = present[i] & present[j]
        n_common[p] = int(common.sum())
        only_a[p] = int((present[i] & ~present[j]).sum())
        only_b[p] = int((present[j] & ~present[i]).sum())
        if n_common[p] == 0:
            continue
        d = values[i, common] - values[j, common]
        diff[p] = d.mean()
        p_wil[p] = wilcoxon_p(d)
        if i in boot_of and group_of.get(i) == group_of.get(j):
            db = boot_of[i] - boot_of[j]
            p_boot[p] = paired_bootstrap_p(db[None, :], diff[p:p + 1])[0]
            d_low[p], d_high[p] = percentile_interval(db, level)
        else:
            pending.setdefault(common.tobytes(), []).append(p)
    for mask, idx in pending.items():
        cols = np.frombuffer(mask, dtype=bool)
        d = np.stack([values[pairs[p][0], cols] - values[pairs[p][1], cols] for p in idx])
        db = bootstrap_means(d, n_resamples=n_resamples, seed=np.random.default_rng(ss.spawn(1)[0]))
        p_boot[idx] = paired_bootstrap_p(db, diff[idx])
        d_low[idx], d_high[idx] = percentile_interval(db, level)

    primary, other = (p_boot, p_wil) if test == "bootstrap" else (p_wil, p_boot)
    p_holm, p_holm_other = holm(primary), holm(other)
    ci = pl.DataFrame({"config": configs, "n": present.sum(axis=1).astype(np.int64), "n_missing": n_missing,
                       "mean": mean, "ci_low": low, "ci_high": high}, schema=CI_SCHEMA)
    table = pl.DataFrame({
        "config_a": [configs[i] for i, _ in pairs], "config_b": [configs[j] for _, j in pairs],
        "n_common": n_common, "n_only_a": only_a, "n_only_b": only_b, "diff": diff, "diff_low": d_low,
        "diff_high": d_high, "p_bootstrap": p_boot, "p_wilcoxon": p_wil, "p_holm": p_holm,
        "p_holm_other": p_holm_other, "significant": np.nan_to_num(p_holm, nan=1.0) < alpha}, schema=PAIRS_SCHEMA)
    return ConfigStats(ci, table)


def _group_rows(present: np.ndarray) -> dict[bytes, list[int]]:
    """Rows (configs) grouped by their scored-item mask, in first-seen order."""
    groups: dict[bytes, list[int]] = {}
    for row in range(present.shape[0]):
        groups.setdefault(np.ascontiguousarray(present[row]).tobytes(), []).append(row)
    return groups
