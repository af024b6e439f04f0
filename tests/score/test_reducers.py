"""Reducers over a sample's epochs (scoring/reducers.py), on worked examples checked by hand; no Ray."""

from __future__ import annotations

import math

import polars as pl
import pytest

from emocaustics.scoring.reducers import (check_reducer, epoch_spread, majority, pass_at_k, reduce_scores,
                                        reduce_votes, table_rows)


def test_pass_at_k_is_the_unbiased_estimator() -> None:
    # n = 5 epochs, c = 2 correct, k = 2: 1 - C(3,2)/C(5,2) = 1 - 3/10 = 0.7
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    # k = 1 is the share correct: 1 - C(3,1)/C(5,1) = 1 - 3/5
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    # n = 4, c = 1, k = 3: 1 - C(3,3)/C(4,3) = 1 - 1/4
    assert pass_at_k(4, 1, 3) == pytest.approx(0.75)
    assert pass_at_k(3, 0, 2) == 0.0 and pass_at_k(3, 2, 2) == 1.0  # n - c < k: every draw holds a correct one
    assert pass_at_k(6, 3, 2) == pytest.approx(1 - math.comb(3, 2) / math.comb(6, 2))
    with pytest.raises(ValueError, match="1 <= k <= n"):
        pass_at_k(2, 1, 3)


def test_reduce_scores_each_reducer() -> None:
    scores = [0.5, 1.0, 0.5, 0.0, 1.0]  # c = 2 full-credit epochs of 5
    assert reduce_scores(scores, "mean") == pytest.approx(0.6)
    assert reduce_scores(scores, "max") == 1.0
    assert reduce_scores(scores, "mode") == 0.5  # 0.5 and 1.0 twice each: the one reached first
    assert reduce_scores(scores, "pass@2") == pytest.approx(0.7)
    assert reduce_scores([None, 1.0, 0.0], "mean") == 0.5  # an unscored epoch is left out
    assert reduce_scores([None, None], "max") is None


def test_majority_vote_as_self_consistency() -> None:
    # votes A 4, B 3, C 1 of 5: A and B have a majority
    assert majority([["A", "B"], ["A"], ["A", "C"], ["B"], ["A", "B"]], 5) == (
        ["A", "B"], {"A": 4, "B": 3, "C": 1}, False)
    assert majority([["C"], ["B"], ["A"]], 3) == (["C"], {"A": 1, "B": 1, "C": 1}, True)  # no majority: earliest
    voted = reduce_votes([{"answer": ["A"], "raw_output": "x"}, None, {"answer": ["A", "B"]}])
    assert voted["answer"] == ["A"] and voted["unreadable"] == 1 and voted["raw_output"] == "x"
    assert reduce_votes([None, None]) is None


def test_reducer_names_are_checked() -> None:
    class Opts:
        reducers = ("mean", "pass@k")

    check_reducer("pass@3", Opts, 3)
    with pytest.raises(ValueError, match="unknown reducer 'median'"):
        check_reducer("median", Opts, 3)
    with pytest.raises(ValueError, match="does not fit"):
        check_reducer("mode", Opts, 3)
    with pytest.raises(ValueError, match="k = 4 is more than the 3 epoch"):
        check_reducer("pass@4", Opts, 3)


def test_epoch_spread_and_table_rows() -> None:
    per = pl.DataFrame({"run": ["r"] * 6, "sample_id": ["a", "a", "a", "b", "b", "b"], "epoch": [1, 2, 3] * 2,
                        "score": [1.0, 0.0, 1.0, 0.5, 0.5, 0.5]})
    got = epoch_spread(per).row(0, named=True)
    # a: sd of (1, 0, 1) = sqrt(2/9); b: 0 -> mean sqrt(2/9) / 2; one of two samples changed
    assert got["epochs"] == 3 and got["epoch_sd"] == pytest.approx(math.sqrt(2 / 9) / 2)
    assert got["epoch_changed"] == 0.5
    both = pl.concat([per, pl.DataFrame({"run": ["r", "r"], "sample_id": ["a", "b"], "epoch": [None, None],
                                         "score": [2 / 3, 0.5]}, schema=per.schema)])
    assert table_rows(both)["sample_id"].to_list() == ["a", "b"] and "epoch" not in table_rows(both).columns


def test_the_reduced_row_of_a_config() -> None:
    """jobs/epochs.py's reduced per-sample row: the score by the reducer, cost summed (unknown when one epoch's is),
    failed only when every epoch failed, and then with epoch 1's reason; else the status of an epoch that did not."""
    from emocaustics.jobs.epochs import reduce_table

    per = pl.DataFrame({"sample_id": ["a"] * 3 + ["b"] * 3, "epoch": [1, 2, 3] * 2,
                        "score": [0.0, 1.0, 0.5, 0.0, 0.0, 0.0], "failed": [True, False, False] + [True] * 3,
                        "status": ["failed", "ok", "ok"] + ["failed"] * 3,
                        "reason": ["token_limit: 9 > 8 tokens", None, None, "answer: x", "answer: y", "answer: z"],
                        "c_exact": [0.0, 1.0, 0.0, 0.0, 0.0, 0.0], "run": ["r"] * 6, "llm_calls": [1, 2, 3, 1, 1, 1],
                        "cost_usd": [0.1, 0.1, None, 0.0, 0.0, 0.0]})
    got = {r["sample_id"]: r for r in reduce_table(per, "pass@2").iter_rows(named=True)}
    assert got["a"]["score"] == pytest.approx(1 - math.comb(2, 2) / math.comb(3, 2))  # n 3, c 1, k 2: 2/3
    assert (got["a"]["failed"], got["a"]["status"], got["a"]["reason"]) == (False, "ok", None)
    assert got["a"]["llm_calls"] == 6 and got["a"]["cost_usd"] is None and got["a"]["c_exact"] == pytest.approx(1 / 3)
    assert (got["b"]["failed"], got["b"]["reason"], got["b"]["cost_usd"]) == (True, "answer: x", 0.0)
    assert "epoch" not in reduce_table(per, "mean").columns
