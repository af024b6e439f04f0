"""The resume area's decisions (issue 44, `make mutation AREA=resumeA`), pinned fast and without Ray: which samples
a resume counts done, failed, over a limit or missing (jobs/epochs.py `to_solve`, core/predictions.py `pair`), which
it solves per epoch and the line it prints (jobs/epochs.py `left_per_epoch`, `resume_line`), each epoch's folder
and eval-log name, and how a config's epochs are scored and reduced (`score_epochs`, `reduce_table`, `_summed`).

Stand-ins: a small in-test task (`Guess`: is the prediction the sample's target?) whose scorer records what it was
given, a recording eval log, and prediction folders under tmp_path written by the real `JsonlStore` (the format a
resume reads). Every expected value is worked out by hand in the test.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import polars as pl
import pytest

from emocaustics.core.predictions import NOT_WRITTEN, Paired, pair
from emocaustics.core.task import Failure, JsonlStore, Loaded, Methods, Options, Sample, Scored, Task, rows_frame
from emocaustics.jobs.epochs import _summed, epoch_dir, epoch_label, reduce_table, score_epochs, to_solve
from emocaustics.jobs.epochs import left_per_epoch, resume_line
from emocaustics.jobs.together import Solved

NOT_WRITTEN_TEXT = "solve: no prediction was written for this sample"


# -- folders and labels -----------------------------------------------------------------------------------------
def test_a_one_epoch_config_keeps_its_own_folder_and_label():
    assert epoch_dir(Path("/p/cfg"), 1, 1) == Path("/p/cfg")
    assert epoch_label("cfg", 1, 1) == "cfg"


def test_each_epoch_of_many_has_its_own_folder_and_label():
    assert epoch_dir(Path("/p/cfg"), 1, 2) == Path("/p/cfg/epoch-1")
    assert epoch_dir(Path("/p/cfg"), 3, 3) == Path("/p/cfg/epoch-3")
    assert epoch_label("cfg", 1, 2) == "cfg.epoch-1"
    assert epoch_label("cfg", 2, 2) == "cfg.epoch-2"


# -- which sample a resume solves ------------------------------------------------------------------------------
def test_a_sample_with_nothing_written_is_solved():
    assert to_solve(None, False) is True
    assert to_solve(None, True) is True


def test_a_failed_sample_is_solved_again():
    assert to_solve(Failure("parse", "bad json"), False) is True
    assert to_solve(Failure("solve", "x"), True) is True


def test_a_sample_over_a_limit_is_kept_unless_retry_limits():
    for step in ("token_limit", "time_limit"):
        assert to_solve(Failure(step, "over"), False) is False
        assert to_solve(Failure(step, "over"), True) is True


def test_a_written_prediction_is_done_even_when_falsy():
    for pred in ("x", "", 0, False, [], {}):
        assert to_solve(pred, False) is False
        assert to_solve(pred, True) is False


# -- predictions paired with samples ----------------------------------------------------------------------------
def _samples(*ids: str) -> list[Sample]:
    return [Sample(i, {"n": i}, f"t-{i}") for i in ids]


def test_a_sample_without_a_row_is_a_listed_failure_and_extra_ids_are_named():
    got = pair(_samples("a", "b", "c", "d"), {"c": Failure("parse", "p"), "a": "pa", "zz": "x", "yy": Failure("s", "r")})
    assert isinstance(got, Paired)
    assert got.predictions == {"c": Failure("parse", "p"), "a": "pa", "zz": "x", "yy": Failure("s", "r"),
                               "b": NOT_WRITTEN, "d": NOT_WRITTEN}
    assert list(got.predictions) == ["c", "a", "zz", "yy", "b", "d"]
    assert got.missing == ["b", "d"]
    assert got.unpaired == ["yy", "zz"]  # sorted
    assert got.failed == ["c", "b", "d"]  # the unpaired failure "yy" is no sample's
    assert (NOT_WRITTEN.step, NOT_WRITTEN.reason) == ("solve", "no prediction was written for this sample")


def test_pairing_a_complete_folder_finds_nothing_missing():
    got = pair(_samples("a", "b"), {"a": 1, "b": None})
    assert got.predictions == {"a": 1, "b": None}
    assert (got.missing, got.unpaired, got.failed) == ([], [], [])


def test_pairing_does_not_change_what_was_found():
    found = {"a": 1}
    pair(_samples("a", "b"), found)
    assert found == {"a": 1}


# -- the in-test task ------------------------------------------------------------------------------------------
def _vote(got: list[Any]) -> Any:
    """The most frequent answer that is no Failure (ties: the first reached); None when every epoch failed."""
    answers = [p for p in got if not isinstance(p, Failure)]
    if not answers:
        return None
    counts = Counter(answers)
    best = max(counts.values())
    return next(a for a in answers if counts[a] == best)


class GuessOptions(Options):
    reducers: ClassVar[dict[str, Any]] = {"mean": None, "mode": _vote, "max": None, "pass@k": None}


class FolderStore(JsonlStore):
    """The real store, as a task's own may be: it reads only a folder that is there (a resume never asks it for
    an epoch never started)."""

    def read_predictions(self, out: Path) -> dict[str, Any]:
        assert out.is_dir(), f"asked to read {out}, which a run never made"
        return super().read_predictions(out)


class Guess(Task):
    name: ClassVar[str] = "guess"
    store = FolderStore()
    Options: ClassVar[type[Options]] = GuessOptions
    methods = Methods(solver=("ask",), calibration=("right",))
    primary_metric: ClassVar[str] = "acc"

    def __init__(self, summary_has_primary: bool = True, f1_of_failures: bool = True) -> None:
        self.summary_has_primary, self.f1_of_failures = summary_has_primary, f1_of_failures
        self.scored: list[tuple[Any, Any, dict[str, Any]]] = []
        self.finalized: list[tuple[Path, list[str], dict[str, Any]]] = []

    def score(self, samples, predictions, options, ctx) -> Scored:
        self.scored.append((options, ctx, dict(predictions)))
        rows = []
        for s in samples:
            p = predictions[s.id]
            if isinstance(p, Failure):
                rows += [{"sample_id": s.id, "metric": m, "value": 0.0, "status": "failed", "reason": str(p)}
                         for m in ("acc", "f1")[:2 if self.f1_of_failures else 1]]
            else:
                right = p == s.target
                rows += [{"sample_id": s.id, "metric": "acc", "value": float(right)},
                         {"sample_id": s.id, "metric": "f1", "value": 0.5 if right else 0.25}]
        frame = rows_frame(rows)
        acc = frame.filter(pl.col("metric") == "acc")["value"].mean()
        first = len(self.scored) == 1
        summary = {"n": len(samples), "flag": True, "name": "guess", "first_only": 1.0 if first else None}
        if self.summary_has_primary:
            summary = {"acc": acc, **summary}
        return Scored(frame, summary)

    def finalize(self, out, samples, predictions, options):
        assert isinstance(options, Options)
        self.finalized.append((out, [s.id for s in samples], dict(predictions)))
        return []


class Log:
    """The eval log's stand-in: which config label finished with which samples and predictions."""

    def __init__(self) -> None:
        self.finished: list[tuple[str, list[str], dict[str, Any]]] = []

    def config(self, label: str) -> Any:
        return SimpleNamespace(finish=lambda samples, preds: self.finished.append(
            (label, [s.id for s in samples], dict(preds))))


