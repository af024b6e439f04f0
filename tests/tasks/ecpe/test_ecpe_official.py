"""The official metrics, pinned on hand-built conversations whose figures are worked out in each test.

Notation: P/R/F of a class are diag / (column sum + 1e-8), diag / (row sum + 1e-8), 2PR / (P + R + 1e-8);
class order anger, disgust, fear, joy, sadness, surprise (indices 1-6), neutral (0) is the null class.
"""

from __future__ import annotations

import math

import pytest

from emocaustics.tasks.ecpe import official as O
from emocaustics.tasks.ecpe.scoring import score_records
from emocaustics.tasks.ecpe.spans import clean_span, find_tokens, gold_indices, locate_span

E = 1e-8


def f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r + E)


# The conversation of conftest.TEXTS: gold "2_sadness" caused by "I lost my job" in utterance 1 -> tokens [0, 4).
SAD = ["2_sadness", "1_I lost my job"]


def s1(build, gold_pairs, pred_pairs, texts=None, emotions=None):
    gold = [build.gold(1, texts or build.texts, emotions or build.emotions, gold_pairs)]
    return score_records(1, gold, [build.pred(1, pred_pairs)])


# -- the token rule -----------------------------------------------------------------------------------------------
def test_clean_span_strips_whitespace_and_ascii_punctuation_repeatedly():
    assert clean_span(" it is Paul . ") == "it is Paul"  # strip, then "." goes, then the space
    assert clean_span('" Dear Diary "') == "Dear Diary"
    assert clean_span("!a") == "a" and clean_span("a!") == "a"
    assert clean_span("...hi?!") == "hi"  # one character per end per round, until neither end is punctuation
    assert clean_span("'cause") == "cause"  # an apostrophe is ASCII punctuation too
    assert clean_span("!!") == ""  # the official scorer crashes on this one
    assert clean_span("¿qué?") == "¿qué"  # only ASCII punctuation is stripped


def test_gold_span_takes_the_first_whitespace_token_occurrence():
    # "Paul" occurs at tokens 0 and 6; the first wins
    assert gold_indices("Paul", "Paul , the wine guy , Paul ?") == (0, 1, True)
    assert gold_indices("2_x"[2:], "x y") == (0, 1, True)
    # tokens, not characters: "Paul," is not the token "Paul"
    assert find_tokens("Paul,", "Paul , the") is None


def test_span_not_found_is_0_0_for_gold_and_whole_utterance_for_predictions():
    # conversation 1821 of the test set: the span is cut ("hono") so its tokens do not occur
    utt = "Okay . Since you have never done it before , you can be Monica maid of honor ."
    assert gold_indices("you can be Monica maid of hono", utt) == (0, 0, False)
    assert locate_span("you can be Monica maid of hono", utt) == (0, 18, False)  # Okay(0) ... honor(16) .(17)
    assert locate_span("Monica maid of honor .", utt) == (13, 17, True)


# -- strict and proportional ----------------------------------------------------------------------------------------
def test_perfect_submission_scores_0_99999999_not_1(build):
    # gold: 2_sadness <- 1[0,4); 3_joy <- 3 "I got a new one !" cleaned -> "I got a new one" = [1,6)
    r = s1(build, [SAD, ["3_joy", "3_I got a new one !"]], [["2_sadness", "1_0_4"], ["3_joy", "3_1_6"]])
    one = 1 / (1 + E)  # each class: 1 correct of 1 predicted, 1 gold
    # weights 1/2, 1/2 (joy before sadness in class order); micro: 2 / (2 + 1e-8)
    w = 0.0 + 0.0 + 0.0 + one * 0.5 + one * 0.5 + 0.0
    w_f1 = 0.0 + 0.0 + 0.0 + f1(one, one) * 0.5 + f1(one, one) * 0.5 + 0.0
    micro = 2 / (2 + E)
    # proportional: joy overlap 5 of 5 predicted / 5 gold tokens, sadness 4 of 4 / 4
    pj, ps = 5 / (5 + E), 4 / (4 + E)
    pm = 9 / (9 + E)
    assert r.scores == {
        "weighted_strict_precision": w, "weighted_strict_recall": w, "weighted_strict_f1": w_f1,
        "weighted_Proportional_precision": pj * 0.5 + ps * 0.5, "weighted_Proportional_recall": pj * 0.5 + ps * 0.5,
        "weighted_Proportional_f1": f1(pj, pj) * 0.5 + f1(ps, ps) * 0.5,
        "strict_precision": micro, "strict_recall": micro, "strict_f1": f1(micro, micro),
        "Proportional_precision": pm, "Proportional_recall": pm, "Proportional_f1": f1(pm, pm),
    }
    assert all(0.9999999 < v < 1 for v in r.scores.values())
    # with one pair per class F = 2PR/(P+R+1e-8) ~ 1 - 1.5e-8 = 0.999999985; on the real set (hundreds of pairs per
    # class) every figure starts 0.99999999 (test_ecpe_published)
    assert f1(one, one) == pytest.approx(1 - 1.5e-8, abs=1e-15)


