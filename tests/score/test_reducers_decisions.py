"""The reducers' decisions (issue 53's mutation area `reducers`: scoring/reducers.py) that test_reducers.py's worked
examples leave open: the names taken and their messages, pass@k at its bounds, the spread table's columns and order
(and the empty one), and the record a vote over the epochs' predictions leaves. Plain values; no Ray."""

from __future__ import annotations

import polars as pl
import pytest

from emocaustics.scoring.reducers import check_reducer, epoch_spread, parse_reducer, pass_at_k, reduce_votes


@pytest.mark.parametrize("name, parsed", [("mean", ("mean", 0)), ("mode", ("mode", 0)), ("max", ("max", 0)),
                                          ("pass@1", ("pass@k", 1)), ("pass@12", ("pass@k", 12))])
def test_reducer_names(name, parsed):
    assert parse_reducer(name) == parsed


@pytest.mark.parametrize("name", ["Mean", "pass@0", "pass@01", "pass@", "pass@2x", "median"])
def test_unknown_reducer_names(name):
    with pytest.raises(ValueError) as got:
        parse_reducer(name)
    assert str(got.value) == (f"unknown reducer {name!r}; choose one of mean, mode, max, pass@K (K a whole number "
                              ">= 1)")


class Voting:
    reducers = {"mode": lambda predictions: None, "mean": None}


def test_what_a_task_allows_is_named():
    with pytest.raises(ValueError) as got:
        check_reducer("max", Voting, 3)
    assert str(got.value) == "reducer 'max' does not fit this task's predictions; it allows mode, mean"
    with pytest.raises(ValueError) as got:
        check_reducer("pass@3", object, 2)
    assert str(got.value) == "reducer pass@3: k = 3 is more than the 2 epoch(s); give epochs >= 3"
    check_reducer("pass@2", object, 2)
    check_reducer("mode", Voting, 1)


def test_pass_at_k_at_its_bounds():
    assert pass_at_k(3, 0, 3) == 0.0  # k = n: every epoch drawn, none correct
    assert pass_at_k(3, 1, 3) == 1.0
    assert pass_at_k(3, 3, 1) == 1.0  # c = n
    assert pass_at_k(1, 0, 1) == 0.0
    for bad in ((3, 0, 0), (3, 0, 4), (3, -1, 1), (3, 4, 1)):
        with pytest.raises(ValueError, match=r"^pass@k needs 1 <= k <= n and 0 <= c <= n \(n=\d, c=-?\d, k=\d\)$"):
            pass_at_k(*bad)


def test_the_spread_of_no_epochs_is_an_empty_table_with_its_columns():
    empty = epoch_spread(pl.DataFrame(schema={"run": pl.Utf8, "sample_id": pl.Utf8, "epoch": pl.Int64,
                                              "score": pl.Float64}))
    assert empty.is_empty() and dict(empty.schema) == {"run": pl.Utf8, "epochs": pl.Int64, "epoch_sd": pl.Float64,
                                                       "epoch_changed": pl.Float64}


def test_the_spread_keeps_the_runs_order_and_counts_a_missing_score_as_zero():
    runs = [f"r{i:02d}" for i in range(30)][::-1]
    rows = [{"run": r, "sample_id": s, "epoch": e, "score": None if (r, s, e) == (runs[0], "a", 2) else 1.0}
            for r in runs for s in ("a", "b") for e in (1, 2)]
    spread = epoch_spread(pl.DataFrame(rows))
    assert spread["run"].to_list() == runs
    first = spread.row(0, named=True)
    # r29: sample a scored 1 then nothing (0): sd 0.5; sample b the same in both: sd 0; mean 0.25, one in two changed
    assert first == {"run": runs[0], "epochs": 2, "epoch_sd": 0.25, "epoch_changed": 0.5}
    assert spread.row(1, named=True) == {"run": runs[1], "epochs": 2, "epoch_sd": 0.0, "epoch_changed": 0.0}


def test_the_vote_record_of_the_epochs():
    predictions = [{"answer": ["A"], "why": "first"}, "failed", {"answer": ["A", "B"]}, {"answer": "C"},
                   {"other": ["B"]}]
    voted = reduce_votes(predictions)
    assert voted == {"answer": ["A"], "why": "first", "epoch_answers": [["A"], None, ["A", "B"], "C", None],
                     "votes": {"A": 2, "B": 1}, "vote_fallback": False, "unreadable": 3}
    tie = reduce_votes([{"answer": ["B"]}, {"answer": ["A"]}])
    assert (tie["answer"], tie["vote_fallback"], tie["votes"]) == (["B"], True, {"A": 1, "B": 1})
    assert reduce_votes(["x", {"answer": None}]) is None
    assert reduce_votes([{"pick": ["X"]}], key="pick")["pick"] == ["X"]


def test_a_tasks_reducers_and_its_default():
    from emocaustics.scoring.reducers import REDUCERS, reducers_of

    assert reducers_of(Voting) == (("mode", "mean"), "mode")
    assert reducers_of(object) == (REDUCERS, "mean") and REDUCERS == ("mean", "mode", "max", "pass@k")
