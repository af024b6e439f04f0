"""`emocaustics score aer --pred FILE --split S [--data DIR] [--json]` through the task's own parser registration."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from emocaustics.core.errors import DataError, SamplesFailed, UsageError
from emocaustics.core.task import parse_options
from emocaustics.tasks.aer.cli import register_score
from tasks.aer.aer_fixtures import standard_dataset


def _score(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="emocaustics")
    sub = parser.add_subparsers(dest="command", required=True)
    score = sub.add_parser("score")
    register_score(score.add_subparsers(dest="score_task", required=True))
    args = parser.parse_args(["score", "aer", *argv])
    return args.func(args)


def test_score_json_on_a_submission(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = standard_dataset(tmp_path / "data")
    sub = tmp_path / "submission.jsonl"
    # gold: q-1 A, q-2 A,B, q-3 C, q-4 B,C,D, q-5 D, q-6 A,C
    sub.write_text("\n".join(json.dumps(x) for x in [
        {"id": "q-1", "answer": "A"},        # exact 1
        {"id": "q-2", "answer": "B"},        # partial 0.5
        {"id": "q-3", "answer": "A,B,C,D"},  # superset 0
        {"id": "q-4", "answer": "B,D"},      # partial 0.5
        {"id": "q-6", "answer": ""},         # empty 0
    ]) + "\n")                               # q-5 missing: 0
    # a missing question is scored 0 and reported; the exit status says some failed (3) unless allowed
    with pytest.raises(SamplesFailed, match="1 of 6 samples failed") as failed:
        _score(["--pred", str(sub), "--split", "sample", "--data", str(root), "--json"])
    assert failed.value.exit_code == 3
    assert json.loads(capsys.readouterr().out)["missing"] == ["q-5"]  # the scores were printed first
    assert _score(["--pred", str(sub), "--split", "sample", "--data", str(root), "--json", "--allow-failures"]) == 0
    out = json.loads(capsys.readouterr().out)
    # (1 + 0.5 + 0 + 0.5 + 0 + 0) / 6 = 1/3
    assert out["task"] == "aer" and out["split"] == "sample"
    assert out["score"] == pytest.approx(1 / 3)
    assert (out["total"], out["exact_match"], out["partial_match"], out["wrong"]) == (6, 1, 2, 3)
    assert out["exact_match_rate"] == pytest.approx(1 / 6) and out["partial_match_rate"] == pytest.approx(2 / 6)
    assert out["wrong_rate"] == pytest.approx(3 / 6) and out["missing"] == ["q-5"]
    # gold size 1: q-1 1, q-3 0, q-5 0; size 2: q-2 0.5, q-6 0; size 3: q-4 0.5
    assert out["by_gold_size"]["1"]["score"] == pytest.approx(1 / 3)
    assert out["by_gold_size"]["2"]["score"] == 0.25 and out["by_gold_size"]["3"]["score"] == 0.5


def test_score_text_output_and_test_split(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = standard_dataset(tmp_path / "data")
    sub = tmp_path / "s.jsonl"
    sub.write_text('{"id": "q-20", "answer": "B"}\n{"id": "q-21", "answer": "A"}\n')
    assert _score(["--pred", str(sub), "--split", "test", "--data", str(root)]) == 0
    text = capsys.readouterr().out
    # q-20 exact (1), q-21 partial (0.5): 0.75
    assert "aer test: score 0.7500 over 2 questions (exact 1, partial 1, wrong 0; missing 0)" in text


def test_score_errors_name_the_line(tmp_path: Path) -> None:
    root = standard_dataset(tmp_path / "data")
    sub = tmp_path / "s.jsonl"
    sub.write_text('{"id": "q-1", "answer": "A"}\n{"id": "q-99", "answer": "A"}\n')
    with pytest.raises(DataError, match="line 2, field 'id': 'q-99' is not a question of this split"):
        _score(["--pred", str(sub), "--split", "sample", "--data", str(root)])
    with pytest.raises(DataError, match="no such submission file"):
        _score(["--pred", str(tmp_path / "none.jsonl"), "--split", "sample", "--data", str(root)])


def test_dev_scores_without_documents_and_test_needs_reference(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    root = standard_dataset(tmp_path / "data")
    sub = tmp_path / "s.jsonl"
    sub.write_text('{"id": "q-10", "answer": "B"}\n')
    assert _score(["--pred", str(sub), "--split", "dev", "--data", str(root), "--json", "--allow-failures"]) == 0
    assert json.loads(capsys.readouterr().out)["score"] == 0.25  # 1 of 4
    (root / "reference.jsonl").unlink()
    with pytest.raises(UsageError, match="no gold answers for 2 question"):
        _score(["--pred", str(sub), "--split", "test", "--data", str(root)])


# -- what a user passes as --pred, and submissions that cannot be scored (issue 25) ---------------------------------
def _main(argv: list[str]) -> int:
    from emocaustics.cli import main

    return main(["score", "aer", *argv])


def _lines(*records: dict) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


ANSWERS = _lines(*({"id": f"q-{n}", "answer": a} for n, a in
                   ((1, "A"), (2, "A,B"), (3, "C"), (4, "B,C,D"), (5, "D"), (6, "A,C"))))


def test_an_empty_submission_is_refused_not_scored_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = standard_dataset(tmp_path / "data")
    for text in ("", "\n  \n"):
        sub = tmp_path / "submission.jsonl"
        sub.write_text(text)
        assert _main(["--pred", str(sub), "--split", "sample", "--data", str(root)]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""  # no score was printed
        err = captured.err.strip().splitlines()
        assert len(err) == 1 and "submission.jsonl" in err[0] and "no answer" in err[0]


def test_a_submission_that_pairs_with_no_question_is_a_usage_error(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    root = standard_dataset(tmp_path / "data")
    sub = tmp_path / "submission.jsonl"
    sub.write_text(_lines({"id": "q-20", "answer": "B"}, {"id": "q-21", "answer": "A"}))  # the test split's ids
    assert _main(["--pred", str(sub), "--split", "sample", "--data", str(root)]) == 2
    assert "field 'id': 'q-20' is not a question of this split" in capsys.readouterr().err


def test_pred_may_be_the_folder_or_the_zip_the_tool_writes(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from emocaustics.tasks.aer.scoring import write_submission

    root = standard_dataset(tmp_path / "data")
    config = tmp_path / "runs" / "job" / "predictions" / "aer_oracle"
    sub, zpath = write_submission(config / "submission.jsonl",
                                  {f"q-{n}": a.split(",") for n, a in ((1, "A"), (2, "A,B"), (3, "C"),
                                                                       (4, "B,C,D"), (5, "D"), (6, "A,C"))})
    outputs = []
    for pred in (sub, config, zpath, tmp_path / "runs" / "job"):  # the file, its folder, the zip, the run folder
        assert _main(["--pred", str(pred), "--split", "sample", "--data", str(root), "--json"]) == 0, pred
        outputs.append(json.loads(capsys.readouterr().out))
    assert all(o == outputs[0] for o in outputs) and outputs[0]["score"] == 1.0
    # a folder with several submissions: the error names them, so that the user can pass one
    write_submission(tmp_path / "runs" / "job" / "predictions" / "aer_random" / "submission.jsonl", {"q-1": ["A"]})
    assert _main(["--pred", str(tmp_path / "runs" / "job"), "--split", "sample", "--data", str(root)]) == 2
    err = capsys.readouterr().err
    assert "2 submission.jsonl files" in err and "aer_oracle" in err and "aer_random" in err
    # a folder without one says what to pass
    (tmp_path / "nothing").mkdir()
    assert _main(["--pred", str(tmp_path / "nothing"), "--split", "sample", "--data", str(root)]) == 2
    err = capsys.readouterr().err
    assert "no submission.jsonl" in err and "--pred" in err


def test_text_output_shows_the_scores_by_topic(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = standard_dataset(tmp_path / "data")
    sub = tmp_path / "submission.jsonl"
    # topic 1: q-1 exact, q-2 partial (0.75); topic 2: q-3 wrong, q-4 exact (0.5); topic 3: q-5, q-6 exact (1.0)
    sub.write_text(_lines({"id": "q-1", "answer": "A"}, {"id": "q-2", "answer": "B"}, {"id": "q-3", "answer": "D"},
                          {"id": "q-4", "answer": "B,C,D"}, {"id": "q-5", "answer": "D"},
                          {"id": "q-6", "answer": "A,C"}))
    assert _score(["--pred", str(sub), "--split", "sample", "--data", str(root)]) == 0
    text = capsys.readouterr().out
    assert "  topic 1: score 0.7500 over 2 (exact 1, partial 1, wrong 0)" in text
    assert "  topic 2: score 0.5000 over 2 (exact 1, partial 0, wrong 1)" in text
    assert "  topic 3: score 1.0000 over 2 (exact 2, partial 0, wrong 0)" in text
    assert text.index("  gold size 1: score ") < text.index("  topic 1: ")  # gold sizes first, then topics


def test_missing_questions_count_as_the_job_runner_counts_them(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The same answers scored by `score aer` (q-5 absent from the file) and by the task as the job runner scores them
    (q-5 has no prediction: a Failure) give the same score, and the failed question is the missing one."""
    from emocaustics.core.task import Failure, ScoreContext
    from emocaustics.tasks.aer.task import AerTask

    root = standard_dataset(tmp_path / "data")
    sub = tmp_path / "submission.jsonl"
    sub.write_text("".join(line + "\n" for line in ANSWERS.splitlines() if '"q-5"' not in line))
    with pytest.raises(SamplesFailed, match="1 of 6 samples failed"):
        _score(["--pred", str(sub), "--split", "sample", "--data", str(root), "--json"])
    cli_summary = json.loads(capsys.readouterr().out)
    task = AerTask()
    options = parse_options(task, {"method": "oracle"})
    samples = task.load(task.Dataset(split="sample", data=str(root)), options).samples
    predictions: dict = {s.id: {"answer": s.target} for s in samples if s.id != "q-5"}
    predictions["q-5"] = Failure("solve", "no prediction was written for this sample")  # core.predictions.pair
    scored = task.score(samples, predictions, options, ScoreContext())
    assert scored.summary["score"] == cli_summary["score"] == 5 / 6
    failed = scored.rows.filter(scored.rows["status"] == "failed")["sample_id"].unique().to_list()
    assert failed == cli_summary["missing"] == ["q-5"]


