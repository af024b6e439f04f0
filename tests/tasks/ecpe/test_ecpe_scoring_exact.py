"""Exact counts and figures of the ECPE scoring steps on small hand-worked conversations (mutation testing, issue 29):
each assertion pins a number a one-token change in `official.py`, `scoring.py` or `spans.py` would move.

Pairs: subtask 1 `(emotion utt, cause utt, start, end, emotion)`, subtask 2 `(emotion utt, cause utt, emotion)`;
emotion indices: 0 neutral, 1 anger, 2 disgust, 3 fear, 4 joy, 5 sadness, 6 surprise. E = the official +1e-8.
"""

from __future__ import annotations

from emocaustics.tasks.ecpe import official as O
from emocaustics.tasks.ecpe.scoring import ConversationCounts, count_columns, figures_from_sums
from emocaustics.tasks.ecpe.spans import gold_indices, locate_span
from emocaustics.tasks.ecpe.validate import deduplicated

E = 1e-8


def f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r + E)


# -- subtask 2 ------------------------------------------------------------------------------------------------------
GOLD2 = [(2, 1, 5), (2, 2, 5), (3, 1, 5), (3, 2, 5), (3, 3, 4), (1, 1, 1), (1, 2, 1)]
PRED2 = [(2, 1, 5), (2, 2, 5), (3, 2, 4), (3, 1, 4), (3, 3, 4), (1, 1, 0), (1, 1, 1)]
# correct: sad (2,1) and (2,2) -> M[5][5] = 2; joy (3,3) -> M[4][4] = 1; anger (1,1) -> M[1][1] = 1
# wrong: joy (3,2) and (3,1) -> M[0][4] = 2; neutral (1,1) -> M[0][0] = 1
# missed: sad (3,1) and (3,2) -> M[5][0] = 2; anger (1,2) -> M[1][0] = 1
MATRIX2 = [[1, 0, 0, 0, 2, 0, 0],
           [1, 1, 0, 0, 0, 0, 0],
           [0, 0, 0, 0, 0, 0, 0],
           [0, 0, 0, 0, 0, 0, 0],
           [0, 0, 0, 0, 1, 0, 0],
           [2, 0, 0, 0, 0, 2, 0],
           [0, 0, 0, 0, 0, 0, 0]]


def test_pair_counts_matrix_and_outcomes():
    m, outcomes = O.pair_counts(GOLD2, PRED2)
    assert m == MATRIX2
    assert outcomes == [((2, 1, 5), "correct"), ((2, 2, 5), "correct"), ((3, 2, 4), "wrong"), ((3, 1, 4), "wrong"),
                        ((3, 3, 4), "correct"), ((1, 1, 0), "wrong"), ((1, 1, 1), "correct"),
                        ((3, 1, 5), "missed"), ((3, 2, 5), "missed"), ((1, 2, 1), "missed")]


def test_subtask2_table_and_scores():
    # gold pairs = row sums 1-6: anger 2, joy 1, sadness 4 (7 in all); predicted = column sums: anger 1, joy 3, sad 2
    table = O.subtask_figures(2, MATRIX2, O.zeros(7, 4))[1]
    assert table.columns == ["emotion", "gold_pairs", "predicted_pairs", "correct", "weight", "precision", "recall",
                             "f1"]
    pa, pj, ps = 1 / (1 + E), 1 / (3 + E), 2 / (2 + E)
    ra, rj, rs = 1 / (2 + E), 1 / (1 + E), 2 / (4 + E)
    zero = 0 / (0 + E)
    assert table.to_dict(as_series=False) == {
        "emotion": ["anger", "disgust", "fear", "joy", "sadness", "surprise"],
        "gold_pairs": [2, 0, 0, 1, 4, 0], "predicted_pairs": [1, 0, 0, 3, 2, 0], "correct": [1, 0, 0, 1, 2, 0],
        "weight": [2 / 7, 0.0, 0.0, 1 / 7, 4 / 7, 0.0],
        "precision": [pa, zero, zero, pj, ps, zero], "recall": [ra, zero, zero, rj, rs, zero],
        "f1": [f1(pa, ra), 0.0, 0.0, f1(pj, rj), f1(ps, rs), 0.0]}
    # micro: 4 correct of 6 predicted (classes 1-6) and 7 gold
    mp, mr = 4 / (6 + E), 4 / (7 + E)
    scores = O.subtask_figures(2, MATRIX2, O.zeros(7, 4))[0]
    assert list(scores) == list(O.SUBTASK2_KEYS)
    assert scores["precision_pair"] == mp and scores["recall_pair"] == mr and scores["f1_pair"] == f1(mp, mr)
    assert scores["weighted_precision"] == pa * (2 / 7) + 0.0 + 0.0 + pj * (1 / 7) + ps * (4 / 7) + 0.0
    assert scores["weighted_recall"] == ra * (2 / 7) + 0.0 + 0.0 + rj * (1 / 7) + rs * (4 / 7) + 0.0


