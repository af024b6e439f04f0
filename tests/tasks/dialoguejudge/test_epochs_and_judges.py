"""`dialogue-judge` across epochs and across judges (issue 56): `--epochs 2` gives the judge's self-replication (the
epochs' system z correlated, beside the humans' round-to-round r) through the job's own epoch scoring
(`jobs.epochs.score_epochs` and the task's `Options.reducers`); a grid of judges gives paired tests of their
agreement with the workers and alpha across them, checked here against computations of their own."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest
from scipy import stats as sps

from emocaustics.core.task import Failure, get_task
from emocaustics.tasks.human.cli import PAPER_R

TASK = get_task("dialogue-judge")


def loaded(data, **options):
    opts = TASK.Options(method="llm", resamples=0, **options)
    return TASK.load(TASK.Dataset(data=str(data)), opts), opts


def predictions(method: str, samples, seed: int):
    return TASK.predict(method, samples, TASK.Options(method=method, seed=seed))


def score_epochs(data, epochs: list[dict], tmp_path):
    """The job's epoch scoring of a config whose epochs answered `epochs` (no engine: the solved rows stand in)."""
    from emocaustics.jobs.epochs import score_epochs as job_score_epochs

    load, opts = loaded(data)
    log = SimpleNamespace(config=lambda label: SimpleNamespace(finish=lambda *a: None))
    cfg = SimpleNamespace(task=TASK, epochs=len(epochs), reducer="mean", label="judge", pred_dir=tmp_path,
                          options=opts, price=None, model="stand-in", kind="model")
    solved = SimpleNamespace(samples=load.samples, epoch=lambda e: (epochs[e - 1], {}))
    return job_score_epochs(cfg, solved, None, log, load)


def test_two_epochs_of_the_oracle_replicate_exactly(small_round, tmp_path):
    samples = loaded(small_round)[0].samples
    scored, table, _ = score_epochs(small_round, [predictions("oracle", samples, 0)] * 2, tmp_path)
    assert scored.summary["self_r"] == pytest.approx(1.0, abs=1e-12)
    assert scored.summary["human_self_r"] == PAPER_R and scored.summary["system_r"] == pytest.approx(1.0, abs=1e-12)
    assert table["self_r"].unique().to_list() == [scored.summary["self_r"]]  # summary.csv's column
    assert [e["self_r"] for e in scored.summary["per_epoch"]] == [None, None]  # an epoch alone has no replication


def test_random_epochs_do_not_replicate_and_the_reduced_judge_rates_their_mean(small_round, tmp_path):
    samples = loaded(small_round)[0].samples
    found = []
    for seed in range(6):
        epochs = [predictions("random", samples, 2 * seed), predictions("random", samples, 2 * seed + 1)]
        scored, _, _ = score_epochs(small_round, epochs, tmp_path)
        found.append(scored.summary["self_r"])
    assert abs(np.mean(found)) < 0.3 and all(-1 <= r <= 1 for r in found)  # 10 systems: each r is noisy around 0
    # the reduced judge's rating is the mean of its epochs': judged directly, the same r
    from emocaustics.tasks.dialoguejudge.agreement import judge
    from emocaustics.tasks.human.data import parse_metadata

    mean = {s.id: {k: (epochs[0][s.id]["ratings"][k] + epochs[1][s.id]["ratings"][k]) / 2 for k in s.target}
            for s in samples}
    direct = judge(parse_metadata(samples[0].meta["metadata"]), samples, mean, threshold=0.05, resamples=0,
                   seed=0).agreement["pearson"][0]
    assert scored.summary["system_r"] == pytest.approx(direct, abs=1e-12)


def test_an_epoch_that_failed_leaves_the_other_to_rate(small_round, tmp_path):
    samples = loaded(small_round)[0].samples
    oracle = predictions("oracle", samples, 0)
    broken = {**oracle, samples[0].id: Failure("solve", "model error")}
    both_broken = [broken, {**oracle, samples[0].id: {"ratings": "garbage"}}]
    scored, _, _ = score_epochs(small_round, [broken, oracle], tmp_path)
    assert scored.summary["unscored"] == 0 and scored.summary["system_r"] == pytest.approx(1.0, abs=1e-12)
    scored, _, _ = score_epochs(small_round, both_broken, tmp_path)
    assert scored.summary["unscored"] == 1 and scored.summary["failed"] == 1  # the first epoch's reason speaks


def grid(data, judges: list[tuple[str, int]]):
    """The job's per-sample rows of a grid of judges (as scores.parquet holds them: sample_info's columns, `run` and
    the assignment as `cluster`), and each judge's summary."""
    frames, summaries = [], {}
    for method, seed in judges:
        opts = TASK.Options(method=method, seed=seed, resamples=0)
        samples = TASK.load(TASK.Dataset(data=str(data)), opts).samples
        scored = TASK.score(samples, TASK.predict(method, samples, opts), opts, None)
        run = f"{method}-{seed}"
        summaries[run] = scored.summary
        frames.append(scored.tables["sample_info"].with_columns(
            pl.lit(run).alias("run"), pl.Series("cluster", [s.meta["cluster"] for s in samples])))
    return pl.concat(frames, how="diagonal_relaxed"), summaries


