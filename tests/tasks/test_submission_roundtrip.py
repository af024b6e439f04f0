"""Every submission a task writes is read back by the commands its docs give for it (issue 41, point 3): the file is
written by the task's own `finalize` (what `eval --submission-file` copies), copied under a name of the user's
choosing as `--submission-file` does, then read with `score TASK --pred` (and `ecpe validate` for ECPE) with no error
and the same content. A task that declares submission files and has no round trip here fails the first test."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from emocaustics.cli import main
from emocaustics.core.task import get_task, parse_options, task_names

BASE = Path(__file__).resolve().parents[1] / "badinput"  # small, good inputs of our own
COVERED = {"aer", "ecpe"}


def test_every_submission_writer_has_a_round_trip_here() -> None:
    writers = {name for name in task_names() if get_task(name).scorer.submission_files}
    assert writers == COVERED, f"submission writers without a round trip: {sorted(writers - COVERED)}"


def _written(task_name: str, dataset: dict, options: dict, out: Path) -> list[Path]:
    task = get_task(task_name)
    opts = parse_options(task, options)
    samples = task.load(task.Dataset(**dataset), opts).samples
    return task.finalize(out, samples, task.predict(opts.method, samples, opts), opts)


@pytest.mark.parametrize("method", ["oracle", "baseline"])
def test_ecpe_submission_zip_validates_and_scores_as_written(method: str, tmp_path: Path, capsys) -> None:
    gold = tmp_path / "gold"
    shutil.copytree(BASE / "ecpe" / "_base" / "gold", gold)
    out = tmp_path / "predictions" / f"ecpe_{method}"
    written = _written("ecpe", {"data": str(gold)}, {"method": method, "subtask": "both"}, out)
    assert out / "submission.zip" in written
    sub = tmp_path / "elsewhere" / "sub.zip"  # --submission-file sub.zip: a copy, away from the run's files
    sub.parent.mkdir()
    shutil.copyfile(out / "submission.zip", sub)
    capsys.readouterr()
    assert main(["ecpe", "validate", str(sub), "--data", str(gold)]) == 0
    printed, err = capsys.readouterr()
    for st in (1, 2):
        assert f"{sub}:Subtask_{st}_pred.json: 0 error(s)" in printed, printed
    assert "error" not in err
    for st in (1, 2):  # one subtask of the zip, and each file the run wrote
        assert main(["ecpe", "validate", str(sub), "--subtask", str(st), "--data", str(gold)]) == 0
        assert main(["ecpe", "validate", str(out / f"Subtask_{st}_pred.json"), "--data", str(gold)]) == 0
    capsys.readouterr()
    # the same content: the zip's records are the files the run wrote
    from emocaustics.tasks.ecpe.cli import prediction_files

    for st, (name, records) in prediction_files(sub).items():
        assert name == f"{sub}:Subtask_{st}_pred.json"
        assert records == json.loads((out / f"Subtask_{st}_pred.json").read_text(encoding="utf-8"))
    # and they score as the run scored them
    assert main(["score", "ecpe", "--pred", str(sub), "--data", str(gold)]) == 0
    assert capsys.readouterr().out == (out / "scores.txt").read_text(encoding="utf-8")


def test_ecpe_validate_on_a_zip_names_the_member_at_fault(tmp_path: Path, capsys) -> None:
    gold = BASE / "ecpe" / "_base" / "gold"
    sub = tmp_path / "sub.zip"
    with zipfile.ZipFile(sub, "w") as zf:
        records = [{"conversation_ID": 1, "emotion-cause_pairs": [["2_Joy", "1"]]}]
        zf.writestr("Subtask_2_pred.json", json.dumps(records))
    assert main(["ecpe", "validate", str(sub), "--data", str(gold)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{sub}:Subtask_2_pred.json" in err[0] and "unknown_emotion" in err[0], err
    assert main(["ecpe", "validate", str(sub), "--subtask", "1", "--data", str(gold)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no Subtask_1_*.json prediction" in err[0], err


@pytest.mark.parametrize("method", ["oracle", "random"])
@pytest.mark.parametrize("pick", ["submission.jsonl", "submission.zip"])
def test_aer_submission_scores_as_written(method: str, pick: str, tmp_path: Path, capsys) -> None:
    data = tmp_path / "data"
    shutil.copytree(BASE / "aer" / "_base" / "data", data)
    out = tmp_path / "predictions" / f"aer_{method}"
    written = _written("aer", {"data": str(data), "split": "sample"}, {"method": method}, out)
    assert out / pick in written
    sub = tmp_path / "elsewhere" / f"mine{Path(pick).suffix}"
    sub.parent.mkdir()
    shutil.copyfile(out / pick, sub)
    from emocaustics.tasks.aer.scoring import submission_text

    assert submission_text(sub)[1] == (out / "submission.jsonl").read_text(encoding="utf-8")  # the same content
    capsys.readouterr()
    assert main(["score", "aer", "--pred", str(sub), "--split", "sample", "--data", str(data), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))["results"]
    assert summary["score"] == results["score"] and summary["missing"] == []