def test_subtask2_conversation_counts_columns_and_sums():
    c = ConversationCounts(MATRIX2)
    # tp = 1 + 1 + 2 (M[0][0] is not a class) = 4; predicted 6 -> fp 2; gold 7 -> fn 3
    assert c.metric_values(2) == {"s2_f1": f1(4 / (6 + E), 4 / (7 + E)), "s2_tp": 4.0, "s2_fp": 2.0, "s2_fn": 3.0}
    counts = c.emotion_counts(2)
    assert list(counts) == count_columns(2)
    assert counts == {
        "ecpe_s2_anger_correct": 1, "ecpe_s2_anger_predicted": 1, "ecpe_s2_anger_gold": 2,
        "ecpe_s2_disgust_correct": 0, "ecpe_s2_disgust_predicted": 0, "ecpe_s2_disgust_gold": 0,
        "ecpe_s2_fear_correct": 0, "ecpe_s2_fear_predicted": 0, "ecpe_s2_fear_gold": 0,
        "ecpe_s2_joy_correct": 1, "ecpe_s2_joy_predicted": 3, "ecpe_s2_joy_gold": 1,
        "ecpe_s2_sadness_correct": 2, "ecpe_s2_sadness_predicted": 2, "ecpe_s2_sadness_gold": 4,
        "ecpe_s2_surprise_correct": 0, "ecpe_s2_surprise_predicted": 0, "ecpe_s2_surprise_gold": 0}
    scores, table = figures_from_sums(counts, 2)
    figures, whole = O.subtask_figures(2, MATRIX2, O.zeros(7, 4))
    assert {k: repr(v) for k, v in scores.items()} == {k: repr(v) for k, v in figures.items()}
    assert table.equals(whole)
    # twice the counts (two such conversations): micro P = 8 / (12 + E)
    doubled, _ = figures_from_sums({k: 2 * v for k, v in counts.items()}, 2)
    assert doubled["precision_pair"] == 8 / (12 + E) and doubled["recall_pair"] == 8 / (14 + E)


def test_is_empty_only_without_any_pair_of_classes_1_to_6():
    m = O.zeros(7, 7)
    assert ConversationCounts(m).is_empty()
    m[0][0] = 3  # neutral predictions only: still no figure
    assert ConversationCounts(m).is_empty()
    for i, j in ((0, 1), (1, 0), (6, 6), (0, 6), (6, 0)):
        cell = O.zeros(7, 7)
        cell[i][j] = 1
        assert not ConversationCounts(cell).is_empty(), (i, j)


# -- subtask 1 ------------------------------------------------------------------------------------------------------
GOLD1 = [(2, 1, 0, 4, 5), (3, 3, 1, 6, 4), (3, 1, 0, 2, 4), (3, 2, 0, 1, 4), (1, 1, 0, 3, 1), (1, 2, 0, 1, 1)]
PRED1 = [(2, 1, 0, 4, 5),  # correct; overlaps gold [0,4) by 4
         (3, 3, 2, 6, 4),  # wrong (gold is [1,6)); overlap 4 of gold length 5
         (3, 1, 0, 2, 4),  # correct; overlap 2 of 2
         (1, 1, 1, 3, 1),  # wrong (gold [0,3)); overlap 2 of 3
         (2, 2, 0, 2, 5),  # wrong: no gold in group (2, 2); 2 predicted tokens
         (1, 1, 0, 6, 0),  # neutral: M[0][0], its 6 tokens in the neutral row only
         (2, 1, 1, 4, 5),  # wrong: gold [0,4) of (2, 1) used up by the first; overlap 3 of 4 again
         (3, 2, 0, 1, 4)]  # correct; overlap 1 of 1
