"""The vote's tie rules, which `collections.Counter.most_common` now decides: the earliest answer set among the most
frequent (majority's fallback) and the earliest epoch's score among the most frequent (the `mode` reducer)."""

from emocaustics.scoring.reducers import majority, reduce_scores


def test_majority_fallback_takes_the_earliest_of_the_most_frequent_answer_sets():
    answers = [["C"], ["A", "B"], ["B", "D"], ["B", "D"], ["A", "B"], ["C"]]  # B: 4 of 6 -> chosen
    assert majority(answers, 6) == (["B"], {"A": 2, "B": 4, "C": 2, "D": 2}, False)
    tied = [["C"], ["A"], ["A"], ["C"], ["D"]]  # no element over n/2; {C} and {A} twice each: {C} came first
    assert majority(tied, 5) == (["C"], {"A": 2, "C": 2, "D": 1}, True)
    assert majority([["A"], ["D"], ["D"], ["A"]], 4)[0] == ["A"]


def test_mode_takes_the_earliest_epoch_among_the_most_frequent_scores():
    assert reduce_scores([0.0, 1.0, 1.0, 0.0, None], "mode") == 0.0
    assert reduce_scores([1.0, 0.0, 0.0, 1.0, 0.5], "mode") == 1.0
    assert reduce_scores([0.5, 0.25, 0.25], "mode") == 0.25