def test_partial_overlap(build):
    # predicted 1[2,5) "my job today" vs gold 1[0,4) "I lost my job": overlap [2,4) = 2 tokens
    r = s1(build, [SAD], [["2_sadness", "1_2_5"]])
    # strict: wrong -> M[0][sad] = 1, the gold missed -> M[sad][0] = 1: all 0
    assert r.scores["weighted_strict_f1"] == 0.0 and r.scores["strict_precision"] == 0.0
    # proportional: overlap 2, predicted length 3, gold length 4; one class, weight 1
    p, rec = 2 / (3 + E), 2 / (4 + E)
    assert r.scores["Proportional_precision"] == p and r.scores["Proportional_recall"] == rec
    assert r.scores["weighted_Proportional_precision"] == p  # 0*0 + ... + p*1.0 + 0*0
    assert r.scores["weighted_Proportional_f1"] == f1(p, rec)
    assert r.scores["Proportional_f1"] == pytest.approx(2 * (2 / 3) * (2 / 4) / (2 / 3 + 2 / 4))


def test_exact_duplicates_are_dropped_before_scoring(build):
    # the same correct pair twice: counted once -> P = 1 / (1 + 1e-8), not 1/2
    r = s1(build, [SAD, SAD], [["2_sadness", "1_0_4"], ["2_sadness", "1_0_4"]])
    assert r.scores["strict_precision"] == 1 / (1 + E) and r.scores["strict_recall"] == 1 / (1 + E)
    assert any(p.kind == "duplicate_pair" for p in r.problems)  # reported, for gold and prediction alike
    assert sum(p.kind == "duplicate_pair" for p in r.problems) == 2


def test_neutral_prediction_costs_nothing(build):
    # a neutral pair lands in M[0][0]: no column 1-6 grows, so precision is untouched
    r = s1(build, [SAD], [["2_sadness", "1_0_4"], ["1_neutral", "1_0_6"]])
    assert r.scores["strict_precision"] == 1 / (1 + E)
    assert r.scores["Proportional_precision"] == 4 / (4 + E)  # its 6 tokens go to the neutral row only
    assert any(p.kind == "neutral_pair" for p in r.problems)


def test_weighted_precision_ignores_false_positives_of_classes_without_gold(build):
    # gold: sadness only. prediction: the right sadness pair + a wrong anger pair.
    r = s1(build, [SAD], [["2_sadness", "1_0_4"], ["3_anger", "3_0_7"]])
    # anger has weight 0 (no gold anger), so w-avg P = P_sad * 1 = 1/(1+1e-8); micro P sees both: 1/(2+1e-8)
    assert r.scores["weighted_strict_precision"] == 1 / (1 + E)
    assert r.scores["strict_precision"] == 1 / (2 + E)
    assert any(p.kind == "emotion_contradicts_label" for p in r.problems)  # utterance 3 is labelled joy


def test_wrong_emotion_on_the_right_span(build):
    # same utterances and span, emotion anger instead of sadness: no strict match, no proportional overlap
    r = s1(build, [SAD], [["2_anger", "1_0_4"]])
    assert r.scores["strict_precision"] == 0.0 and r.scores["strict_recall"] == 0.0
    assert r.scores["Proportional_precision"] == 0.0  # overlap 0 / (4 + 1e-8)
    row = {d["emotion"]: d for d in r.table.to_dicts()}
    assert row["anger"]["predicted_pairs"] == 1 and row["anger"]["predicted_tokens"] == 4
    assert row["sadness"]["gold_pairs"] == 1 and row["sadness"]["gold_tokens"] == 4 and row["sadness"]["correct"] == 0


