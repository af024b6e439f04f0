"""Issue 53 finding 12: a submission written from part of the test set (`--limit`, ids, select) says so when it is
written, the zip stays the official one, and `ecpe validate` gives identical errors (the conversations such a file
lacks) one line instead of one per conversation."""

from __future__ import annotations

import json
import zipfile

from emocaustics.core.task import parse_options
from emocaustics.tasks.ecpe.task import EcpeTask

TEXTS = ["I lost my job today .", "Oh no , that is terrible !", "But I got a new one !"]


def _test_data(root, cids):
    """The organisers' layout (Subtask_N_test.json) with conversations `cids`, each the same small conversation."""
    root.mkdir(parents=True, exist_ok=True)
    conv = [{"utterance_ID": i, "text": t, "speaker": "A", "emotion": e}
            for i, (t, e) in enumerate(zip(TEXTS, ["neutral", "sadness", "joy"]), 1)]
    pairs = {1: [["2_sadness", "1_I lost my job"]], 2: [["2_sadness", "1"]]}
    for st in (1, 2):
        records = [{"conversation_ID": cid, "conversation": conv, "emotion-cause_pairs": pairs[st]} for cid in cids]
        (root / f"Subtask_{st}_test.json").write_text(json.dumps(records))
    return root


def _write(tmp_path, root, keep):
    task = EcpeTask()
    options = parse_options(task, {"method": "baseline", "baseline_emotion": "sadness"})
    samples = task.load(task.Dataset(data=str(root)), options).samples[:keep]  # the runner's select.limit
    out = tmp_path / f"pred{keep}"
    task.finalize(out, samples, task.predict("baseline", samples, options), options)
    return out


def test_a_partial_submission_says_how_much_it_covers_and_the_zip_stays_official(tmp_path, capsys):
    root = _test_data(tmp_path / "ecac", range(1, 8))
    out = _write(tmp_path, root, 3)
    said = capsys.readouterr().out
    assert "partial submission" in said and "covers 3 of the 7 test conversations" in said
    assert str(out / "submission.zip") in said
    with zipfile.ZipFile(out / "submission.zip") as zf:  # nothing CodaLab would not expect at its root
        assert sorted(zf.namelist()) == ["Subtask_1_pred.json", "Subtask_2_pred.json"]
    _write(tmp_path, root, 7)  # the whole set: no note
    assert "partial" not in capsys.readouterr().out


def test_validate_gives_identical_errors_one_line(tmp_path, capsys):
    from emocaustics.cli import main

    root = _test_data(tmp_path / "ecac", range(1, 9))
    out = _write(tmp_path, root, 2)
    capsys.readouterr()
    assert main(["ecpe", "validate", str(out / "submission.zip"), "--data", str(root)]) == 2
    lines = capsys.readouterr().out.splitlines()
    missing = [line for line in lines if "missing_conversation" in line]
    assert len(missing) == 2, lines  # one per subtask file, not 6 each
    assert all("6 conversations, e.g. 3, 4, 5 ..." in line for line in missing), missing
    assert any("Subtask_1_pred.json: 6 error(s)," in line for line in lines), lines


def test_a_lone_problem_keeps_its_own_line(tmp_path, capsys):
    from emocaustics.cli import main

    root = _test_data(tmp_path / "ecac", [1, 2])
    sub = tmp_path / "Subtask_2_pred.json"
    sub.write_text(json.dumps([{"conversation_ID": 1, "emotion-cause_pairs": [["2_sadness", "1"]]}]))
    assert main(["ecpe", "validate", str(sub), "--data", str(root)]) == 2
    out = capsys.readouterr().out
    assert "conversation 2: error missing_conversation: this gold conversation is missing" in out
