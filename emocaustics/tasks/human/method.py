"""Steps 1-6 of the human-assessment method (Ji et al., ACL 2022), each a function:

1. `reverse_value` / `conversation_table`: negative score types reversed (max - value).
2. `worker_moments` / `standardise`: per worker one mean and one sample sd (ddof=1) over all of that worker's ratings
   (every assignment, every system including qc, every score type); z = (x - mean) / (sd + 1e-6); per conversation
   the mean z and mean raw over its score types (the mean z as (mean raw - mean) / (sd + 1e-6): see `standardise`).
3. `quality_control`: per worker, one-sided Mann-Whitney (alternative "less") of the worker's z for the qc system on
   the qc score types against the same for the competing systems; pass iff p < 0.05 (NaN fails). A worker whose
   ratings are all equal (sd = 0) is given p = 1 and fails, as in the original tool.
4. `pass_rates`: per HIT (a HIT done by both a passing and a failing worker counts in both) and per worker.
5. `system_scores`: from a set of workers: mean z per score type, overall z (mean over all conversation x score
   cells), N (those cells), the same for raw; ranked by overall z unless a ranking is given.
6. `durations`: minutes per conversation (passed / failed / all workers).

`process(hits)` runs them in order and returns a `Processed`. The conversation table (one row per rated conversation)
holds the keys record, hit, assignment, worker, model; `raw:<score>` (reversed) and `z:<score>` per score type; the
worker's `mean`, `sd`; the conversation's `z` and `raw`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from emocaustics.core.task import Defect
from emocaustics.stats.mannwhitney import mannwhitney_p
from emocaustics.tasks.human.data import Hits, Metadata, ScoreSpec

EPSILON = 1e-6  # added to the sd so a constant worker divides by a tiny number, not zero
QC_THRESHOLD = 0.05
GROUPS = ("passed", "failed", "all")


def raw_col(name: str) -> str:
    return f"raw:{name}"


def z_col(name: str) -> str:
    return f"z:{name}"


# -- step 1 -----------------------------------------------------------------------------------------------------------
def reverse_value(value: float, spec: ScoreSpec) -> float:
    """A rating as used by the method: unchanged for positive score types, max - value for negative ones."""
    return value if spec.positive else spec.max - value


def conversation_table(hits: Hits) -> pl.DataFrame:
    """One row per rated conversation, in file order, with reversed raw ratings (`raw:<score>`)."""
    meta = hits.metadata
    keys: dict[str, list] = {"record": [], "hit": [], "assignment": [], "worker": [], "model": []}
    raw: dict[str, list[float]] = {raw_col(s.name): [] for s in meta.scores}
    for a in hits.assignments:
        for r in a.result:
            for k, v in (("record", a.record), ("hit", a.hit), ("assignment", a.assignment), ("worker", a.worker),
                         ("model", r.model)):
                keys[k].append(v)
            for s in meta.scores:
                raw[raw_col(s.name)].append(float(reverse_value(r.scores[s.name], s)))
    schema = {"record": pl.Int64, "hit": pl.Utf8, "assignment": pl.Utf8, "worker": pl.Utf8, "model": pl.Utf8,
              **{c: pl.Float64 for c in raw}}
    return pl.DataFrame({**keys, **raw}, schema=schema)


# -- step 2 -----------------------------------------------------------------------------------------------------------
def worker_moments(conv: pl.DataFrame, score_names: tuple[str, ...]) -> pl.DataFrame:
    """worker (sorted), n (ratings), mean, sd (ddof=1; NaN with a single rating) over all of the worker's ratings."""
    cols = [raw_col(s) for s in score_names]
    long = conv.select("worker", pl.concat_list(cols).alias("v")).explode("v")
    return (long.group_by("worker").agg(pl.len().alias("n"), pl.col("v").mean().alias("mean"),
                                        pl.col("v").std(ddof=1).alias("sd"))
            .with_columns(pl.col("n").cast(pl.Int64), pl.col("sd").fill_null(float("nan")))
            .sort("worker"))


def standardise(conv: pl.DataFrame, moments: pl.DataFrame, score_names: tuple[str, ...]) -> pl.DataFrame:
    """Adds the worker's mean and sd, `z:<score>` = (raw - mean) / (sd + 1e-6), and per conversation `z` (mean z) and
    `raw` (mean raw) over its score types."""
    out = conv.join(moments.select("worker", "mean", "sd"), on="worker", how="left", maintain_order="left")
    out = out.with_columns([((pl.col(raw_col(s)) - pl.col("mean")) / (pl.col("sd") + EPSILON)).alias(z_col(s))
                            for s in score_names])
    # The conversation's mean z is computed as (mean raw - mean) / (sd + 1e-6), which equals the mean of its z values
    # exactly in real arithmetic. Summing the z values instead lets rounding decide ties: two conversations of one
    # worker with the same raw total but permuted ratings can differ in the last bit, which changes Mann-Whitney
    # ranks (in round 1 one p-value by ~4e-4). Raw totals are exact, so ties here are the data's, not the float's.
    raw = out.select([raw_col(s) for s in score_names]).to_numpy()
    mean_raw = raw.sum(axis=1) / raw.shape[1]
    z = (mean_raw - out.get_column("mean").to_numpy()) / (out.get_column("sd").to_numpy() + EPSILON)
    return out.with_columns(pl.Series("z", z), pl.Series("raw", mean_raw))