def _cfg(tmp_path: Path, task: Task, *, epochs: int, method: str = "ask", reducer: str = "mean") -> Any:
    return SimpleNamespace(task=task, options=GuessOptions(method=method), label="guess_ask", epochs=epochs,
                           reducer=reducer, pred_dir=tmp_path / "predictions" / "guess_ask", model=None,
                           kind="model", price=None)


def _write(folder: Path, predictions: dict[str, Any] = {}, failures: dict[str, Failure] = {}) -> None:
    """A prediction folder as a run leaves it (the real store's files)."""
    store = Guess.store
    folder.mkdir(parents=True, exist_ok=True)
    for sid, f in failures.items():
        store.write_prediction(folder, sid, f)
    for sid, p in predictions.items():
        store.write_prediction(folder, sid, p)


# -- which samples a resume solves, and the line it prints -------------------------------------------------------
def _two_epoch_folders(cfg: Any) -> list[Sample]:
    """Epoch 1: a answered, b failed, c over a token limit, d nothing, e failed then answered on a retry (the
    prediction wins); epoch 2: a and b answered, d over a time limit."""
    samples = _samples("a", "b", "c", "d", "e")
    _write(cfg.pred_dir / "epoch-1", {"a": "A", "e": "E"},
           {"b": Failure("parse", "bad"), "c": Failure("token_limit", "long"), "e": Failure("parse", "first")})
    _write(cfg.pred_dir / "epoch-2", {"a": "A2", "b": ""}, {"d": Failure("time_limit", "slow")})
    return samples


