"""The task's `files` method pairs a GT story with its prediction file by the rule of `score narrative`
(`io.pair_folders`): `<story>_pred.json` before `<story>.json`, a GT file named `<x>_pred.json` being story `<x>`."""

import shutil

import emocaustics.tasks.narrative  # noqa: F401  (registers the task)
from emocaustics.core.task import get_task, parse_options
from emocaustics.tasks.narrative.data import SAMPLE_DIR
from emocaustics.tasks.narrative.io import pair_folders


def test_files_method_pairs_as_score_narrative(tmp_path):
    task = get_task("narrative")
    root = tmp_path / "data"
    (root / "gt").mkdir(parents=True)
    (root / "pred").mkdir()
    doc = (SAMPLE_DIR / "gt" / "kite_en.json").read_text(encoding="utf-8")
    for name in ("kite_en.json", "ferry_pred.json"):
        (root / "gt" / name).write_text(doc, encoding="utf-8")
    for name in ("kite_en.json", "kite_en_pred.json", "ferry_pred.json", "ferry_pred_pred.json"):
        (root / "pred" / name).write_text(doc, encoding="utf-8")
    opts = parse_options(task, {"method": "files"})
    loaded = task.load(task.Dataset(data=str(root)), opts)
    got = {s.meta["gt_file"]: s.meta["pred_file"] for s in loaded.samples}
    scored = {str(g): str(p) for _, p, g in pair_folders(root / "pred", root / "gt").pairs}
    assert got == scored
    assert got[str(root / "gt" / "kite_en.json")] == str(root / "pred" / "kite_en_pred.json")
    assert got[str(root / "gt" / "ferry_pred.json")] == str(root / "pred" / "ferry_pred.json")
