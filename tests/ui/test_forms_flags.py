"""The workbench's human-process form: its optional fields become the verb's flags, blanks are left out."""

from pathlib import Path

from emocaustics.ui.forms import plan
from emocaustics.ui.paths import Folders


def test_human_process_passes_the_optional_fields_given_and_only_those(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "hits.csv").write_text("x\n", encoding="utf-8")
    folders = Folders(root, tmp_path / "out")
    job = tmp_path / "out" / "jobs" / "0001"
    _, [(_, argv)] = plan("human-process", {"hits": "hits.csv", "ranking": " z ", "qc_threshold": "0.05"},
                          folders, job)
    assert argv[-4:] == ["--ranking", "z", "--qc-threshold", "0.05"]
    _, [(_, argv)] = plan("human-process", {"hits": "hits.csv", "ranking": "  ", "qc_threshold": None}, folders, job)
    assert argv == ["human", "process", str(root / "hits.csv"), "--out", str(job / "run")]