# strict: M[5][5] = 1, M[4][4] = 2, M[0][4] = 1, M[0][1] = 1, M[0][5] = 2, M[0][0] = 1; missed: joy (3,3) M[4][0] = 1,
# anger (1,1) and (1,2) M[1][0] = 2
MATRIX1 = [[1, 1, 0, 0, 1, 2, 0],
           [2, 0, 0, 0, 0, 0, 0],
           [0, 0, 0, 0, 0, 0, 0],
           [0, 0, 0, 0, 0, 0, 0],
           [1, 0, 0, 0, 2, 0, 0],
           [0, 0, 0, 0, 0, 1, 0],
           [0, 0, 0, 0, 0, 0, 0]]
# proportional rows (overlap, gold length, predicted length, gold spans):
#  neutral: predicted 6
#  anger:   overlap 2; gold 3 (matched) + 1 (unmatched (1,2) [0,1)) = 4; predicted 2; 2 spans
#  joy:     overlap 4 + 2 + 1 = 7; gold 5 + 2 + 1 = 8; predicted 4 + 2 + 1 = 7; 3 spans
#  sadness: overlap 4 + 3 = 7; gold 4 + 4 = 8 (each match adds it); predicted 4 + 2 + 3 = 9; 1 span
TABLE1 = [[0, 0, 6, 0], [2, 4, 2, 2], [0, 0, 0, 0], [0, 0, 0, 0], [7, 8, 7, 3], [7, 8, 9, 1], [0, 0, 0, 0]]


def test_strict_counts_matrix_and_outcomes():
    m, outcomes = O.strict_counts(GOLD1, PRED1)
    assert m == MATRIX1
    assert outcomes == [(p, o) for p, o in zip(PRED1, ["correct", "wrong", "correct", "wrong", "wrong", "wrong",
                                                         "wrong", "correct"])] + \
        [((3, 3, 1, 6, 4), "missed"), ((1, 1, 0, 3, 1), "missed"), ((1, 2, 0, 1, 1), "missed")]


def test_proportional_counts_table():
    assert O.proportional_counts(GOLD1, PRED1) == TABLE1
    # adjacent spans share no token: prediction [3,5) next to gold [0,3) overlaps nothing
    assert O.proportional_counts([(1, 1, 0, 3, 1)], [(1, 1, 3, 5, 1)])[1] == [0, 3, 2, 1]
    assert O.proportional_counts([(1, 1, 3, 5, 1)], [(1, 1, 0, 3, 1)])[1] == [0, 2, 3, 1]


def test_subtask1_conversation_counts_columns_and_figures():
    c = ConversationCounts(MATRIX1, TABLE1)
    # strict: tp = 2 + 1 = 3; predicted = 1 + 3 + 3 = 7 -> fp 4; gold = 2 + 3 + 1 = 6 -> fn 3
    # proportional (rows 1-6): overlap 2 + 7 + 7 = 16, predicted 2 + 7 + 9 = 18, gold 4 + 8 + 8 = 20
    assert c.metric_values(1) == {
        "s1_strict_f1": f1(3 / (7 + E), 3 / (6 + E)), "s1_strict_tp": 3.0, "s1_strict_fp": 4.0, "s1_strict_fn": 3.0,
        "s1_prop_f1": f1(16 / (18 + E), 16 / (20 + E)), "s1_prop_overlap": 16.0, "s1_prop_pred_tokens": 18.0,
        "s1_prop_gold_tokens": 20.0}
    counts = c.emotion_counts(1)
    assert list(counts) == count_columns(1)
    zero = {"correct": 0, "predicted": 0, "gold": 0, "overlap": 0, "pred_tokens": 0, "gold_tokens": 0,
            "gold_spans": 0}
    per = {"anger": {"correct": 0, "predicted": 1, "gold": 2, "overlap": 2, "pred_tokens": 2, "gold_tokens": 4,
                     "gold_spans": 2},
           "disgust": zero, "fear": zero,
           "joy": {"correct": 2, "predicted": 3, "gold": 3, "overlap": 7, "pred_tokens": 7, "gold_tokens": 8,
                   "gold_spans": 3},
           "sadness": {"correct": 1, "predicted": 3, "gold": 1, "overlap": 7, "pred_tokens": 9, "gold_tokens": 8,
                       "gold_spans": 1},
           "surprise": zero}
    assert counts == {f"ecpe_s1_{e}_{k}": v for e, d in per.items() for k, v in d.items()}
    # without a proportional table only the matrix counts are there
    assert ConversationCounts(MATRIX1).emotion_counts(1) == {
        f"ecpe_s1_{e}_{k}": d[k] for e, d in per.items() for k in ("correct", "predicted", "gold")}
    scores, table = figures_from_sums(counts, 1)
    official = O.subtask_figures(1, MATRIX1, TABLE1)[0]
    assert {k: repr(v) for k, v in scores.items()} == {k: repr(v) for k, v in official.items()}
    assert table.equals(O.subtask_figures(1, MATRIX1, TABLE1)[1])
    # strict weights 2/6, 3/6, 1/6 (anger, joy, sadness); P: anger 0 / (1 + E), joy 2 / (3 + E), sadness 1 / (3 + E)
    assert official["strict_precision"] == 3 / (7 + E) and official["strict_recall"] == 3 / (6 + E)
    assert official["weighted_strict_precision"] == 0.0 + 0.0 + 0.0 + 2 / (3 + E) * (3 / 6) + 1 / (3 + E) * (1 / 6)
    assert official["weighted_strict_recall"] == 0.0 + 0.0 + 0.0 + 2 / (3 + E) * (3 / 6) + 1 / (1 + E) * (1 / 6)
    # proportional weights = gold spans 2/6, 3/6, 1/6; P: anger 2/(2+E), joy 7/(7+E), sadness 7/(9+E)
    assert official["Proportional_precision"] == 16 / (18 + E) and official["Proportional_recall"] == 16 / (20 + E)
    assert official["weighted_Proportional_precision"] == \
        2 / (2 + E) * (2 / 6) + 0.0 + 0.0 + 7 / (7 + E) * (3 / 6) + 7 / (9 + E) * (1 / 6) + 0.0
    assert official["weighted_Proportional_recall"] == \
        2 / (4 + E) * (2 / 6) + 0.0 + 0.0 + 7 / (8 + E) * (3 / 6) + 7 / (8 + E) * (1 / 6) + 0.0


