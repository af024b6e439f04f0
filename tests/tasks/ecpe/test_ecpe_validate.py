"""Bad submissions: each gives its named error (file, conversation, pair), where the official scorer exits with one
terse line or crashes; problems it scores silently are warnings."""

from __future__ import annotations

import json

import pytest

from emocaustics.core.errors import DataError, UsageError
from emocaustics.tasks.ecpe.scoring import score_records
from emocaustics.tasks.ecpe.gold import read_gold
from emocaustics.tasks.ecpe.validate import SubmissionError, check_prediction

OK1 = ["2_sadness", "1_0_4"]
SAD = ["2_sadness", "1_I lost my job"]


def _gold(build, subtask=1):
    pairs = [SAD] if subtask == 1 else [["2_sadness", "1"]]
    return [build.gold(1375, build.texts, build.emotions, pairs), build.gold(1376, build.texts, build.emotions, pairs)]


def _error(build, preds, subtask=1) -> SubmissionError:
    with pytest.raises(SubmissionError) as info:
        score_records(subtask, _gold(build, subtask), preds, gold_file="Subtask_1_gold.json",
                      pred_file="Subtask_1_pred.json")
    assert isinstance(info.value, DataError) and isinstance(info.value, UsageError)  # the CLI prints it as one line
    return info.value


def _one_bad_pair(build, pair, subtask=1):
    good = OK1 if subtask == 1 else ["2_sadness", "1"]
    return _error(build, [build.pred(1375, [good, pair]), build.pred(1376, [good])], subtask)


@pytest.mark.parametrize("pair, kind", [
    (["2_Joy", "1_0_4"], "unknown_emotion"),  # case matters
    (["2_happiness", "1_0_4"], "unknown_emotion"),
    (["2_sadness", "1_I lost my job"], "cause_text"),
    (["2_sadness", "U1_0_4"], "u_prefix"),
    (["U2_sadness", "1_0_4"], "u_prefix"),
    (["2_sadness"], "malformed_pair"),
    (["2_sadness", "1_0_4", "x"], "malformed_pair"),
    ("2_sadness 1_0_4", "malformed_pair"),
    (["2sadness", "1_0_4"], "malformed_pair"),
    (["2_sadness_x", "1_0_4"], "malformed_pair"),  # "2_sadness_x".split("_") has 3 parts
    (["2_sadness", "1_0"], "malformed_pair"),
    (["2_sadness", "1_0.5_4"], "malformed_pair"),
    (["2_sadness", 1], "malformed_pair"),
])
def test_bad_subtask1_pair_gives_its_named_error(build, pair, kind):
    err = _one_bad_pair(build, pair)
    assert err.kind == kind
    # the error names the file, the conversation and the pair (second pair of conversation 1375)
    msg = str(err)
    assert msg.startswith("Subtask_1_pred.json, record conversation 1375, field 'emotion-cause_pairs[2]': " + kind)
    assert json.dumps(pair) in msg


def test_unknown_emotion_says_categories_are_lower_case(build):
    err = _one_bad_pair(build, ["2_Joy", "1_0_4"])
    assert "did you mean 'joy'" in str(err)


@pytest.mark.parametrize("pair, kind", [
    (["2_sadness", "U1"], "u_prefix"),
    (["2_sadness", "I lost my job"], "cause_text"),
    (["2_sadness", "1_0_4"], "malformed_pair"),
    (["2_Sadness", "1"], "unknown_emotion"),
    ([["2_sadness", "1"]], "malformed_pair"),
])
def test_bad_subtask2_pair_gives_its_named_error(build, pair, kind):
    assert _one_bad_pair(build, pair, subtask=2).kind == kind


def test_subtask2_cause_may_be_an_integer(build):
    r = score_records(2, _gold(build, 2), [build.pred(1375, [["2_sadness", 1]]), build.pred(1376, [])])
    assert r.conversations[1375].matrix[5][5] == 1


def test_repeated_conversation_id(build):
    err = _error(build, [build.pred(1375, [OK1]), build.pred(1375, [OK1]), build.pred(1376, [])])
    assert err.kind == "repeated_conversation" and "record conversation 1375" in str(err)


def test_gold_conversation_missing_from_prediction(build):
    err = _error(build, [build.pred(1375, [OK1])])
    assert err.kind == "missing_conversation" and "conversation 1376" in str(err)


def test_missing_pairs_key_and_non_list_file(build):
    assert _error(build, [build.pred(1375, [OK1]), {"conversation_ID": 1376}]).kind == "missing_pairs"
    with pytest.raises(DataError, match="expected a JSON list of conversations"):
        score_records(1, _gold(build), {"conversation_ID": 1375})


def test_all_errors_are_collected(build):
    err = _error(build, [build.pred(1375, [["2_Joy", "1_0_4"], ["2_joy", "U1_0_4"]])])
    assert [p.kind for p in err.problems if p.severity == "error"] == ["unknown_emotion", "u_prefix",
                                                                       "missing_conversation"]
    assert "(and 2 more error(s))" in str(err)


def test_warnings_do_not_stop_scoring(build):
    preds = [build.pred(1375, [OK1,
                               ["2_sadness", "1_3_9"],  # utterance 1 has 6 tokens: [3, 9) is outside
                               ["2_sadness", "1_4_4"],  # start >= end
                               ["1_anger", "1_0_6"],  # utterance 1 is labelled neutral
                               ["9_joy", "1_0_1"]]),  # there is no utterance 9
             build.pred("1376", []),  # a string id: we match it, the official scorer would not
             build.pred(99, [["1_joy", "1_0_1"]]),  # not in the gold: ignored, as officially
             {"conversation_ID": 98}]  # ignored without being read, as officially (no missing_pairs error)
    r = score_records(1, _gold(build), preds)
    kinds = sorted({p.kind for p in r.problems})
    assert kinds == ["emotion_contradicts_label", "empty_span", "index_out_of_range", "string_conversation_id",
                     "unknown_conversation", "utterance_out_of_range"]
    assert all(p.severity == "warning" for p in r.problems)
    assert r.scores["strict_recall"] == 1 / (2 + 1e-8)  # 1375 found, 1376 not
    assert 99 not in r.conversations


def test_check_prediction_without_gold_checks_the_format_and_its_own_utterances(build):
    rec = build.gold(5, build.texts, build.emotions, [["2_sadness", "1_0_7"]])  # its own texts: 6 tokens in utt 1
    checked = check_prediction([rec], 1, "p.json")
    assert [p.kind for p in checked.problems] == ["index_out_of_range"] and not checked.errors


def test_gold_defects_are_warnings_and_malformed_gold_is_an_error(build):
    gold = read_gold([build.gold(1, build.texts, build.emotions, [SAD, ["2_sadness", "1_no such words"]])], 1, "g.json")
    assert [(p.kind, p.pair) for p in gold.problems] == [("span_not_found", 2)]
    assert gold.conversations[1].pairs == [(2, 1, 0, 4, 5), (2, 1, 0, 0, 5)]
    with pytest.raises(SubmissionError, match="g.json, record conversation 1, field 'emotion-cause_pairs\\[1\\]'"):
        read_gold([build.gold(1, build.texts, build.emotions, [["2_sadness", "7_x"]])], 1, "g.json")