def test_resume_solves_per_epoch_the_missing_and_failed_samples(tmp_path):
    cfg = _cfg(tmp_path, Guess(), epochs=2)
    samples = _two_epoch_folders(cfg)
    left = left_per_epoch(cfg, samples)
    assert [[s.id for s in e] for e in left] == [["b", "d"], ["c", "e"]]
    left = left_per_epoch(cfg, samples, retry_limits=True)
    assert [[s.id for s in e] for e in left] == [["b", "c", "d"], ["c", "d", "e"]]
    assert [[s.id for s in e] for e in left_per_epoch(cfg, samples, False)] == [["b", "d"], ["c", "e"]]


def test_resume_of_an_epoch_never_started_solves_all_of_it(tmp_path):
    cfg = _cfg(tmp_path, Guess(), epochs=3)
    samples = _two_epoch_folders(cfg)
    left = left_per_epoch(cfg, samples)
    assert [[s.id for s in e] for e in left] == [["b", "d"], ["c", "e"], ["a", "b", "c", "d", "e"]]


def test_resume_line_of_many_epochs_counts_sample_epochs(tmp_path):
    cfg = _cfg(tmp_path, Guess(), epochs=2)
    samples = _two_epoch_folders(cfg)
    # done: epoch 1 a, e; epoch 2 a, b = 4 of 10; kept over a limit: c, d (not "done"); failed tried again: b
    assert resume_line(cfg, samples) == (
        "resume: guess_ask: 4 of 10 sample-epochs (5 samples x 2 epochs) done (skipped)"
        "; 2 failed over a limit, kept as failures (--retry-limits tries them again)"
        "; 4 to run (1 of them failed before and are tried again)")
    # --retry-limits: c and d run again, counted with the failed; none kept
    assert resume_line(cfg, samples, retry_limits=True) == (
        "resume: guess_ask: 4 of 10 sample-epochs (5 samples x 2 epochs) done (skipped); 6 to run"
        " (3 of them failed before and are tried again)")
    assert resume_line(cfg, samples, False) == resume_line(cfg, samples)


def test_resume_line_of_one_epoch_counts_samples(tmp_path):
    cfg = _cfg(tmp_path, Guess(), epochs=1)
    samples = _samples("a", "b", "c")
    _write(cfg.pred_dir, {"a": "A"})
    assert resume_line(cfg, samples) == "resume: guess_ask: 1 of 3 samples done (skipped); 2 to run"
    _write(cfg.pred_dir, failures={"b": Failure("time_limit", "slow")})
    assert resume_line(cfg, samples) == (  # issue 53: a sample kept as a failure is not "done"
        "resume: guess_ask: 1 of 3 samples done (skipped)"
        "; 1 failed over a limit, kept as failures (--retry-limits tries them again); 1 to run")
    assert [[s.id for s in e] for e in left_per_epoch(cfg, samples)] == [["c"]]


def test_resume_line_of_a_config_never_started(tmp_path):
    cfg = _cfg(tmp_path, Guess(), epochs=1)
    assert resume_line(cfg, _samples("a", "b")) == "resume: guess_ask: 0 of 2 samples done (skipped); 2 to run"
    assert [[s.id for s in e] for e in left_per_epoch(cfg, _samples("a", "b"))] == [["a", "b"]]


