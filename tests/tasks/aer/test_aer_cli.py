"""`emocaustics score aer --pred FILE --split S [--data DIR] [--json]` through the task's own parser registration."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from emocaustics.core.errors import DataError, SamplesFailed, UsageError
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
    with pytest.raises(DataError, match="line 2: id 'q-99' is not a question of this split"):
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