def test_subtask1_table_rows():
    table = O.subtask_figures(1, MATRIX1, TABLE1)[1]
    assert table.columns == [
        "emotion", "gold_pairs", "predicted_pairs", "correct", "strict_weight", "strict_precision", "strict_recall",
        "strict_f1", "gold_spans", "overlap_tokens", "predicted_tokens", "gold_tokens", "proportional_weight",
        "proportional_precision", "proportional_recall", "proportional_f1"]
    joy = table.row(3, named=True)
    pj, rj = 2 / (3 + E), 2 / (3 + E)
    qj, sj = 7 / (7 + E), 7 / (8 + E)
    assert joy == {"emotion": "joy", "gold_pairs": 3, "predicted_pairs": 3, "correct": 2, "strict_weight": 0.5,
                   "strict_precision": pj, "strict_recall": rj, "strict_f1": f1(pj, rj), "gold_spans": 3,
                   "overlap_tokens": 7, "predicted_tokens": 7, "gold_tokens": 8, "proportional_weight": 0.5,
                   "proportional_precision": qj, "proportional_recall": sj, "proportional_f1": f1(qj, sj)}
    assert table["gold_pairs"].to_list() == [2, 0, 0, 3, 1, 0]
    assert table["predicted_pairs"].to_list() == [1, 0, 0, 3, 3, 0]
    assert table["gold_spans"].to_list() == [2, 0, 0, 3, 1, 0]


def test_dedup():
    problems: list = []
    assert deduplicated([(3,), (1,), (3,), (2,), (1,), (3,)], "f", 7, problems) == [(3,), (1,), (2,)]
    assert [(p.kind, p.conversation, p.message) for p in problems] == [
        ("duplicate_pair", 7, "3 exact duplicate pair(s) dropped, as officially")]
    assert deduplicated([(1,)], "f", 7, problems) == [(1,)] and len(problems) == 1  # no duplicate, no warning


# -- spans: a span made only of punctuation -------------------------------------------------------------------------
def test_a_punctuation_only_span_is_not_found():
    # cleaned to "": gold -> (0, 0, not found); a prediction -> the whole utterance (3 tokens), not found
    assert gold_indices("?!", "a b c") == (0, 0, False)
    assert locate_span("?!", "a b c") == (0, 3, False)
    assert locate_span(" b c. ", "a b c") == (1, 3, True)