def test_two_predictions_on_one_gold_span_each_add_its_length(build):
    # gold 1[0,4); predictions 1[0,2) (overlap 2) and 1[1,4) (overlap 3), same group and emotion
    r = s1(build, [SAD], [["2_sadness", "1_0_2"], ["2_sadness", "1_1_4"]])
    # overlap 2+3 = 5, predicted 2+3 = 5, gold length 4 per matching prediction = 8 (not added again as unmatched)
    assert r.scores["Proportional_precision"] == 5 / (5 + E)
    assert r.scores["Proportional_recall"] == 5 / (8 + E)
    # strict: both wrong (M[0][sad] = 2), gold missed (M[sad][0] = 1)
    assert r.scores["strict_precision"] == 0.0
    t = r.table.filter(r.table["emotion"] == "sadness").to_dicts()[0]
    assert (t["overlap_tokens"], t["predicted_tokens"], t["gold_tokens"], t["gold_spans"]) == (5, 5, 8, 1)


def test_proportional_match_maximises_overlap_over_gold_length_then_overlap_then_first(build):
    texts = ["a b c d e f g h", "x", "y"]
    emos = ["neutral", "neutral", "joy"]
    # ratio: gold A [0,4) and B [2,4); prediction [2,4) overlaps both by 2: 2/4 < 2/2 -> B
    r = s1(build, [["3_joy", "1_a b c d"], ["3_joy", "1_c d"]], [["3_joy", "1_2_4"]], texts, emos)
    # B matched (overlap 2, gold 2), A unmatched adds 4: R = 2 / (2 + 4)
    assert r.scores["Proportional_recall"] == 2 / (6 + E)
    # equal ratio, larger overlap: A [0,2) and B [2,6); prediction [0,6): 2/2 = 4/4 = 1 -> B (overlap 4)
    r = s1(build, [["3_joy", "1_a b"], ["3_joy", "1_c d e f"]], [["3_joy", "1_0_6"]], texts, emos)
    assert r.scores["Proportional_precision"] == 4 / (6 + E)  # if A had won: 2 / 6
    assert r.scores["Proportional_recall"] == 4 / (4 + 2 + E)
    # equal ratio and overlap: A [0,2) and B [3,5); prediction [1,4) overlaps each by 1 (1/2) -> the first, A
    r = s1(build, [["3_joy", "1_a b"], ["3_joy", "1_d e"]], [["3_joy", "1_1_4"]], texts, emos)
    assert r.conversations[1].proportional[4] == [1, 2 + 2, 3, 2]  # overlap 1, gold A 2 + unmatched B 2, pred 3


def test_gold_span_not_found_is_0_0_and_the_oracle_still_matches_it(build):
    # gold span "lost my jobs" is not in utterance 1 -> [0, 0] (a reported defect); the oracle predicts 1_0_0
    r = s1(build, [SAD, ["2_sadness", "1_lost my jobs"]], [["2_sadness", "1_0_4"], ["2_sadness", "1_0_0"]])
    assert [p.kind for p in r.problems if p.kind == "span_not_found"] == ["span_not_found"]
    assert r.scores["strict_precision"] == 2 / (2 + E) and r.scores["strict_recall"] == 2 / (2 + E)
    # proportional: the [0,0] pair adds 0 predicted tokens and 0 gold tokens but 1 gold span (weight)
    assert r.scores["Proportional_precision"] == 4 / (4 + E) and r.scores["Proportional_recall"] == 4 / (4 + E)
    assert r.conversations[1].proportional[5][O.GOLD_SPANS] == 2


def test_empty_gold_set_gives_nan_weighted_and_zero_micro(build):
    # no gold pair at all: weights are 0/0 = nan -> every w-avg figure nan; micro P = 0/(1+1e-8) = 0, R = 0/1e-8 = 0
    r = s1(build, [], [["3_joy", "3_1_6"]])
    for key in O.SUBTASK1_KEYS:
        if key.startswith("weighted"):
            assert math.isnan(r.scores[key]), key
        else:
            assert r.scores[key] == 0.0, key
    assert O.scores_txt({"weighted_strict_f1": r.scores["weighted_strict_f1"]}) == "weighted_strict_f1:nan\n"


