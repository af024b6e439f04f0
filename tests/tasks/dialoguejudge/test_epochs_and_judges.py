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