# -- step 3 -----------------------------------------------------------------------------------------------------------
def qc_test(qc_z: list[float], system_z: list[float], sd: float) -> tuple[float, str]:
    """(p, reason) of one worker's quality-control test."""
    if sd == 0:
        return 1.0, "constant ratings (sd = 0)"
    if not qc_z:
        return float("nan"), "no qc rating: cannot be tested"
    if not system_z:
        return float("nan"), "no competing-system rating: cannot be tested"
    p = mannwhitney_p(qc_z, system_z, "less")
    return p, "" if not math.isnan(p) else "test undefined (NaN)"


def quality_control(conv: pl.DataFrame, meta: Metadata, threshold: float = QC_THRESHOLD) -> pl.DataFrame:
    """worker (sorted), p_value, n_qc, n_systems (z values compared), passed (p < threshold; NaN fails), reason."""
    qc_cols = [z_col(s) for s in meta.qc_scores]
    models = set(meta.models)
    rows = []
    for (worker,), part in conv.group_by("worker", maintain_order=True):
        z = part.select(qc_cols).to_numpy()
        names = part.get_column("model").to_list()
        qc_z = [float(v) for row, m in zip(z, names) if m == meta.qc_model for v in row]
        sys_z = [float(v) for row, m in zip(z, names) if m in models for v in row]
        p, reason = qc_test(qc_z, sys_z, float(part.get_column("sd")[0]))
        rows.append({"worker": worker, "p_value": p, "n_qc": len(qc_z), "n_systems": len(sys_z),
                     "passed": bool(p < threshold), "reason": reason})
    schema = {"worker": pl.Utf8, "p_value": pl.Float64, "n_qc": pl.Int64, "n_systems": pl.Int64,
              "passed": pl.Boolean, "reason": pl.Utf8}
    return pl.DataFrame(rows, schema=schema).sort("worker")


# -- step 4 -----------------------------------------------------------------------------------------------------------
def pass_rates(conv: pl.DataFrame, passed_workers: set[str]) -> pl.DataFrame:
    """Rows HIT and Worker: passed, total, passrate. HITs: |HITs with a passing worker| over that plus |HITs with a
    failing worker| (a HIT done by both counts in both, as in the paper)."""
    ok = pl.col("worker").is_in(sorted(passed_workers))
    hits_pass = conv.filter(ok).get_column("hit").n_unique()
    hits_fail = conv.filter(~ok).get_column("hit").n_unique()
    workers = conv.get_column("worker").unique().to_list()
    w_pass = sum(1 for w in workers if w in passed_workers)
    rows = [("HIT", hits_pass, hits_pass + hits_fail), ("Worker", w_pass, len(workers))]
    return pl.DataFrame({"": [r[0] for r in rows], "passed": [r[1] for r in rows], "total": [r[2] for r in rows],
                         "passrate": [r[1] / r[2] if r[2] else float("nan") for r in rows]},
                        schema={"": pl.Utf8, "passed": pl.Int64, "total": pl.Int64, "passrate": pl.Float64})


