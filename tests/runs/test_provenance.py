"""Provenance: a run's prediction folder records what it was made from, `score` takes its selection from that record
and refuses ground truth the predictions were not made for (naming the sample and what was expected), unless
--ignore-provenance."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from count_task import CALIBRATION_JOB, write_job

from emocaustics.cli import main
from emocaustics.core import provenance
from emocaustics.core.errors import ProvenanceMismatch
from emocaustics.core.task import content_hash, parse_options

DATA = os.environ.get("EMOCAUSTICS_DATA") or str(Path(__file__).resolve().parents[3] / "shared/datasets/emocaustics")


def test_a_run_records_provenance_of_every_config(count_task, tmp_path):
    job = write_job(tmp_path / "job.yaml", CALIBRATION_JOB.format(name="p", n=3, method="right"))
    assert main(["run", str(job), "--out", str(tmp_path / "run")]) == 0
    rec = json.loads((tmp_path / "run" / "predictions" / "count_right" / "provenance.json").read_text())
    assert rec["task"] == "count" and rec["method"] == "right" and rec["prompts_version"] == "count-v1"
    assert rec["dataset"] == {"data": None, "n": 3, "offset": 0} and set(rec["samples"]) == {"s0", "s1", "s2"}
    assert rec["options"] == {"method": "right"} and rec["model"] is None and len(rec["dataset_hash"]) == 16


def test_check_names_the_sample_and_what_was_expected(count_task):
    from count_task import CountDataset, CountOptions

    made = count_task.load(CountDataset(n=3), CountOptions(method="right"))
    rec = provenance.record(count_task, made, dataset={"n": 3}, options=CountOptions(method="right"), model=None)
    other = count_task.load(CountDataset(n=3, offset=10), CountOptions(method="right"))  # same ids, other numbers
    truth = {s.id: count_task.fingerprint(s) for s in other.samples}
    with pytest.raises(ProvenanceMismatch, match=r"sample s0: the predictions were made on other content"):
        provenance.check(rec, "count", truth, "here")
    bigger = count_task.load(CountDataset(n=5), CountOptions(method="right"))
    truth = {s.id: count_task.fingerprint(s) for s in bigger.samples}
    with pytest.raises(ProvenanceMismatch, match=r"sample s3: the ground truth has it, but the predictions were not"):
        provenance.check(rec, "count", truth, "here")
    narrower = {s.id: count_task.fingerprint(s) for s in made.samples[:2]}
    provenance.check(rec, "count", narrower, "here")  # scoring a part of what was predicted is fine


def _folder_from_sample_subset(folder: Path) -> list:
    """Oracle predictions of our sample dialogues with the provenance a run writes for them."""
    from emocaustics.core.task import get_task
    from tests.fakes.sextuple_files import write_candidates
    from emocaustics.tasks.longdialogue.score.predictors import predict

    task = get_task("sextuple")
    dataset = task.Dataset(subset="sample")
    options = parse_options(task, {"method": "window"})
    loaded = task.load(dataset, options)
    dialogues = [s.input for s in loaded.samples]
    preds = predict("oracle", "sextuple", dialogues)
    for d in dialogues:
        write_candidates(folder, d.id, d, preds[d.id])
    provenance.write(folder, provenance.record(task, loaded, dataset=dataset.model_dump(mode="json"),
                                               options=options, model="smoke"))
    return dialogues


def test_score_takes_the_recorded_selection_by_default(tmp_path, capsys):
    _folder_from_sample_subset(tmp_path)
    assert main(["score", "sextuple", "--pred", str(tmp_path), "--engine", "local", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["score"] == 1.0


def test_score_refuses_a_tampered_sample(tmp_path, capsys):
    dialogues = _folder_from_sample_subset(tmp_path)
    rec = json.loads((tmp_path / "provenance.json").read_text())
    first = str(dialogues[0].id)
    assert rec["samples"][first] == content_hash(dialogues[0])
    rec["samples"][first] = "0" * 16  # as if dialogue 1 had other content when the predictions were made
    (tmp_path / "provenance.json").write_text(json.dumps(rec))
    assert main(["score", "sextuple", "--pred", str(tmp_path), "--engine", "local"]) == 2
    err = capsys.readouterr().err
    assert f"sample {first}: the predictions were made on other content" in err and "subset=sample" in err
    assert main(["score", "sextuple", "--pred", str(tmp_path), "--engine", "local", "--ignore-provenance",
                 "--subset", "sample"]) == 0


@pytest.mark.skipif(not Path(DATA, "chat").is_dir(), reason="published data not available")
def test_score_refuses_predictions_of_another_subset(tmp_path, capsys):
    _folder_from_sample_subset(tmp_path)
    # The demo's predictions (our sample dialogues, ids 1..N) against the paper's dialogues 1..100: refused by name.
    assert main(["score", "sextuple", "--pred", str(tmp_path), "--data", DATA, "--subset", "paper-100",
                 "--engine", "local"]) == 2
    err = capsys.readouterr().err
    assert "predictions do not match the ground truth" in err and "sample 1:" in err and "subset=sample" in err
