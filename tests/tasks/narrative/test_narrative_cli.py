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
    assert json.loads(capsys.readouterr().out)["skipped"]["errors"]
    assert cli("--pred", str(pred), "--data", str(gt), "--json", "--allow-failures") == 0
    out = json.loads(capsys.readouterr().out)
    assert "not JSON" in out["skipped"]["errors"]["ferry_en"]
    assert out["skipped"]["unpaired_pred"] == ["kite_en", "stray"] and out["files"] == 5


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