def test_resume_line_of_a_calibration_predictor(tmp_path):
    cfg = _cfg(tmp_path, Guess(), epochs=2, method="right")
    _two_epoch_folders(cfg)
    assert resume_line(cfg, _samples("a", "b", "c")) == (
        "resume: guess_ask: calibration predictor, scored again (3 samples)")


# -- scoring and reducing the epochs -----------------------------------------------------------------------------
def _solved() -> Solved:
    """s1 right twice; s2 failed then right; s3 nothing written then failed; s4 '' then failed; s5 '' then 0 (its
    target is ''); epoch 1 also holds an id that is no sample's."""
    samples = [Sample(i, {}, t, {"cluster": c}) for i, t, c in
               (("s1", "x", "d1"), ("s2", "y", "d1"), ("s3", "z", "d2"), ("s4", "q", "d2"), ("s5", "", "d3"))]
    e1 = {"zz": "stray", "s2": Failure("parse", "bad"), "s1": "x", "s4": "", "s5": ""}
    e2 = {"s1": "x", "s2": "y", "s3": Failure("solve", "boom"), "s4": Failure("parse", "p2"), "s5": 0}
    st1 = {"s1": {"llm_calls": 1, "seconds": 0.5, "prompt_tokens": 10, "generated_tokens": 2, "flag": True},
           "s2": {"llm_calls": 2, "seconds": 1.0, "note": "x"}}
    st2 = {"s1": {"llm_calls": 3, "seconds": 0.25}, "s4": {"llm_calls": 1, "cache_hits": 1}}
    return Solved(samples, [(e1, st1), (e2, st2)])


def _rows(frame: pl.DataFrame, *cols: str) -> list[tuple]:
    return [tuple(r) for r in frame.select(*cols).iter_rows()]


def test_epochs_are_scored_apart_and_the_scores_reduced_by_the_mean(tmp_path):
    task, log, ctx = Guess(), Log(), object()
    cfg = _cfg(tmp_path, task, epochs=2)
    solved = _solved()
    loaded = Loaded(solved.samples, info={"cluster": "doc"})
    scored, table, per_epoch = score_epochs(cfg, solved, ctx, log, loaded)
    ids = ["s1", "s2", "s3", "s4", "s5"]
    # each epoch's rows resample by the task's cluster (the samples' meta), as does the reduced row
    assert per_epoch["cluster"].to_list() == ["d1", "d1", "d2", "d2", "d3"] * 2
    assert table["cluster"].to_list() == ["d1", "d1", "d2", "d2", "d3"] and set(table["cluster_by"]) == {"doc"}
    # each epoch's predictions, paired: the sample without a row a NOT_WRITTEN failure, the stray id kept
    e1 = {"s1": "x", "s2": Failure("parse", "bad"), "s4": "", "s5": "", "zz": "stray", "s3": NOT_WRITTEN}
    e2 = {"s1": "x", "s2": "y", "s3": Failure("solve", "boom"), "s4": Failure("parse", "p2"), "s5": 0}
    assert log.finished == [("guess_ask.epoch-1", ids, e1), ("guess_ask.epoch-2", ids, e2)]
    assert list(log.finished[0][2]) == ["s1", "s2", "s4", "s5", "zz", "s3"]
    assert [(o, c, p) for o, c, p in task.scored] == [(cfg.options, ctx, e1), (cfg.options, ctx, e2)]
    assert task.finalized == [(cfg.pred_dir / "epoch-1", ids, e1), (cfg.pred_dir / "epoch-2", ids, e2)]
    # per epoch: s1 1/1, s2 0/1, s3 0/0, s4 0/0, s5 1/0
    assert _rows(per_epoch, "sample_id", "epoch", "score", "failed", "c_f1", "llm_calls", "seconds") == [
        ("s1", 1, 1.0, False, 0.5, 1, 0.5), ("s2", 1, 0.0, True, 0.0, 2, 1.0), ("s3", 1, 0.0, True, 0.0, 0, 0.0),
        ("s4", 1, 0.0, False, 0.25, 0, 0.0), ("s5", 1, 1.0, False, 0.5, 0, 0.0),
        ("s1", 2, 1.0, False, 0.5, 3, 0.25), ("s2", 2, 1.0, False, 0.5, 0, 0.0), ("s3", 2, 0.0, True, 0.0, 0, 0.0),
        ("s4", 2, 0.0, True, 0.0, 1, 0.0), ("s5", 2, 0.0, False, 0.25, 0, 0.0)]
    assert per_epoch["epoch"].dtype == pl.Int64
    assert scored.rows.height == 20 and scored.rows["epoch"].to_list() == [1] * 10 + [2] * 10
    assert scored.rows.filter(pl.col("epoch") == 2)["sample_id"].to_list()[:2] == ["s1", "s1"]
    assert scored.rows["epoch"].dtype == pl.Int64
    # reduced: mean score, mean c_f1, summed cost; failed only when both epochs failed (s3), status and reason
    # of the first epoch that did not fail, else epoch 1's
    assert table.columns == [c for c in per_epoch.columns if c != "epoch"]
    assert _rows(table, "sample_id", "score", "failed", "status", "reason", "c_f1", "llm_calls", "cache_hits",
                 "seconds", "run") == [
        ("s1", 1.0, False, "ok", None, 0.5, 4, 0, 0.75, "guess_ask"),
        ("s2", 0.5, False, "ok", None, 0.25, 2, 0, 1.0, "guess_ask"),
        ("s3", 0.0, True, "failed", NOT_WRITTEN_TEXT, 0.0, 0, 0, 0.0, "guess_ask"),
        ("s4", 0.0, False, "ok", None, 0.125, 1, 1, 0.0, "guess_ask"),
        ("s5", 0.5, False, "ok", None, 0.375, 0, 0, 0.0, "guess_ask")]
    assert table["cost_usd"].to_list() == [0.0] * 5  # no model, no price: calls cost nothing
    # the summary: each numeric metric's mean over the epochs (acc 2/5 in both); not the bool, the text, or one
    # that an epoch lacks; then the reducer, the epochs and each epoch's own
    s1 = {"acc": 2 / 5, "n": 5, "flag": True, "name": "guess", "first_only": 1.0}
    s2 = {"acc": 2 / 5, "n": 5, "flag": True, "name": "guess", "first_only": None}
    assert scored.summary == {"acc": 2 / 5, "n": 5.0, "reducer": "mean", "epochs": 2,
                              "per_epoch": [s1, s2]}
    assert list(scored.summary) == ["acc", "n", "reducer", "epochs", "per_epoch"]


