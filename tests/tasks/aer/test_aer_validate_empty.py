"""`aer validate` and `score aer` refuse an empty submission by one rule (scoring.check_lines): the same words,
exit status 2 for both."""

from __future__ import annotations

import json
from pathlib import Path

from emocaustics.cli import main
from tasks.aer.aer_fixtures import standard_dataset


def test_empty_submission_is_one_problem_for_validate_and_score(tmp_path: Path, capsys) -> None:
    root = standard_dataset(tmp_path / "data")
    sub = tmp_path / "submission.jsonl"
    sub.write_text("\n \n", encoding="utf-8")
    assert main(["aer", "validate", str(sub), "--split", "sample", "--data", str(root), "--json"]) == 2
    out = json.loads(capsys.readouterr().out.splitlines()[0])
    assert out["ok"] is False and [p["problem"] for p in out["problems"]] == [
        "the submission has no answer (an empty file): nothing to score"]
    assert main(["score", "aer", "--pred", str(sub), "--split", "sample", "--data", str(root)]) == 2
    assert "the submission has no answer (an empty file): nothing to score" in capsys.readouterr().err
