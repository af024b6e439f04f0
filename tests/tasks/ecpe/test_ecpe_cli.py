"""`emocaustics score ecpe` and `emocaustics ecpe validate`, on a parser of their own (the lead wires them into the
main command line)."""

from __future__ import annotations

import argparse
import json
import re

import pytest

from emocaustics.core.errors import DataError, UsageError
from emocaustics.core.task import parse_options
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


def test_bad_input_raises_errors_the_cli_prints_as_one_line(dirs, tmp_path, capsys):
    g, p = dirs
    (p / "Subtask_1_pred.json").write_text(json.dumps(pred([["2_Joy", "1_0_4"]])))
    # one error: the error line itself names file, conversation and pair (nothing listed above it)
    with pytest.raises(UsageError, match=r"Subtask_1_pred.json, record conversation 1, field "
                                         r"'emotion-cause_pairs\[1\]': unknown_emotion.*; nothing scored$"):
        main(["score", "ecpe", "--pred", str(p), "--gold", str(g)])
    assert capsys.readouterr().err == ""
    (p / "Subtask_1_pred.json").write_text("[{")
    with pytest.raises(UsageError, match="Subtask_1_pred.json.*not JSON.* at line 1"):
        main(["score", "ecpe", "--pred", str(p), "--gold", str(g)])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UsageError, match="no Subtask_1_\\*.json or Subtask_2_\\*.json prediction file"):
        main(["score", "ecpe", "--pred", str(empty), "--gold", str(g)])
    with pytest.raises(UsageError, match="no such prediction folder, zip or file"):
        main(["score", "ecpe", "--pred", str(tmp_path / "nope"), "--gold", str(g)])
    (p / "Subtask_1_pred.json").write_text(json.dumps(pred([])))
    (p / "Subtask_1_other.json").write_text("[]")
    with pytest.raises(UsageError, match="no Subtask_1_gold.json or Subtask_1_test.json"):
        main(["score", "ecpe", "--pred", str(p), "--gold", str(empty)])


def test_file_choice():
    names = ["Subtask_1_test.json", "Subtask_1_mine.json"]
    assert cli.choose_name(names, 1, "gold", "here") == "Subtask_1_test.json"
    assert cli.choose_name(names, 1, "pred", "here") == "Subtask_1_mine.json"  # the gold is never a prediction
    assert cli.choose_name([*names, "Subtask_1_gold.json"], 1, "gold", "here") == "Subtask_1_gold.json"
    with pytest.raises(UsageError, match="here: several subtask-1 pred files"):
        cli.choose_name([*names, "Subtask_1_theirs.json"], 1, "pred", "here")
    assert cli.choose_name(names, 2, "pred", "here") is None


def test_validate_command_exit_status(dirs, capsys, monkeypatch, tmp_path):
    g, p = dirs
    monkeypatch.delenv("EMOCAUSTICS_ECAC_DATA", raising=False)  # without --data: the format only
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))
    assert main(["ecpe", "validate", str(p / "Subtask_1_pred.json"), "--gold", str(g)]) == 0
    assert capsys.readouterr().out.endswith("Subtask_1_pred.json: 0 error(s), 0 warning(s)\n")
    (p / "Subtask_1_pred.json").write_text(json.dumps(pred([["2_sadness", "U1_0_4"], ["2_sadness", "1_0_4"]])))
    with pytest.raises(DataError, match="not a valid submission: 1 error"):  # exit status 2 (cli_main below)
        main(["ecpe", "validate", str(p / "Subtask_1_pred.json"), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and [x["kind"] for x in doc["problems"]] == ["u_prefix"]
    with pytest.raises(UsageError, match="give --subtask"):
        main(["ecpe", "validate", str(g / ".." / "x.json")])


# -- issue 25: statuses, the env var, the tool's own zip, every problem, missing conversations ----------------------
def cli_main(argv):
    """The real command line: the exit status and what it printed."""
    from emocaustics.cli import main as emocaustics_main

    return emocaustics_main(argv)


def _test_data(root, cids=(1, 2)):
    """A data folder laid out like the organisers' (Subtask_N_test.json): conversations `cids`, each the small one."""
    root.mkdir(parents=True, exist_ok=True)
    s1 = [["2_sadness", "1_I lost my job"], ["3_joy", "3_I got a new one"]]
    s2 = [["2_sadness", "1"], ["3_joy", "3"]]
    for st, pairs in ((1, s1), (2, s2)):
        records = [{**gold(pairs)[0], "conversation_ID": cid} for cid in cids]
        (root / f"Subtask_{st}_test.json").write_text(json.dumps(records))
    return root


def test_validate_exits_2_on_an_invalid_file_after_listing_every_problem(dirs, capsys):
    g, p = dirs
    (p / "Subtask_1_pred.json").write_text(json.dumps(pred([["2_sadness", "U1_0_4"], ["2_Joy", "1_0_4"]])))
    assert cli_main(["ecpe", "validate", str(p / "Subtask_1_pred.json"), "--gold", str(g)]) == 2
    out, err = capsys.readouterr()
    assert "pair 1" in out and "u_prefix" in out and "pair 2" in out and "unknown_emotion" in out
    assert "Subtask_1_pred.json: 2 error(s), 0 warning(s)" in out
    assert len(err.strip().splitlines()) == 1 and "Subtask_1_pred.json" in err and "not a valid submission" in err


def test_validate_checks_against_the_data_of_the_env_var(tmp_path, monkeypatch, capsys):
    data_dir = _test_data(tmp_path / "ecac")
    sub = tmp_path / "Subtask_2_pred.json"
    sub.write_text(json.dumps([{"conversation_ID": 1, "emotion-cause_pairs": [["2_sadness", "1"]]}]))
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))  # no fetched copy
    monkeypatch.setenv("EMOCAUSTICS_ECAC_DATA", str(data_dir))
    # like `score ecpe`, the gold is the env var's: conversation 2 is missing from the file
    assert cli_main(["ecpe", "validate", str(sub)]) == 2
    out = capsys.readouterr().out
    assert "conversation 2: error missing_conversation" in out
    assert cli_main(["ecpe", "validate", str(sub), "--data", str(tmp_path / "nowhere")]) == 2  # a bad folder: named
    assert "nowhere" in capsys.readouterr().err
    # no data anywhere: the format alone is checked, and the user is told so
    monkeypatch.delenv("EMOCAUSTICS_ECAC_DATA")
    assert cli_main(["ecpe", "validate", str(sub)]) == 0
    out, err = capsys.readouterr()
    assert "0 error(s)" in out and "format only" in err