def test_a_summary_without_the_primary_metric_gets_the_mean_reduced_score(tmp_path):
    task = Guess(summary_has_primary=False)
    cfg = _cfg(tmp_path, task, epochs=2, reducer="max")
    scored, table, _ = score_epochs(cfg, _solved(), None, Log())
    assert table["score"].to_list() == [1.0, 1.0, 0.0, 0.0, 1.0]
    assert "acc" not in scored.summary  # the headline is summary.csv's (scoring.headline.headline), never a second one
    assert scored.summary["n"] == 5.0 and scored.summary["reducer"] == "max"


def test_a_summary_of_all_zero_scores_says_zero(tmp_path):
    task = Guess(summary_has_primary=False)
    cfg = _cfg(tmp_path, task, epochs=1)
    solved = Solved([Sample("s1", {}, "x"), Sample("s2", {}, "y")], [({"s1": "no"}, {})])
    scored, table, per_epoch = score_epochs(cfg, solved, None, Log())
    assert table["score"].to_list() == [0.0, 0.0]
    assert "acc" not in scored.summary
    assert scored.summary["epochs"] == 1 and scored.summary["n"] == 2.0
    assert task.finalized[0][0] == cfg.pred_dir  # one epoch: the config's own folder
    assert per_epoch["epoch"].to_list() == [1, 1]


def test_epochs_whose_metrics_differ_are_reduced_together(tmp_path):
    """Epoch 1 failed and has no f1 row (its table no c_f1 column), epoch 2 has one: the epochs still make one
    table, the missing metric null in epoch 1 and left out of the mean."""
    task = Guess(f1_of_failures=False)
    cfg = _cfg(tmp_path, task, epochs=2)
    solved = Solved([Sample("s1", {}, "x")], [({"s1": Failure("parse", "bad")}, {}), ({"s1": "x"}, {})])
    scored, table, per_epoch = score_epochs(cfg, solved, None, Log())
    assert _rows(per_epoch, "epoch", "score", "c_f1") == [(1, 0.0, None), (2, 1.0, 0.5)]
    assert _rows(table, "score", "c_f1", "failed") == [(0.5, 0.5, False)]