def test_paired_test_of_two_judges_agrees_with_an_independent_computation(small_round):
    from statsmodels.stats.multitest import multipletests

    from emocaustics.stats import cluster_index
    from emocaustics.stats.bootstrap import resample_counts
    from emocaustics.tasks.dialoguejudge.across import families, judge_pairs

    rows, summaries = grid(small_round, [("oracle", 0), ("random", 2), ("random", 5)])
    (family,) = families(rows)
    pairs = judge_pairs(family, resamples=300, seed=4)
    assert pairs["r_a"][0] == pytest.approx(summaries["oracle-0"]["system_r"], abs=1e-12)
    assert pairs["r_b"][0] == pytest.approx(summaries["random-2"]["system_r"], abs=1e-12)
    # by hand: the same draws of assignments, each judge's system means and scipy's r per resample
    one = family.filter(pl.col("run") == "oracle-0").filter(pl.col("human_z").is_not_null())
    runs = ["oracle-0", "random-2", "random-5"]
    judge_z = {r: dict(family.filter(pl.col("run") == r).select("sample_id", "judge_z").iter_rows()) for r in runs}
    draws = np.concatenate(list(resample_counts(one.height, 300, np.random.default_rng(4),
                                                cluster_index(one["cluster"].to_list()))))
    found = {r: [] for r in runs}
    for counts in draws:
        weighted = one.with_columns(pl.Series("w", counts.astype(float)))
        for r in runs:
            means = (weighted.with_columns(pl.Series("j", [judge_z[r][i] for i in one["sample_id"]]))
                     .group_by("system").agg((pl.col("human_z") * pl.col("w")).sum() / pl.col("w").sum(),
                                             (pl.col("j") * pl.col("w")).sum() / pl.col("w").sum()))
            ok = means.drop_nans().drop_nulls()
            found[r].append(sps.pearsonr(ok["human_z"], ok["j"]).statistic if ok.height == means.height
                            else np.nan)
    want_p = []
    for i, (a, b) in enumerate([(0, 1), (0, 2), (1, 2)]):
        d = summaries[runs[a]]["system_r"] - summaries[runs[b]]["system_r"]
        boot = np.array(found[runs[a]]) - np.array(found[runs[b]])
        boot = boot[~np.isnan(boot)]
        want_p.append((1 + np.sum(np.abs(boot - d) >= abs(d) - 1e-12)) / (len(boot) + 1))
        assert pairs["diff"][i] == pytest.approx(d, abs=1e-12)
        assert (pairs["diff_low"][i], pairs["diff_high"][i]) == pytest.approx(tuple(np.percentile(boot, [2.5, 97.5])),
                                                                              abs=1e-9)
    assert pairs["p"].to_list() == pytest.approx(want_p, abs=1e-12)
    assert pairs["p_holm"].to_list() == pytest.approx(list(multipletests(want_p, method="holm")[1]), abs=1e-12)
    assert pairs["p"][0] < 0.01 and pairs["significant"][0]  # the oracle agrees better than a random judge
    assert pairs["reliable_a"].to_list() == [True, True, False] and not any(pairs["reliable_b"])  # random fails QC


def test_alpha_across_judges_agrees_with_the_krippendorff_package(small_round):
    krippendorff = pytest.importorskip("krippendorff")
    from emocaustics.tasks.dialoguejudge.across import families, judge_pairs

    rows, _ = grid(small_round, [("oracle", 0), ("random", 1), ("random", 3)])
    # a judge that left conversations unscored: its cells are missing, not 0
    rows = rows.with_columns(pl.when((pl.col("run") == "random-3") & (pl.int_range(pl.len()) % 7 == 0))
                             .then(None).otherwise(pl.col(c)).alias(c) for c in rows.columns if c.startswith("judge:"))
    (family,) = families(rows)
    alpha = judge_pairs(family, resamples=0)["alpha"][0]  # the same in every pair's row
    crit = sorted(c for c in rows.columns if c.startswith("judge:"))
    order = family.filter(pl.col("run") == "oracle-0")["sample_id"]
    matrix = np.vstack([
        np.hstack([family.filter(pl.col("run") == r).sort(pl.col("sample_id").replace_strict(
            {s: i for i, s in enumerate(order)})).get_column(c).cast(pl.Float64).fill_null(np.nan).to_numpy()
                   for c in crit]) for r in ("oracle-0", "random-1", "random-3")])
    assert alpha == pytest.approx(krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval"),
                                  abs=1e-12)
    assert not math.isnan(alpha)

