"""The Ray Data scoring path (session Ray, 2 CPUs) gives exactly what the local loop gives: for a folder of file pairs
(`score narrative --engine ray`) and for the task's samples (rows, items, issues, summary), unreadable files, failed
predictions and stories without GT included."""

from __future__ import annotations

import json
import shutil

import pytest

import emocaustics.tasks.narrative  # noqa: F401  (registers the task)
from emocaustics.core.task import Failure, ScoreContext, get_task, parse_options
from emocaustics.tasks.narrative.cli import score_paths
from emocaustics.tasks.narrative.data import SAMPLE_DIR
from emocaustics.tasks.narrative.rayscore import score_file_pairs, score_samples_ray
from emocaustics.tasks.narrative.scoring import assemble

TASK = get_task("narrative")


@pytest.fixture
def folder(tmp_path):
    """The sample's predictions and GT, plus an unreadable prediction, a GT of the wrong version and a lone GT."""
    shutil.copytree(SAMPLE_DIR / "gt", tmp_path / "gt")
    shutil.copytree(SAMPLE_DIR / "pred", tmp_path / "pred")
    (tmp_path / "pred" / "ferry_en_pred.json").write_text("{oops", encoding="utf-8")
    (tmp_path / "gt" / "old.json").write_text('{"version": "2.0"}', encoding="utf-8")
    (tmp_path / "pred" / "old_pred.json").write_text('{"version": "3.0"}', encoding="utf-8")
    (tmp_path / "gt" / "lonely.json").write_text('{"version": "3.0"}', encoding="utf-8")
    return tmp_path


def test_folder_through_ray_equals_local(ray_local, folder):
    local, _ = score_paths(folder / "pred", folder / "gt", "spans=2", engine="local")
    ray, _ = score_paths(folder / "pred", folder / "gt", "spans=2", engine="ray")
    assert json.dumps(ray, sort_keys=True) == json.dumps(local, sort_keys=True)
    # an unreadable GT cannot be scored; an unreadable or missing prediction is a failed story (both paths alike)
    assert ray["files"] == 6 and set(ray["skipped"]["errors"]) == {"old"} and set(ray["failed"]) == {"ferry_en",
                                                                                                    "lonely"}
    assert "not JSON" in ray["failed"]["ferry_en"] and "version" in ray["skipped"]["errors"]["old"]
    assert ray["skipped"]["unpaired_gt"] == ["lonely"] and "no prediction file" in ray["failed"]["lonely"]
    assert score_file_pairs([]) == {}


def test_task_scoring_through_ray_equals_local(ray_local, folder):
    opts = parse_options(TASK, {"method": "files", "weights": {"characters": 2}})
    loaded = TASK.load(TASK.Dataset(data=str(folder)), opts)
    preds = TASK.predict("files", loaded.samples, opts)
    preds["lantern_zh"] = Failure("window 2/2 (sentences 7-11)", "unparseable answer")
    del preds["kite_en"]  # no prediction at all: a failure row, never a gap
    local = TASK.score(loaded.samples, preds, opts, ScoreContext())
    outputs = score_samples_ray(loaded.samples, preds, weights=opts.weights)
    ray = assemble([s.id for s in loaded.samples], outputs, opts.weights, {"scoring_path": "local"})
    assert ray.rows.equals(local.rows) and ray.items.equals(local.items)
    assert ray.tables["issues"].equals(local.tables["issues"]) and ray.summary == local.summary
    rows = {(r["sample_id"], r["metric"]): r for r in ray.rows.to_dicts()}
    assert rows[("lantern_zh", "overall")]["status"] == "failed" and "window 2/2" in rows[("lantern_zh", "overall")][
        "reason"]
    assert rows[("kite_en", "overall")]["status"] == "failed" and "no prediction" in rows[("kite_en", "overall")][
        "reason"]
    assert rows[("old", "overall")]["status"] == "failed"  # an unreadable GT file fails its story (as score narrative)
    assert rows[("ferry_en", "spans")]["status"] == "failed" and "not JSON" in rows[("ferry_en", "spans")]["reason"]
    # scored: clockmaker, market, orchard, well (lonely has no prediction file)
    assert local.summary["scoring_path"] == "local" and ray.summary["files_scored"] == 4