class Plain(Guess):
    """A task whose Options declare no vote in `reducers`: every reducer reduces the scores."""

    Options: ClassVar[type[Options]] = Options


def test_a_task_without_prediction_reducers_reduces_the_scores(tmp_path):
    task = Plain()
    cfg = _cfg(tmp_path, task, epochs=2, reducer="mode")
    cfg.options = Options(method="ask")
    solved = Solved([Sample("s1", {}, "x")], [({"s1": "x"}, {}), ({"s1": "n"}, {})])
    scored, table, _ = score_epochs(cfg, solved, None, Log())
    assert table["score"].to_list() == [1.0]  # a tie of 1.0 and 0.0: epoch 1's
    assert len(task.finalized) == 2 and scored.summary["reducer"] == "mode"


def test_one_epoch_scores_as_itself(tmp_path):
    task, log = Guess(), Log()
    cfg = _cfg(tmp_path, task, epochs=1, reducer="mode")
    solved = Solved([Sample("s1", {}, "x"), Sample("s2", {}, "y")], [({"s1": "x", "s2": "n"}, {})])
    scored, table, _ = score_epochs(cfg, solved, None, log)
    assert log.finished[0][0] == "guess_ask"
    assert table["score"].to_list() == [1.0, 0.0]


def test_a_task_that_votes_the_predictions_scores_the_vote(tmp_path):
    task, log, ctx = Guess(), Log(), object()
    cfg = _cfg(tmp_path, task, epochs=2, reducer="mode")
    solved = _solved()
    scored, table, per_epoch = score_epochs(cfg, solved, ctx, log, Loaded(solved.samples, info={"cluster": "doc"}))
    ids = ["s1", "s2", "s3", "s4", "s5"]
    assert per_epoch["cluster"].to_list() == ["d1", "d1", "d2", "d2", "d3"] * 2
    assert table["cluster"].to_list() == ["d1", "d1", "d2", "d2", "d3"] and set(table["cluster_by"]) == {"doc"}
    # s1 x,x -> x; s2 failed,y -> y; s3 nothing,failed -> no vote: the first failure (NOT_WRITTEN);
    # s4 '',failed -> '' is no answer: the failure; s5 '',0 -> '' no answer, no failure: epoch 1's ''
    reduced = {"s1": "x", "s2": "y", "s3": NOT_WRITTEN, "s4": Failure("parse", "p2"), "s5": ""}
    assert log.finished[2] == ("guess_ask", ids, reduced) and len(log.finished) == 3
    assert task.scored[2] == (cfg.options, ctx, reduced)
    assert task.finalized[2] == (cfg.pred_dir, ids, reduced) and len(task.finalized) == 3
    assert _rows(table, "sample_id", "score", "failed", "llm_calls", "cache_hits", "seconds") == [
        ("s1", 1.0, False, 4, 0, 0.75), ("s2", 1.0, False, 2, 0, 1.0), ("s3", 0.0, True, 0, 0, 0.0),
        ("s4", 0.0, True, 1, 1, 0.0), ("s5", 1.0, False, 0, 0, 0.0)]
    assert "epoch" not in table.columns and per_epoch["epoch"].to_list() == [1] * 5 + [2] * 5
    assert scored.rows.height == 10 and "epoch" not in scored.rows.columns
    # the vote's own summary (s1, s2 and s5 right: 3/5), with the reducer, the epochs and each epoch's
    assert scored.summary == {
        "acc": 3 / 5, "n": 5, "flag": True, "name": "guess", "first_only": None, "reducer": "mode", "epochs": 2,
        "per_epoch": [{"acc": 2 / 5, "n": 5, "flag": True, "name": "guess", "first_only": 1.0},
                      {"acc": 2 / 5, "n": 5, "flag": True, "name": "guess", "first_only": None}]}