# -- proportional matching: which gold span a prediction takes -----------------------------------------------------
# With one prediction the choice often leaves the totals unchanged (the unmatched span adds its length anyway), so
# each case adds a second prediction that can only reach one of the spans: the totals then tell which span the first
# one took. Rows are (overlap, gold length, predicted length, gold spans); all pairs in group (1, 1), emotion anger.
def _anger(gold_spans, pred_spans):
    return O.proportional_counts([(1, 1, s, e, 1) for s, e in gold_spans],
                                 [(1, 1, s, e, 1) for s, e in pred_spans])[1]


def test_the_best_ratio_wins_not_the_largest_product():
    # gold A [0,4), B [2,4); prediction [2,4): A 2/4, B 2/2 -> B (overlap 2, gold 2); [0,1) reaches A only (1 of 4)
    # overlap 2 + 1 = 3, gold 2 + 4 = 6, predicted 2 + 1 = 3 (had [2,4) taken A: gold 4 + 4 + B unmatched 2 = 10)
    assert _anger([(0, 4), (2, 4)], [(2, 4), (0, 1)]) == [3, 6, 3, 2]


def test_equal_ratio_and_overlap_the_first_gold_wins():
    # gold A [0,2), B [3,5); prediction [1,4) overlaps each by 1 (1/2) -> A; [4,5) reaches B only (1 of 2)
    # overlap 1 + 1, gold 2 + 2, no span unmatched (had [1,4) taken B: A unmatched adds 2 -> gold 6)
    assert _anger([(0, 2), (3, 5)], [(1, 4), (4, 5)]) == [2, 4, 4, 2]


def test_a_lower_ratio_with_more_overlap_does_not_win():
    # gold A [0,2), B [2,8); prediction [0,6): A 2/2 = 1 (overlap 2), B 4/6 (overlap 4) -> A
    # overlap 2, gold 2 + B unmatched 6 = 8, predicted 6 (had B won: overlap 4)
    assert _anger([(0, 2), (2, 8)], [(0, 6)]) == [2, 8, 6, 2]


def test_spans_before_the_match_are_skipped_not_the_end_of_the_search():
    # gold: joy [0,5) (another emotion), anger [0,1) (no overlap with [3,5)), anger [3,6): prediction [3,5) -> the third
    t = O.proportional_counts([(1, 1, 0, 5, 4), (1, 1, 0, 1, 1), (1, 1, 3, 6, 1)], [(1, 1, 3, 5, 1)])
    # anger: overlap 2, gold 3 (matched) + 1 (unmatched [0,1)) = 4, predicted 2, 2 spans; joy: unmatched 5, 1 span
    assert t[1] == [2, 4, 2, 2] and t[4] == [0, 5, 0, 1]


def test_no_gold_pair_gives_nan_weights_without_a_numpy_warning():
    import math
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 0 / 0 weights are meant: no "invalid value" warning may leak
        s = O.matrix_figures(O.zeros(7, 7))
        p = O.proportional_figures(O.zeros(7, 4))
    assert all(math.isnan(w) for w in s.weight + p.weight)
    assert math.isnan(s.weighted[0]) and math.isnan(p.weighted[2]) and s.micro == (0.0, 0.0, 0.0)


# -- score_records names the files in what it reports ---------------------------------------------------------------
def test_problems_and_errors_name_the_gold_and_prediction_files(build):
    import pytest

    from emocaustics.tasks.ecpe.scoring import score_records
    from emocaustics.tasks.ecpe.validate import SubmissionError
    gold = [build.gold(1, build.texts, build.emotions, [["2_sadness", "1_I lost my job"]])]
    pred = [build.pred(1, [["9_sadness", "1_0_4"]])]
    tail = ', conversation 1, pair 1 ["9_sadness", "1_0_4"]: warning utterance_out_of_range: emotion utterance 9 is ' \
           'not in 1..3'
    assert [str(p) for p in score_records(1, gold, pred).problems] == ["prediction" + tail]
    assert [str(p) for p in score_records(1, gold, pred, pred_file="p.json").problems] == ["p.json" + tail]
    bad = [{"conversation_ID": 1}]
    why = (", record conversation 1, field 'conversation': malformed_conversation: the gold conversation has no list "
           "of utterances with text")
    for kwargs, name in (({}, "gold"), ({"gold_file": "g.json"}, "g.json")):
        with pytest.raises(SubmissionError) as err:
            score_records(2, bad, [], **kwargs)
        assert str(err.value) == name + why