# -- step 5 -----------------------------------------------------------------------------------------------------------
def system_scores(conv: pl.DataFrame, meta: Metadata, workers: set[str] | None = None,
                  ranking: tuple[str, ...] | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(z table: model, N, z, <sorted score types>; raw table: model, N, raw, <sorted score types>) over the
    conversations of `workers` (None: everyone). Order: `ranking`, else metadata.ranking, else by overall z
    (descending, ties in metadata order, systems without ratings last); the raw table follows the z table."""
    part = conv if workers is None else conv.filter(pl.col("worker").is_in(sorted(workers)))
    cols = meta.sorted_scores
    rows: dict[str, dict[str, dict]] = {"z": {}, "raw": {}}  # table -> model -> row; the two tables one rule
    for model in meta.models:
        sub = part.filter(pl.col("model") == model)
        for overall, col in (("z", z_col), ("raw", raw_col)):
            v = sub.select([col(s) for s in cols]).to_numpy()
            rows[overall][model] = {"model": model, "N": int(v.size), overall: _mean(v),
                                    **{s: _mean(v[:, i]) for i, s in enumerate(cols)}}
    z_rows = list(rows["z"].values())
    order = ranking if ranking is not None else meta.ranking
    if order is None:
        ranked = sorted(range(len(z_rows)), key=lambda i: (math.isnan(z_rows[i]["z"]), -z_rows[i]["z"]
                                                           if not math.isnan(z_rows[i]["z"]) else 0.0))
        order = tuple(z_rows[i]["model"] for i in ranked)
    else:
        missing = [m for m in meta.models if m not in order]
        unknown = [m for m in order if m not in meta.models]
        if missing or unknown or len(set(order)) != len(order):
            raise ValueError(f"ranking must list each system once: missing {missing}, unknown {unknown}")
    z_table, raw_table = (pl.DataFrame([rows[t][m] for m in order], schema={
        "model": pl.Utf8, "N": pl.Int64, **{c: pl.Float64 for c in (t, *cols)}}) for t in ("z", "raw"))
    return z_table, raw_table


def _mean(a: np.ndarray) -> float:
    return float(a.mean()) if a.size else float("nan")


# -- step 6 -----------------------------------------------------------------------------------------------------------
def durations(hits: Hits, passed_workers: set[str]) -> pl.DataFrame:
    """One row: passed, failed, all -- mean assignment duration / conversations per HIT / 60 (minutes per
    conversation). Conversations per HIT is the count in the first record, as the original tool does: in the second
    free-topic round a HIT always held 6 conversations even where the published ratings collapse a repeated system."""
    per_hit = len(hits.assignments[0].result) if hits.assignments else 0
    groups: dict[str, list[float]] = {"passed": [], "failed": []}
    for a in hits.assignments:
        groups["passed" if a.worker in passed_workers else "failed"].append(a.duration_s)
    groups["all"] = groups["passed"] + groups["failed"]

    def minutes(xs: list[float]) -> float:
        return float(np.mean(xs)) / per_hit / 60 if xs and per_hit else float("nan")

    return pl.DataFrame({g: [minutes(groups[g])] for g in GROUPS}, schema={g: pl.Float64 for g in GROUPS})


# -- all steps --------------------------------------------------------------------------------------------------------
@dataclass
class Processed:
    metadata: Metadata
    conversations: pl.DataFrame  # standardised conversation table (all workers)
    moments: pl.DataFrame
    qc: pl.DataFrame
    passed_workers: list[str]  # sorted
    failed_workers: list[str]
    passed_assignments: list[str]  # sorted unique
    failed_assignments: list[str]
    passed_hits: list[str]
    failed_hits: list[str]
    passrate: pl.DataFrame
    scores: dict[str, tuple[pl.DataFrame, pl.DataFrame]]  # group -> (z table, raw table)
    duration: pl.DataFrame
    defects: list[Defect] = field(default_factory=list)

    @property
    def ranked_models(self) -> list[str]:
        return self.scores["passed"][0].get_column("model").to_list()

    def group_rows(self, group: str) -> pl.DataFrame:
        """The conversation table of passing, failing or all workers."""
        if group == "all":
            return self.conversations
        keep = self.passed_workers if group == "passed" else self.failed_workers
        return self.conversations.filter(pl.col("worker").is_in(keep))


def process(hits: Hits, *, ranking: tuple[str, ...] | list[str] | None = None,
            threshold: float = QC_THRESHOLD) -> Processed:
    """Steps 1-6 on one run's ratings. `ranking` overrides metadata.ranking."""
    meta = hits.metadata
    if not hits.assignments:
        raise ValueError(f"{hits.file}: no assignments to process")
    conv = conversation_table(hits)
    moments = worker_moments(conv, meta.score_names)
    conv = standardise(conv, moments, meta.score_names)
    qc = quality_control(conv, meta, threshold)
    passed = qc.filter(pl.col("passed")).get_column("worker").to_list()
    failed = qc.filter(~pl.col("passed")).get_column("worker").to_list()
    ok = pl.col("worker").is_in(passed)

    def uniq(frame: pl.DataFrame, col: str) -> list[str]:
        return sorted(frame.get_column(col).unique().to_list())

    rank = tuple(ranking) if ranking is not None else None
    # every group by system_scores' one order rule: `ranking`, else metadata.ranking, else the group's own z
    scores = {group: system_scores(conv, meta, workers, rank)
              for group, workers in (("passed", set(passed)), ("failed", set(failed)), ("all", None))}
    return Processed(meta, conv, moments, qc, passed, failed, uniq(conv.filter(ok), "assignment"),
                     uniq(conv.filter(~ok), "assignment"), uniq(conv.filter(ok), "hit"), uniq(conv.filter(~ok), "hit"),
                     pass_rates(conv, set(passed)), scores, durations(hits, set(passed)), list(hits.defects))
