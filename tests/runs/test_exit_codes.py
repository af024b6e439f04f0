"""Exit statuses a script can trust: 3 when any sample failed (2 stays for usage errors), 0 with --allow-failures;
for `run` and for `score`."""

from __future__ import annotations

import json

from count_task import CALIBRATION_JOB, write_job

from emocaustics.cli import main


def test_run_exits_3_when_samples_failed(count_task, tmp_path, capsys):
    job = write_job(tmp_path / "half.yaml", CALIBRATION_JOB.format(name="half", n=4, method="half"))
    assert main(["run", str(job), "--out", str(tmp_path / "a")]) == 3
    err = capsys.readouterr().err
    assert "2 of 4 samples failed" in err and "--allow-failures" in err
    assert (tmp_path / "a" / "summary.md").exists()  # the outputs are written all the same
    assert main(["run", str(job), "--out", str(tmp_path / "b"), "--allow-failures"]) == 0


def test_run_exits_0_when_nothing_failed_and_2_on_usage_errors(count_task, tmp_path):
    job = write_job(tmp_path / "right.yaml", CALIBRATION_JOB.format(name="right", n=4, method="right"))
    assert main(["run", str(job), "--out", str(tmp_path / "a")]) == 0
    assert main(["run", str(tmp_path / "missing.yaml")]) == 2
    assert main(["run", str(job), "--resume", "--force"]) == 2


def _sample_predictions(folder, ids):
    """Oracle sextuple predictions of some of our sample dialogues, written as `extract` writes them."""
    from emocaustics.tasks.longdialogue.data.subsets import resolve
    from tests.fakes.sextuple_files import write_candidates
    from emocaustics.tasks.longdialogue.score.predictors import predict

    dialogues, _ = resolve("sample", None)
    preds = predict("oracle", "sextuple", dialogues)
    for d in dialogues:
        if d.id in ids:
            write_candidates(folder, d.id, d, preds[d.id])
    return dialogues


def test_score_exits_3_when_dialogues_failed(tmp_path, capsys):
    dialogues = _sample_predictions(tmp_path, {1})
    args = ["score", "sextuple", "--pred", str(tmp_path), "--subset", "sample", "--engine", "local", "--json"]
    assert main(args) == 3
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert len(summary["failures"]) == len(dialogues) - 1  # every dialogue without a prediction
    assert f"{len(dialogues) - 1} of {len(dialogues)} samples failed" in captured.err
    assert main(args + ["--allow-failures"]) == 0