def test_pair_of_another_group_is_wrong_and_its_gold_missed(build):
    # right span tokens and emotion, but cause utterance 2 instead of 1: a different (emotion utt, cause utt) group
    r = s1(build, [SAD], [["2_sadness", "2_0_4"]])
    assert r.conversations[1].matrix[0][5] == 1 and r.conversations[1].matrix[5][0] == 1
    assert r.scores["Proportional_precision"] == 0.0


# -- subtask 2 ----------------------------------------------------------------------------------------------------
def test_subtask2_pairs_and_weights(build):
    gold = [build.gold(7, build.texts, build.emotions, [["2_sadness", "1"], ["2_sadness", "2"], ["3_joy", "3"]])]
    pred = [build.pred(7, [["2_sadness", "1"], ["2_sadness", "1"], ["3_joy", "2"], ["3_joy", "3"], ["1_neutral", "1"]])]
    r = score_records(2, gold, pred)
    # dedup -> sad(2,1) correct; joy(3,2) wrong; joy(3,3) correct; neutral wrong (M[0][0]); sad(2,2) missed
    pj, rj = 1 / (2 + E), 1 / (1 + E)
    ps, rs = 1 / (1 + E), 1 / (2 + E)
    wj, ws = 1 / 3, 2 / 3
    assert r.scores["weighted_precision"] == 0.0 + 0.0 + 0.0 + pj * wj + ps * ws + 0.0
    assert r.scores["weighted_recall"] == 0.0 + 0.0 + 0.0 + rj * wj + rs * ws + 0.0
    assert r.scores["weighted_f1"] == 0.0 + 0.0 + 0.0 + f1(pj, rj) * wj + f1(ps, rs) * ws + 0.0
    # micro: 2 correct; predicted in classes 1-6: 3; gold: 3
    assert r.scores["precision_pair"] == 2 / (3 + E) and r.scores["recall_pair"] == 2 / (3 + E)
    assert r.scores["f1_pair"] == f1(2 / (3 + E), 2 / (3 + E))
    assert list(r.scores) == ["precision_pair", "recall_pair", "f1_pair",
                              "weighted_precision", "weighted_recall", "weighted_f1"]


# -- output ---------------------------------------------------------------------------------------------------------
def test_keys_and_order_are_the_official_scores_txt():
    assert O.SUBTASK1_KEYS == (
        "weighted_strict_precision", "weighted_strict_recall", "weighted_strict_f1",
        "weighted_Proportional_precision", "weighted_Proportional_recall", "weighted_Proportional_f1",
        "strict_precision", "strict_recall", "strict_f1",
        "Proportional_precision", "Proportional_recall", "Proportional_f1")


def test_scores_txt_prints_the_shortest_repr_of_each_float():
    assert O.scores_txt({"strict_f1": 1 / (1 + E), "f1_pair": 0.0}) == "strict_f1:0.9999999900000002\nf1_pair:0.0\n"


def test_corpus_figures_are_the_sum_of_per_conversation_counts(build):
    gold = [build.gold(1, build.texts, build.emotions, [SAD]),
            build.gold(2, build.texts, build.emotions, [["3_joy", "3_I got a new one"]])]
    pred = [build.pred(1, [["2_sadness", "1_0_4"], ["3_joy", "1_0_1"]]), build.pred(2, [])]
    r = score_records(1, gold, pred)
    rows = {cid: c.metric_values(1) for cid, c in r.conversations.items()}
    assert rows[1] == {**rows[1], "s1_strict_tp": 1.0, "s1_strict_fp": 1.0, "s1_strict_fn": 0.0}
    assert rows[2]["s1_strict_fn"] == 1.0 and rows[2]["s1_strict_f1"] == 0.0
    tp = sum(v["s1_strict_tp"] for v in rows.values())
    pred_n = tp + sum(v["s1_strict_fp"] for v in rows.values())
    gold_n = tp + sum(v["s1_strict_fn"] for v in rows.values())
    assert r.scores["strict_precision"] == tp / (pred_n + E) and r.scores["strict_recall"] == tp / (gold_n + E)
    overlap = sum(v["s1_prop_overlap"] for v in rows.values())
    assert r.scores["Proportional_precision"] == overlap / (sum(v["s1_prop_pred_tokens"] for v in rows.values()) + E)