def test_a_runs_failed_questions_count_as_failed_when_its_submission_is_scored(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run writes a failed question into submission.jsonl with an empty answer (Codabench needs every id) and its
    failure into failures.jsonl beside it: scoring that submission counts the question failed, as the job did (same
    score, exit status 3), not as a deliberate empty answer."""
    from emocaustics.core.task import Failure
    from emocaustics.tasks.aer.task import AerTask

    root = standard_dataset(tmp_path / "data")
    task = AerTask()
    options = parse_options(task, {"method": "oracle"})
    samples = task.load(task.Dataset(split="sample", data=str(root)), options).samples
    config = tmp_path / "predictions" / "aer_llm"
    for s in samples:
        if s.id == "q-5":
            task.store.write_prediction(config, s.id, Failure("answer", "model error: HTTP 500"))
        else:
            task.store.write_prediction(config, s.id, {"answer": s.target})
    predictions = task.store.read_predictions(config)
    task.finalize(config, samples, predictions, options)
    for pred in (config, config / "submission.jsonl", config / "submission.zip"):
        assert _main(["--pred", str(pred), "--split", "sample", "--data", str(root), "--json"]) == 3
        captured = capsys.readouterr()
        out = json.loads(captured.out)
        assert out["score"] == task.score(samples, predictions, options, None).summary["score"] == 5 / 6
        assert out["failed_in_run"] == ["q-5"] and out["missing"] == []
        assert "1 of 6 samples failed" in captured.err
