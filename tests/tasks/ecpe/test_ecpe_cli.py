"""`emocaustics score ecpe` and `emocaustics ecpe validate`, on a parser of their own (the lead wires them into the
main command line)."""

from __future__ import annotations

import argparse
import json

import pytest

from emocaustics.core.errors import DataError, UsageError
from emocaustics.tasks.ecpe import cli
from emocaustics.tasks.ecpe.official import SUBTASK1_KEYS, SUBTASK2_KEYS

TEXTS = ["I lost my job today .", "Oh no , that is terrible !", "But I got a new one !"]


def gold(pairs):
    return [{"conversation_ID": 1, "conversation": [
        {"utterance_ID": i, "text": t, "speaker": "A", "emotion": e}
        for i, (t, e) in enumerate(zip(TEXTS, ["neutral", "sadness", "joy"]), 1)], "emotion-cause_pairs": pairs}]


def pred(pairs):
    return [{"conversation_ID": 1, "emotion-cause_pairs": pairs}]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="emocaustics")
    sub = p.add_subparsers(dest="command", required=True)
    score = sub.add_parser("score")
    cli.register_score(score.add_subparsers(dest="score_task", required=True))
    cli.register(sub)
    return p


def main(argv):
    args = parser().parse_args(argv)
    return args.func(args)


@pytest.fixture
def dirs(tmp_path):
    g, p = tmp_path / "gold", tmp_path / "pred"
    g.mkdir()
    p.mkdir()
    (g / "Subtask_1_gold.json").write_text(json.dumps(gold([["2_sadness", "1_I lost my job"]])))
    (g / "Subtask_2_gold.json").write_text(json.dumps(gold([["2_sadness", "1"], ["3_joy", "3"]])))
    (p / "Subtask_1_pred.json").write_text(json.dumps(pred([["2_sadness", "1_2_5"]])))
    return g, p


def test_scores_txt_lines_for_the_subtasks_that_have_a_prediction(dirs, capsys):
    g, p = dirs
    assert main(["score", "ecpe", "--pred", str(p), "--data", str(g)]) == 0  # the name every score command uses
    out = capsys.readouterr().out
    assert main(["score", "ecpe", "--pred", str(p), "--gold", str(g)]) == 0  # the older name still works
    assert capsys.readouterr().out == out
    assert [line.split(":")[0] for line in out.splitlines()] == list(SUBTASK1_KEYS)  # no subtask-2 prediction
    # partial overlap (see test_ecpe_official): overlap 2 of 3 predicted, 4 gold tokens
    assert f"Proportional_precision:{2 / (3 + 1e-8)!r}\n" in out and "strict_f1:0.0\n" in out
    (p / "Subtask_2_pred.json").write_text(json.dumps(pred([["2_sadness", "1"]])))
    main(["score", "ecpe", "--pred", str(p), "--gold", str(g)])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == [*SUBTASK1_KEYS, *SUBTASK2_KEYS]


def test_json_has_numbers_nan_as_null_and_per_emotion(dirs, capsys):
    g, p = dirs
    (g / "Subtask_2_gold.json").write_text(json.dumps(gold([])))  # no gold pair: weighted figures are nan
    (p / "Subtask_2_pred.json").write_text(json.dumps(pred([["2_sadness", "1"]])))
    main(["score", "ecpe", "--pred", str(p), "--gold", str(g), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert list(doc)[:18] == [*SUBTASK1_KEYS, *SUBTASK2_KEYS]
    assert doc["weighted_f1"] is None and doc["f1_pair"] == 0.0
    assert doc["Proportional_recall"] == 2 / (4 + 1e-8)
    assert [r["emotion"] for r in doc["per_emotion"]["subtask_1"]] == ["anger", "disgust", "fear", "joy", "sadness",
                                                                       "surprise"]
    assert doc["per_emotion"]["subtask_2"][4]["predicted_pairs"] == 1


def test_warnings_go_to_stderr(dirs, capsys):
    g, p = dirs
    (p / "Subtask_1_pred.json").write_text(json.dumps(pred([["2_sadness", "1_0_4"], ["2_sadness", "1_5_9"]])))
    main(["score", "ecpe", "--pred", str(p), "--gold", str(g)])
    err = capsys.readouterr().err
    assert "1 warning(s): index_out_of_range x1" in err and "conversation 1, pair 2" in err


def test_bad_input_raises_errors_the_cli_prints_as_one_line(dirs, tmp_path):
    g, p = dirs
    (p / "Subtask_1_pred.json").write_text(json.dumps(pred([["2_Joy", "1_0_4"]])))
    with pytest.raises(DataError, match=r"Subtask_1_pred.json, record conversation 1, field 'emotion-cause_pairs\[1\]'"
                                        r": unknown_emotion"):
        main(["score", "ecpe", "--pred", str(p), "--gold", str(g)])
    (p / "Subtask_1_pred.json").write_text("[{")
    with pytest.raises(DataError, match="Subtask_1_pred.json.*not JSON at line 1"):
        main(["score", "ecpe", "--pred", str(p), "--gold", str(g)])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UsageError, match="no Subtask_1_\\*.json or Subtask_2_\\*.json prediction file"):
        main(["score", "ecpe", "--pred", str(empty), "--gold", str(g)])
    with pytest.raises(UsageError, match="not a folder"):
        main(["score", "ecpe", "--pred", str(tmp_path / "nope"), "--gold", str(g)])
    (p / "Subtask_1_pred.json").write_text(json.dumps(pred([])))
    (p / "Subtask_1_other.json").write_text("[]")
    with pytest.raises(UsageError, match="no Subtask_1_gold.json or Subtask_1_test.json"):
        main(["score", "ecpe", "--pred", str(p), "--gold", str(empty)])


def test_file_choice(tmp_path):
    (tmp_path / "Subtask_1_test.json").write_text("[]")
    (tmp_path / "Subtask_1_mine.json").write_text("[]")
    assert cli.find_file(tmp_path, 1, "gold").name == "Subtask_1_test.json"
    assert cli.find_file(tmp_path, 1, "pred").name == "Subtask_1_mine.json"  # the gold is never a prediction
    (tmp_path / "Subtask_1_theirs.json").write_text("[]")
    with pytest.raises(UsageError, match="several subtask-1 pred files"):
        cli.find_file(tmp_path, 1, "pred")
    assert cli.find_file(tmp_path, 2, "pred") is None


def test_validate_command_exit_status(dirs, capsys):
    g, p = dirs
    assert main(["ecpe", "validate", str(p / "Subtask_1_pred.json"), "--gold", str(g)]) == 0
    assert capsys.readouterr().out.endswith("Subtask_1_pred.json: 0 error(s), 0 warning(s)\n")
    (p / "Subtask_1_pred.json").write_text(json.dumps(pred([["2_sadness", "U1_0_4"], ["2_sadness", "1_0_4"]])))
    assert main(["ecpe", "validate", str(p / "Subtask_1_pred.json"), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and [x["kind"] for x in doc["problems"]] == ["u_prefix"]
    with pytest.raises(UsageError, match="give --subtask"):
        main(["ecpe", "validate", str(g / ".." / "x.json")])