def test_a_reducer_the_task_does_not_vote_reduces_the_scores(tmp_path):
    task = Guess()
    cfg = _cfg(tmp_path, task, epochs=2, reducer="pass@1")
    scored, table, _ = score_epochs(cfg, _solved(), None, Log())
    assert table["score"].to_list() == [1.0, 0.5, 0.0, 0.0, 0.5]
    assert len(task.finalized) == 2 and scored.summary["reducer"] == "pass@1"


# -- reduce_table on hand-made epochs ----------------------------------------------------------------------------
def _epoch_frame() -> pl.DataFrame:
    """Three epochs of a, two of b and c, epoch 2's rows first (the reduction sorts by epoch)."""
    rows = [
        # sample, epoch, score, failed, status, reason, c_f1, llm_calls, seconds, cost_usd, note
        ("a", 2, 0.0, True, "failed", "parse: two", 0.0, 2, 2.0, 0.2, "a2"),
        ("b", 2, 0.0, True, "failed", "solve: b2", 0.0, 5, 0.5, None, "b2"),
        ("c", 2, 0.5, False, "ok", "c2 fine", 1.0, 1, 1.0, 0.5, "c2"),
        ("a", 1, 1.0, False, "ok", None, 0.5, 1, 1.0, 0.1, "a1"),
        ("b", 1, None, True, "failed", "solve: b1", 0.0, 4, 0.25, 0.0, "b1"),
        ("c", 1, 0.0, True, "failed", "parse: c1", 0.0, 1, 1.0, 0.25, "c1"),
        ("a", 3, 1.0, False, "ok", "a3", 1.0, 3, 3.0, 0.3, "a3"),
    ]
    cols = ["sample_id", "epoch", "score", "failed", "status", "reason", "c_f1", "llm_calls", "seconds", "cost_usd",
            "note"]
    return pl.DataFrame(rows, schema={"sample_id": pl.Utf8, "epoch": pl.Int64, "score": pl.Float64,
                                      "failed": pl.Boolean, "status": pl.Utf8, "reason": pl.Utf8,
                                      "c_f1": pl.Float64, "llm_calls": pl.Int64, "seconds": pl.Float64,
                                      "cost_usd": pl.Float64, "note": pl.Utf8}, orient="row").select(
        "note", *[c for c in cols if c != "note"])


@pytest.mark.parametrize(("reducer", "scores"), [
    ("mean", [2 / 3, 0.0, 0.25]),
    ("max", [1.0, 0.0, 0.5]),
    ("mode", [1.0, 0.0, 0.0]),  # c: a tie of 0.0 (epoch 1) and 0.5 (epoch 2): the one reached first
    ("pass@1", [2 / 3, 0.0, 0.0]),
])
def test_reduce_table_reduces_each_samples_scores_in_epoch_order(reducer, scores):
    got = reduce_table(_epoch_frame(), reducer)
    assert got.columns == ["note", "sample_id", "score", "failed", "status", "reason", "c_f1", "llm_calls",
                           "seconds", "cost_usd"]
    assert got["sample_id"].to_list() == ["a", "b", "c"]  # as first met
    assert got["score"].to_list() == pytest.approx(scores)
    assert got["score"].dtype == pl.Float64


def test_reduce_table_sums_cost_averages_metrics_and_keeps_the_first_unfailed_status():
    got = reduce_table(_epoch_frame(), "mean")
    assert _rows(got, "sample_id", "note", "failed", "status", "reason", "c_f1", "llm_calls", "seconds") == [
        ("a", "a1", False, "ok", None, 0.5, 6, 6.0),  # epoch 1 did not fail: its status and (null) reason
        ("b", "b1", True, "failed", "solve: b1", 0.0, 9, 0.75),  # every epoch failed: epoch 1's
        ("c", "c1", False, "ok", "c2 fine", 0.5, 2, 2.0)]  # epoch 2 is the first that did not fail
    assert got["cost_usd"].to_list() == pytest.approx([0.6, None, 0.75])  # b: one epoch's cost unknown


