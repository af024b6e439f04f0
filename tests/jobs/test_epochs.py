"""Epochs and reducers, on the session's real small engine (`smoke_pool`; its answers are noise): every task that
calls a model (aer, ecpe, sextuple, emotion, narrative) solved in 3 epochs with each reducer, one sample each; the
per-epoch rows and the reduced row in scores.parquet, the between-epoch spread in summary.csv and the report, each
epoch's samples in the eval log; a resume after a run stopped mid-way solves only the epochs it left."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from emocaustics.jobs.spec import JobSpec
from emocaustics.scoring.reducers import majority, reduce_scores

pytestmark = [pytest.mark.engine]

REDUCERS = ("mean", "mode", "max", "pass@2")
TASKS = {  # one model method per task, its smallest options
    "aer": {"method": "llm", "context": "none", "max_context_tokens": 8192, "chars_per_token": 0.8},
    "ecpe": {"method": "direct", "max_pairs": 4},
    "sextuple": {"method": "direct"},
    "emotion": {"method": "direct"},
    "narrative": {"method": "llm", "window_sentences": 6},
}


SHARED = Path(__file__).resolve().parents[3] / "shared" / "datasets"  # the public data beside the checkout


def _data(name: str, probe: str) -> str:
    root = SHARED / name
    if not (root / probe).is_file():
        pytest.skip(f"the public {name} data is not here ({root})")
    return str(root)


def _job(tmp: Path, runs: list[dict], name: str = "epochs") -> JobSpec:
    aer, ecac = _data("aer", "sample_data/questions.jsonl"), _data("ecac", "Subtask_1_test.json")
    return JobSpec.model_validate({
        "name": name, "output": str(tmp / "runs"), "cache_dir": str(tmp / "cache"),
        "dataset": {"aer": {"split": "sample", "data": aer}, "ecpe": {"ids": [1401], "data": ecac},
                    "sextuple": {"subset": "sample"},
                    "emotion": {"subset": "sample"}, "narrative": {"stories": ["kite_en"]}},
        "models": {"smoke": {"spec": "smoke"}}, "select": {"limit": 1},
        "runs": runs, "scoring": {"embedder": "minilm", "judge": "none"}})


def _lines(path: Path) -> list[str]:
    return [x for x in path.read_text(encoding="utf-8").splitlines() if x.strip()] if path.is_file() else []


@pytest.fixture(scope="module")
def epochs_run(smoke_pool, tmp_path_factory):
    from emocaustics.jobs.runner import run_job

    tmp = tmp_path_factory.mktemp("epochs")
    runs = [{"task": t, "model": "smoke", "options": o, "epochs": 3, "reducer": r}
            for t, o in TASKS.items() for r in REDUCERS]
    job = _job(tmp, runs)
    with contextlib.redirect_stdout(io.StringIO()):
        run_dir = run_job(job, out=str(tmp / "run"))
    return job, run_dir


def test_every_task_and_reducer_has_epoch_rows_and_a_reduced_row(epochs_run):
    job, run_dir = epochs_run
    scores = pl.read_parquet(run_dir / "scores.parquet")
    labels = [r.label for r in job.expand()]
    assert len(labels) == len(TASKS) * len(REDUCERS)
    for run in job.expand():
        rows = scores.filter(pl.col("run") == run.label)
        per = rows.filter(pl.col("epoch").is_not_null()).sort("epoch")
        reduced = rows.filter(pl.col("epoch").is_null())
        assert per["epoch"].to_list() == [1, 2, 3], run.label  # one sample, three epochs
        assert reduced.height == 1, run.label
        folder = run_dir / "predictions" / run.label
        assert all((folder / f"epoch-{e}" / "stats.jsonl").is_file() for e in (1, 2, 3)), run.label
        if run.task == "aer" and run.reducer == "mode":  # AER's mode votes the answers, then scores the vote
            read = [json.loads(line)["prediction"]["answer"] for e in (1, 2, 3)
                    for line in _lines(folder / f"epoch-{e}" / "predictions.jsonl")]
            voted = ",".join(majority(read, len(read))[0]) if read else ""
            (submitted,) = [json.loads(line)["answer"] for line in _lines(folder / "submission.jsonl")]
            assert submitted == voted, (read, submitted)  # the submission is the vote self-consistency takes
            continue
        assert reduced["score"][0] == pytest.approx(reduce_scores(per["score"].to_list(), run.reducer)), run.label
        assert reduced["llm_calls"][0] == per["llm_calls"].sum()  # the reduced row costs its epochs together


def test_epochs_are_asked_apart_not_one_cached_answer(epochs_run):
    """Epoch e asks each request of epoch 1 with its seed moved by (e - 1) * EPOCH_SEED_STRIDE: a request (and so a
    cache key) of its own, read here from the eval log's calls."""
    from emocaustics.evallog.read import RunLog
    from emocaustics.solve.item import EPOCH_SEED_STRIDE

    job, run_dir = epochs_run
    log = RunLog(run_dir)
    for run in job.expand():
        seeds = {e: [json.loads(c["sampling"])["seed"] or 0 for c in
                     log.calls(f"{run.label}.epoch-{e}").sort("seq").iter_rows(named=True)] for e in (1, 2, 3)}
        assert seeds[1], run.label  # the epoch asked the model
        for e in (2, 3):  # the first call moved by the epoch; every call in the epoch's own band of seeds
            assert seeds[e][0] == seeds[1][0] + (e - 1) * EPOCH_SEED_STRIDE, (run.label, seeds)
            assert all((e - 1) * EPOCH_SEED_STRIDE <= x < e * EPOCH_SEED_STRIDE for x in seeds[e]), (run.label, seeds)