def test_score_reads_the_submission_zip_the_tool_writes(tmp_path, capsys):
    from emocaustics.tasks.ecpe.task import EcpeTask

    root = _test_data(tmp_path / "ecac")
    task = EcpeTask()
    options = parse_options(task, {"method": "baseline", "baseline_emotion": "sadness"})
    samples = task.load(task.Dataset(data=str(root)), options).samples
    out = tmp_path / "predictions" / "ecpe_baseline"
    written = task.finalize(out, samples, task.predict("baseline", samples, options), options)
    assert out / "submission.zip" in written
    assert cli_main(["score", "ecpe", "--pred", str(out), "--data", str(root)]) == 0
    from_folder = capsys.readouterr().out
    assert cli_main(["score", "ecpe", "--pred", str(out / "submission.zip"), "--data", str(root)]) == 0
    assert capsys.readouterr().out == from_folder == (out / "scores.txt").read_text()
    # one prediction file alone: its subtask's lines
    assert cli_main(["score", "ecpe", "--pred", str(out / "Subtask_2_pred.json"), "--data", str(root)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == list(SUBTASK2_KEYS)
    assert set(lines) <= set(from_folder.splitlines())


def test_score_reports_every_problem_of_every_file_then_exits_2(dirs, capsys):
    g, p = dirs
    (p / "Subtask_1_pred.json").write_text(json.dumps(pred([["2_Joy", "1_0_4"], ["2_sadness", "U1_0_4"]])))
    (p / "Subtask_2_pred.json").write_text(json.dumps(pred([["2_sadness", "1_0_4"]])))
    assert cli_main(["score", "ecpe", "--pred", str(p), "--data", str(g)]) == 2
    out, err = capsys.readouterr()
    assert out == ""  # nothing scored
    lines = err.strip().splitlines()
    expected = [("Subtask_1_pred.json", "emotion-cause_pairs[1]", "unknown_emotion"),
                ("Subtask_1_pred.json", "emotion-cause_pairs[2]", "u_prefix"),
                ("Subtask_2_pred.json", "emotion-cause_pairs[1]", "malformed_pair")]
    for file, field, kind in expected:
        assert any(file in line and "record conversation 1" in line and f"field '{field}'" in line and kind in line
                   for line in lines), (file, field, kind, lines)
    assert "3 error(s)" in lines[-1] and "nothing scored" in lines[-1]


def test_a_missing_conversation_is_a_failed_sample_as_in_the_job_runner(tmp_path, capsys):
    """The prediction lacks conversation 2: it is scored as predicting no pair (as the job runner scores a
    conversation with no prediction), listed, and the status is 3 unless --allow-failures."""
    from emocaustics.core.task import Failure, ScoreContext
    from emocaustics.tasks.ecpe.task import EcpeTask

    root = _test_data(tmp_path / "ecac")
    p = tmp_path / "pred"
    p.mkdir()
    found = [["2_sadness", "1"]]
    (p / "Subtask_2_pred.json").write_text(json.dumps([{"conversation_ID": 1, "emotion-cause_pairs": found}]))
    assert cli_main(["score", "ecpe", "--pred", str(p), "--data", str(root), "--json"]) == 3
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["missing"] == {"subtask_2": [2]}
    assert "1 of 2 samples failed" in err and "conversation(s) missing" in err
    assert cli_main(["score", "ecpe", "--pred", str(p), "--data", str(root), "--json", "--allow-failures"]) == 0
    assert json.loads(capsys.readouterr().out) == doc
    # the job runner's way: conversation 2 has no prediction (core.predictions.pair makes it a Failure)
    task = EcpeTask()
    options = parse_options(task, {"method": "oracle", "subtask": 2})
    samples = task.load(task.Dataset(data=str(root)), options).samples
    scored = task.score(samples, {"1": {"subtask1": None, "subtask2": found},
                                  "2": Failure("solve", "no prediction was written for this sample")},
                        options, ScoreContext())
    assert {k: scored.summary[k] for k in SUBTASK2_KEYS} == {k: doc[k] for k in SUBTASK2_KEYS}
    assert scored.rows.filter(scored.rows["status"] == "failed")["sample_id"].unique().to_list() == ["2"]


def test_a_prediction_that_pairs_with_no_conversation_is_a_usage_error(tmp_path, capsys):
    root = _test_data(tmp_path / "ecac")
    p = tmp_path / "pred"
    p.mkdir()
    for records in ([{"conversation_ID": 99, "emotion-cause_pairs": []}], []):
        (p / "Subtask_2_pred.json").write_text(json.dumps(records))
        assert cli_main(["score", "ecpe", "--pred", str(p), "--data", str(root)]) == 2
        out, err = capsys.readouterr()
        assert out == "" and "Subtask_2_pred.json" in err and "pairs with no gold conversation" in err


def test_a_runs_failed_conversations_count_as_failed_when_its_files_are_scored(tmp_path, capsys):
    """A run writes a failed conversation into Subtask_N_pred.json with no pair (the official files need every
    conversation) and its failure into failures.jsonl beside them: `score ecpe` on that folder or its zip counts it
    failed, as the job did (same figures, exit status 3)."""
    from emocaustics.core.task import Failure, ScoreContext
    from emocaustics.tasks.ecpe.task import EcpeTask

    root = _test_data(tmp_path / "ecac")
    task = EcpeTask()
    options = parse_options(task, {"method": "oracle"})
    samples = task.load(task.Dataset(data=str(root)), options).samples
    out = tmp_path / "predictions" / "ecpe_direct"
    oracle = task.predict("oracle", samples, options)
    task.store.write_prediction(out, "1", oracle["1"])
    task.store.write_prediction(out, "2", Failure("answer", "cut at the token budget"))
    predictions = task.store.read_predictions(out)
    task.finalize(out, samples, predictions, options)
    job = task.score(samples, predictions, options, ScoreContext())
    for pred in (out, out / "submission.zip"):
        assert cli_main(["score", "ecpe", "--pred", str(pred), "--data", str(root), "--json"]) == 3
        captured = capsys.readouterr()
        doc = json.loads(captured.out)
        assert doc["failed_in_run"] == [2] and doc["missing"] == {}
        assert {k: doc[k] for k in SUBTASK1_KEYS} == {k: job.summary[k] for k in SUBTASK1_KEYS}
        assert "1 of 2 samples failed" in captured.err


def test_a_zip_entry_that_is_not_json_is_named_by_zip_and_entry(dirs, tmp_path):
    import zipfile

    g, _ = dirs
    archive = tmp_path / "submission.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("Subtask_1_pred.json", "[{")
    with pytest.raises(UsageError, match=r"submission.zip:Subtask_1_pred.json, record line 1: not JSON .* at line 1"):
        main(["score", "ecpe", "--pred", str(archive), "--gold", str(g)])


def test_score_and_validate_read_files_the_same_way(dirs, tmp_path, capsys):
    """One reader for both verbs: --subtask names a file's subtask or picks one of a folder; a name that tells no
    subtask is refused by both, the same words."""
    g, p = dirs
    mine = tmp_path / "mine.json"
    mine.write_text((p / "Subtask_1_pred.json").read_text())
    assert main(["ecpe", "validate", str(mine), "--subtask", "1", "--gold", str(g)]) == 0
    assert capsys.readouterr().out.endswith("mine.json: 0 error(s), 0 warning(s)\n")
    for argv in (["ecpe", "validate", str(mine)], ["score", "ecpe", "--pred", str(mine), "--gold", str(g)]):
        with pytest.raises(UsageError, match="cannot tell the subtask from the name"):
            main(argv)
    assert main(["ecpe", "validate", str(p), "--subtask", "1", "--gold", str(g)]) == 0
    with pytest.raises(UsageError, match=r"no Subtask_2_\*.json prediction in it \(it holds subtask 1\)"):
        main(["ecpe", "validate", str(p), "--subtask", "2", "--gold", str(g)])
    with pytest.raises(UsageError, match="no Subtask_2_gold.json or Subtask_2_test.json"):  # one gold reader too
        (g / "Subtask_2_gold.json").unlink()
        (p / "Subtask_2_pred.json").write_text(json.dumps(pred([])))
        main(["ecpe", "validate", str(p / "Subtask_2_pred.json"), "--gold", str(g)])