def test_a_sample_whose_every_epoch_is_unscored_stays_unscored():
    frame = pl.DataFrame({"sample_id": ["a", "a"], "epoch": [1, 2], "score": [None, None], "failed": [False, False]},
                         schema={"sample_id": pl.Utf8, "epoch": pl.Int64, "score": pl.Float64, "failed": pl.Boolean})
    got = reduce_table(frame, "mean")
    assert got.to_dicts() == [{"sample_id": "a", "score": None, "failed": False}]
    assert got["score"].dtype == pl.Float64


def test_a_failed_epoch_counts_zero_beside_an_unscored_one():
    """scoring/reducers.py: a failed epoch counts 0, as a failed sample does; an unscored epoch is left out."""
    frame = pl.DataFrame({"sample_id": ["a", "a"], "epoch": [1, 2], "score": [None, None], "failed": [True, False]},
                         schema={"sample_id": pl.Utf8, "epoch": pl.Int64, "score": pl.Float64, "failed": pl.Boolean})
    assert reduce_table(frame, "mean").to_dicts() == [{"sample_id": "a", "score": 0.0, "failed": False}]


def test_reduce_table_of_one_epoch_and_no_cost_columns():
    frame = pl.DataFrame({"epoch": [1, 1], "sample_id": ["a", "b"], "score": [0.25, 1.0], "failed": [False, True],
                          "cost_usd": [0.5, 0.1]})
    got = reduce_table(frame, "mode")
    assert got.to_dicts() == [{"sample_id": "a", "score": 0.25, "failed": False, "cost_usd": 0.5},
                              {"sample_id": "b", "score": 1.0, "failed": True, "cost_usd": 0.1}]


# -- each sample's cost over the epochs --------------------------------------------------------------------------
def test_summed_adds_each_samples_numbers_over_the_epochs():
    stats = [{"a": {"llm_calls": 1, "seconds": 0.5, "flag": True, "model": "m"}, "b": {"llm_calls": 2}},
             {"a": {"llm_calls": 3, "seconds": 0.25, "cache_hits": 1}, "c": {"flag": False}}]
    got = _summed(stats)
    assert got == {"a": {"llm_calls": 4, "seconds": 0.75, "cache_hits": 1}, "b": {"llm_calls": 2}, "c": {}}
    assert list(got) == ["a", "b", "c"]
    assert _summed([]) == {}


def test_summed_does_not_change_its_input():
    stats = [{"a": {"llm_calls": 1}}, {"a": {"llm_calls": 2}}]
    _summed(stats)
    assert stats == [{"a": {"llm_calls": 1}}, {"a": {"llm_calls": 2}}]
    assert json.dumps(stats)  # still plain rows


@pytest.mark.parametrize("line", ['{"id": "s1", "predic', '{"prediction": 1}', '[1, 2]'])  # cut, no id, not a row
@pytest.mark.parametrize("kind", ["prediction", "failure"])
def test_a_bad_line_of_the_store_is_named_by_file_and_line(tmp_path: Path, line: str, kind: str) -> None:
    """The default store reads its files back line by line: a line that is not JSON, or not its row, is one usage
    error naming the file and the line, never a traceback (a list in failures.jsonl was one: AttributeError); blank
    lines are passed over."""
    from emocaustics.core.errors import UsageError

    JsonlStore().write_prediction(tmp_path, "s0", {"answer": "A"} if kind == "prediction" else Failure("s", "r"))
    with (tmp_path / f"{kind}s.jsonl").open("a", encoding="utf-8") as f:
        f.write(line + "\n\n")
    with pytest.raises(UsageError) as got:
        JsonlStore().read_predictions(tmp_path)
    assert str(got.value).startswith(f"{tmp_path / f'{kind}s.jsonl'}: line 2: not a {kind} row ("), str(got.value)
    assert ("not JSON (Unterminated string" in str(got.value)) == line.endswith("predic")  # the reader's own words
    (tmp_path / "predictions.jsonl").write_text('{"id": "s0", "prediction": 1}\n\n', encoding="utf-8")
    (tmp_path / "failures.jsonl").unlink(missing_ok=True)
    assert JsonlStore().read_predictions(tmp_path) == {"s0": 1}
