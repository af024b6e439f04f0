"""`dialogue-judge` scored as a worker (issue 56): the oracle agrees exactly and passes QC, a noisy copy of the
workers agrees as its noise implies and passes, a judge that ignores the conversation fails QC, garbage answers are
unscored and counted, and the statistics agree with scipy and the krippendorff package."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy import stats as sps

from emocaustics.core.task import Failure, get_task
from emocaustics.tasks.dialoguejudge.agreement import interval_alpha

TASK = get_task("dialogue-judge")


def scored(data, predictions=None, method="oracle", **options):
    opts = TASK.Options(method=method, **options)
    samples = TASK.load(TASK.Dataset(data=str(data)), opts).samples
    preds = TASK.predict(method, samples, opts) if predictions is None else predictions(samples)
    return samples, TASK.score(samples, preds, opts, None)


def noisy(sd: float, seed: int = 0):
    rng = random.Random(seed)
    return lambda samples: {s.id: {"ratings": {k: min(100, max(0, round(v + rng.gauss(0, sd))))
                                               for k, v in s.target.items()}} for s in samples}


def test_oracle_agrees_exactly_and_passes_qc(small_round):
    samples, s = scored(small_round)
    assert s.summary["system_r"] == pytest.approx(1.0, abs=1e-12)
    assert s.summary["system_rho"] == pytest.approx(1.0, abs=1e-12)
    assert s.summary["item_alpha"] == 1.0 and s.summary["item_r"] == pytest.approx(1.0, abs=1e-12)
    assert s.summary["qc_pass"] is True and s.summary["qc_p"] < 0.05
    assert s.summary["judged"] == len(samples) and s.summary["unscored"] == 0
    primary = s.rows.filter(s.rows["metric"] == "system_r")["value"]
    assert primary.mean() == pytest.approx(1.0, abs=1e-9)  # summary.csv's score: the mean of the shares is r
    agreement = s.tables["judge_agreement"]
    assert np.allclose(agreement["pearson"].to_numpy(), 1.0)  # every criterion
    assert agreement["pearson_low"][0] == pytest.approx(1.0)


def implied_r(samples, preds, passed: set[str], workers_z: dict[str, float]) -> float:
    """The attenuation the noise added implies, computed here: each of a worker's conversations gets the judge's z
    without noise ((worker's mean rating - the judge's mean for that worker) / the judge's sd for that worker) plus
    noise of variance var(noise added) / 7 / sd^2; a system's mean over its N_s conversations then has noise variance
    sum(var_i) / N_s^2, and r = corr(workers, signal) * sqrt(var(signal) / (var(signal) + mean noise variance))."""
    sign = {k: 1 if v["positive"] else -1 for k, v in samples[0].meta["metadata"]["score"].items()}
    noise = [(p - s.target[k]) for s in samples for k, p in preds[s.id]["ratings"].items()]
    judge_of: dict[str, list[float]] = {}
    for x in samples:
        judge_of.setdefault(x.meta["worker"], []).extend(v if sign[k] > 0 else 100 - v
                                                         for k, v in preds[x.id]["ratings"].items())
    signal: dict[str, list[float]] = {}
    var: dict[str, list[float]] = {}
    for x in samples:
        if x.meta["model"] in workers_z and x.meta["worker"] in passed:
            m, sd = np.mean(judge_of[x.meta["worker"]]), np.std(judge_of[x.meta["worker"]], ddof=1)
            human = np.mean([v if sign[k] > 0 else 100 - v for k, v in x.target.items()])
            signal.setdefault(x.meta["model"], []).append((human - m) / sd)
            var.setdefault(x.meta["model"], []).append(np.var(noise) / 7 / sd ** 2)
    models = sorted(signal)
    sig = np.array([np.mean(signal[m]) for m in models])
    noise_var = np.mean([np.sum(var[m]) / len(var[m]) ** 2 for m in models])
    corr = np.corrcoef([workers_z[m] for m in models], sig)[0, 1]
    return float(corr * np.sqrt(np.var(sig) / (np.var(sig) + noise_var)))


@pytest.mark.parametrize("sd", [10.0, 40.0])
def test_noisy_copy_agrees_as_its_noise_implies_and_passes_qc(small_round, sd):
    given: dict = {}
    samples, s = scored(small_round, lambda smp: given.setdefault("p", noisy(sd)(smp)))
    assert s.summary["qc_pass"] is True
    qc = s.tables["judge_qc"]
    passed = set(qc.filter(qc["passed"] & (qc["worker"] != "judge"))["worker"])
    table = s.tables["judge_system_z"]
    workers_z = dict(zip(table["model"], table["human_z"]))
    assert s.summary["system_r"] == pytest.approx(implied_r(samples, given["p"], passed, workers_z), abs=0.1)
    assert s.summary["pearson_low"] <= s.summary["system_r"] <= s.summary["pearson_high"]
    assert 0 < s.summary["item_alpha"] < 1


def test_more_noise_agrees_less(small_round):
    r = [scored(small_round, noisy(sd))[1].summary["system_r"] for sd in (5.0, 40.0)]
    assert r[0] > r[1]


@pytest.mark.parametrize("method", ["constant", "random"])
def test_a_judge_that_ignores_the_conversation_fails_qc(small_round, method):
    _, s = scored(small_round, method=method)
    assert s.summary["qc_pass"] is False and not s.summary["qc_p"] < 0.05
    if method == "constant":  # constant ratings: the method's p = 1, and no correlation is defined
        assert s.summary["qc_p"] == 1.0 and math.isnan(s.summary["system_r"])
        assert set(s.rows.filter(s.rows["metric"] == "system_r")["status"]) == {"unscored"}


def test_a_judge_that_rates_every_conversation_alike_has_no_r(small_round):
    """0 on every criterion (what a schema-filling stand-in answers): after reversal not constant, so the twins' z
    differ only by rounding; r over that noise would be a number from nothing."""
    _, s = scored(small_round, lambda smp: {x.id: {"ratings": dict.fromkeys(x.target, 0)} for x in smp},
                  resamples=200)
    assert s.summary["qc_pass"] is False and s.summary["qc_p"] == pytest.approx(0.5, abs=0.01)  # all ties
    assert all(math.isnan(s.summary[k]) for k in ("system_r", "system_rho", "pearson_low", "spearman_high"))
    assert set(s.rows.filter(s.rows["metric"] == "system_r")["status"]) == {"unscored"}


def test_garbage_for_a_tenth_is_unscored_and_counted(small_round):
    def answers(samples):
        out = noisy(10.0)(samples)
        for i, smp in enumerate(samples[::10]):
            out[smp.id] = (Failure("solve", "model error") if i % 3 == 0 else {"ratings": "I liked it"} if i % 3 == 1
                           else {"ratings": {**out[smp.id]["ratings"], "fun": 250}})
        return out

    samples, s = scored(small_round, answers)
    bad = {x.id for x in samples[::10]}
    assert s.summary["unscored"] == len(bad) and s.summary["judged"] == len(samples) - len(bad)
    assert s.summary["failed"] == math.ceil(len(bad) / 3) and s.summary["unreadable"] == len(bad) - s.summary["failed"]
    rows = s.rows.filter(s.rows["sample_id"].is_in(sorted(bad)))
    assert set(rows["status"]) == {"unscored"} and rows["value"].null_count() == rows.height  # never 0
    assert s.summary["qc_pass"] is True and s.summary["system_r"] > 0.8
    primary = s.rows.filter((s.rows["metric"] == "system_r") & (s.rows["status"] == "ok"))["value"]
    assert primary.mean() == pytest.approx(s.summary["system_r"], abs=1e-9)


def test_statistics_agree_with_scipy(small_round):
    """System-level r and rho by scipy on the tables; QC by scipy's mannwhitneyu on the judge's z computed here by
    hand (each worker's conversations standardised over the judge's ratings of them); item r by pearsonr."""
    given: dict = {}
    samples, s = scored(small_round, lambda smp: given.setdefault("p", noisy(25.0, seed=3)(smp)))
    table = s.tables["judge_system_z"]
    assert s.summary["system_r"] == pytest.approx(sps.pearsonr(table["human_z"], table["judge_z"]).statistic, abs=1e-12)
    assert s.summary["system_rho"] == pytest.approx(sps.spearmanr(table["human_z"], table["judge_z"]).statistic,
                                                    abs=1e-12)
    preds = given["p"]
    meta = samples[0].meta["metadata"]
    rev = {k: (lambda v, k=k: v if meta["score"][k]["positive"] else meta["score"][k]["max"] - v)
           for k in meta["score"]}
    by_worker: dict[str, list] = {}
    for x in samples:
        by_worker.setdefault(x.meta["worker"], []).append((x.meta["model"], {k: rev[k](v) for k, v in
                                                                             preds[x.id]["ratings"].items()}))
    qc_z, sys_z = [], []
    qc_keys = [k for k in meta["score"] if meta["score"][k]["qc"]]
    for convs in by_worker.values():
        values = [v for _, r in convs for v in r.values()]
        mean, sd = np.mean(values), np.std(values, ddof=1)
        for model, r in convs:
            z = [(r[k] - mean) / (sd + 1e-6) for k in qc_keys]
            (qc_z if model == meta["qc-model"] else sys_z).extend(z)
    p = sps.mannwhitneyu(qc_z, sys_z, alternative="less").pvalue
    assert s.summary["qc_p"] == pytest.approx(p, rel=1e-9)
    human = [np.mean([rev[k](v) for k, v in x.target.items()]) for x in samples]
    judge = [np.mean([rev[k](v) for k, v in preds[x.id]["ratings"].items()]) for x in samples]
    assert s.summary["item_r"] == pytest.approx(sps.pearsonr(human, judge).statistic, abs=1e-12)


def test_interval_alpha_agrees_with_the_krippendorff_package():
    krippendorff = pytest.importorskip("krippendorff")
    rng = np.random.default_rng(7)
    for n in (5, 40, 300):
        x = rng.integers(0, 101, n).astype(float)
        y = np.clip(x + rng.normal(0, 25, n), 0, 100).round()
        want = krippendorff.alpha(reliability_data=np.vstack([x, y]), level_of_measurement="interval")
        assert interval_alpha(np.vstack([x, y])) == pytest.approx(want, abs=1e-12)
    # perfect agreement is exactly 1, whatever the values
    assert interval_alpha(np.array([[1.0, 2, 3], [1.0, 2, 3]])) == 1.0