def test_summary_and_report_give_the_spread(epochs_run):
    _, run_dir = epochs_run
    summary = pl.read_csv(run_dir / "summary.csv")
    assert summary.height == len(TASKS) * len(REDUCERS)  # the per-epoch rows are not configs of the tables
    assert (summary["epochs"] == 3).all() and (summary["samples"] == 1).all()
    scores = pl.read_parquet(run_dir / "scores.parquet").filter(pl.col("epoch").is_not_null())
    for row in summary.iter_rows(named=True):
        got = scores.filter(pl.col("run") == row["run"])["score"].fill_null(0.0)
        assert row["epoch_sd"] == pytest.approx(got.std(ddof=0), abs=1e-9)
        assert row["epoch_changed"] == (1.0 if got.n_unique() > 1 else 0.0)
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "epoch_sd" in html and "epoch_changed" in html
    configs = {c["run"]: c for c in json.loads((run_dir / "configs.json").read_text())}
    assert all(c["summary"]["epochs"] == 3 and len(c["summary"]["per_epoch"]) == 3 for c in configs.values())


def test_each_epoch_is_in_the_eval_log(epochs_run):
    from emocaustics.evallog.read import RunLog

    job, run_dir = epochs_run
    log = RunLog(run_dir)
    label = next(r.label for r in job.expand() if r.task == "narrative")
    for e in (1, 2, 3):
        assert log.samples(f"{label}.epoch-{e}")["sample_id"].to_list() == ["kite_en"]
        assert log.calls(f"{label}.epoch-{e}").height >= 1


def test_resume_solves_only_the_missing_epochs(epochs_run, smoke_pool, tmp_path):
    """A run stopped after epoch 2 of 3 (epoch 3's files gone, as a kill leaves them): the resume solves epoch 3's
    sample only, and gives the same tables."""
    from emocaustics.jobs.runner import run_job

    job, run_dir = epochs_run
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    label = next(r.label for r in job.expand() if r.task == "aer" and r.reducer == "mean")
    shutil.rmtree(copy / "predictions" / label / "epoch-3")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        run_job(job, out=str(copy), resume=True)
    assert f"resume: {label}: 2 of 3 sample-epochs (1 samples x 3 epochs) done (skipped); 1 to run" in out.getvalue()
    stats = (copy / "predictions" / label / "epoch-3" / "stats.jsonl").read_text().splitlines()
    assert len(stats) == 1  # epoch 3 solved again, once
    for other in ("epoch-1", "epoch-2"):  # not these
        assert len((copy / "predictions" / label / other / "stats.jsonl").read_text().splitlines()) == 1
    before = pl.read_csv(run_dir / "summary.csv").select("run", "score", "epoch_sd")
    after = pl.read_csv(copy / "summary.csv").select("run", "score", "epoch_sd")
    assert before.equals(after)
