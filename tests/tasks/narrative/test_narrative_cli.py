"""`score narrative`: folders and file pairs, JSON and Markdown output, unreadable files listed, not fatal."""

import argparse
import json
import shutil

import pytest

from emocaustics.core.errors import UsageError
from emocaustics.tasks.narrative.cli import register_score
from emocaustics.tasks.narrative.data import SAMPLE_DIR


def cli(*argv):
    parser = argparse.ArgumentParser()
    register_score(parser.add_subparsers(dest="task"))
    args = parser.parse_args(["narrative", *argv])
    return args.func(args)


def test_folders_json(capsys):
    assert cli("--pred", str(SAMPLE_DIR / "pred"), "--gt", str(SAMPLE_DIR / "gt"), "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert {"overall_score", "component_scores", "files", "skipped", "per_file"} <= set(out)
    assert out["files"] == 7 and out["skipped"]["errors"] == {} and out["skipped"]["unpaired_gt"] == []
    assert out["component_scores"]["characters"]["unscored"] == 1
    assert out["per_file"]["clockmaker_en"]["component_scores"]["characters"] is None


def test_oracle_folder_scores_one(capsys):
    assert cli("--pred", str(SAMPLE_DIR / "gt"), "--gt", str(SAMPLE_DIR / "gt"), "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["overall_score"] == 1.0 and all(v["macro"] == 1.0 for v in out["component_scores"].values())


def test_file_pair_json_and_weights(capsys, tmp_path):
    md = tmp_path / "r.md"
    assert cli("--pred", str(SAMPLE_DIR / "pred" / "lantern_zh_pred.json"), "--gt", str(SAMPLE_DIR / "gt" /
               "lantern_zh.json"), "--weights", "spans=0", "--json", "--markdown", str(md)) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"overall_score", "component_scores", "detailed_results", "summary"} <= set(out)
    assert "spans" not in out["summary"]["weights_used"]
    assert "# lantern_zh" in md.read_text(encoding="utf-8")


def test_bad_and_unpaired_files_are_listed(capsys, tmp_path):
    pred, gt = tmp_path / "pred", tmp_path / "gt"
    shutil.copytree(SAMPLE_DIR / "pred", pred)
    shutil.copytree(SAMPLE_DIR / "gt", gt)
    (pred / "ferry_en_pred.json").write_text("[1, 2", encoding="utf-8")
    (pred / "stray_pred.json").write_text("{}", encoding="utf-8")
    (gt / "kite_en.json").unlink()
    from emocaustics.core.errors import SamplesFailed

    with pytest.raises(SamplesFailed, match="1 of 6 samples failed") as failed:  # the whole report is printed first
        cli("--pred", str(pred), "--gt", str(gt), "--json")
    assert failed.value.exit_code == 3
    assert json.loads(capsys.readouterr().out)["failed"]
    assert cli("--pred", str(pred), "--data", str(gt), "--json", "--allow-failures") == 0
    out = json.loads(capsys.readouterr().out)
    assert "not JSON" in out["failed"]["ferry_en"] and out["per_file"]["ferry_en"]["overall_score"] == 0.0
    assert out["skipped"]["unpaired_pred"] == ["kite_en_pred.json", "stray_pred.json"]
    assert (out["files"], out["stories"]) == (5, 6)  # scored from a prediction; in the score (ferry_en counts 0)


def test_table_output_and_errors(capsys, tmp_path):
    assert cli("--pred", str(SAMPLE_DIR / "pred"), "--gt", str(SAMPLE_DIR / "gt")) == 0
    assert "| component | macro | micro |" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": "1.0"}', encoding="utf-8")
    assert cli("--pred", str(bad), "--gt", str(SAMPLE_DIR / "gt" / "kite_en.json")) == 2
    assert "version" in capsys.readouterr().err
    with pytest.raises(UsageError):
        cli("--pred", str(tmp_path / "none"), "--gt", str(SAMPLE_DIR / "gt"))
    with pytest.raises(UsageError):
        cli("--pred", str(bad), "--gt", str(SAMPLE_DIR / "gt"))


def renamed_copy(tmp_path, keep: int):
    """The sample folders with all but the first `keep` prediction files renamed so that they pair with nothing."""
    pred, gt = tmp_path / "d" / "pred", tmp_path / "d" / "gt"
    shutil.copytree(SAMPLE_DIR / "pred", pred)
    shutil.copytree(SAMPLE_DIR / "gt", gt)
    for path in sorted(pred.glob("*.json"))[keep:]:
        path.rename(pred / f"x_{path.name}")
    return pred, gt


def test_folder_is_scored_over_the_ground_truth(capsys, tmp_path):
    """6 of 7 predictions renamed: the score is over the 7 GT stories (6 failed, counted 0), the unpaired files are
    named before the score and on stderr, and the exit status is 3."""
    from emocaustics.cli import main

    pred, gt = renamed_copy(tmp_path, keep=1)
    kept = sorted(SAMPLE_DIR.glob("gt/*.json"))[0].stem
    assert cli("--pred", str(pred / f"{kept}_pred.json"), "--gt", str(gt / f"{kept}.json"), "--json") == 0
    alone = json.loads(capsys.readouterr().out)  # the one story that pairs, scored on its own
    assert main(["score", "narrative", "--pred", str(pred), "--data", str(gt)]) == 3
    got = capsys.readouterr()
    assert got.out.index("x_ferry_en_pred.json") < got.out.index("Overall")  # named before the score
    assert "x_ferry_en_pred.json" in got.err and "6 of 7 samples failed" in got.err
    assert cli("--pred", str(pred), "--data", str(gt), "--json", "--allow-failures") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["overall_score"] == pytest.approx(alone["overall_score"] / 7)
    assert (out["stories"], out["files"], len(out["failed"])) == (7, 1, 6)
    assert all("no prediction file" in reason for reason in out["failed"].values())
    # the failed stories' GT items are missed: recall pooled over all stories, not over the one scored
    assert out["component_scores"]["relationships"]["recall"] < alone["detailed_results"]["relationships"][
        "metrics"]["pair_recall"]


def test_nothing_pairs_is_a_usage_error(capsys, tmp_path):
    from emocaustics.cli import main

    pred, gt = renamed_copy(tmp_path, keep=0)
    md = tmp_path / "report.md"
    assert main(["score", "narrative", "--pred", str(pred), "--data", str(gt), "--markdown", str(md)]) == 2
    err = capsys.readouterr().err
    assert "pairs with any of the 7 ground-truth stories" in err and "x_clockmaker_en_pred.json" in err
    assert not md.exists()  # nothing written
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["score", "narrative", "--pred", str(empty), "--data", str(gt)]) == 2


def test_text_output_has_precision_recall_f1(capsys):
    assert cli("--pred", str(SAMPLE_DIR / "pred"), "--gt", str(SAMPLE_DIR / "gt"), "--json") == 0
    agg = json.loads(capsys.readouterr().out)
    assert cli("--pred", str(SAMPLE_DIR / "pred"), "--gt", str(SAMPLE_DIR / "gt")) == 0
    text = capsys.readouterr().out
    assert "| component | of | precision | recall | F1 |" in text
    rel = agg["component_scores"]["relationships"]
    assert f"| relationships | relationship pairs | {rel['precision']:.4f} | {rel['recall']:.4f} | {rel['f1']:.4f} |" \
        in text
