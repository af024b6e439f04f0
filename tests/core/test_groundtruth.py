"""A selection with no ground truth to score against is refused before anything runs (jobs.preflight.require_ground_truth, issue 41
point 4); the command-line cases (the dry run and the run, every task) are in tests/badinput/*/eval-*."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from emocaustics.core.errors import UsageError
from emocaustics.jobs.preflight import require_ground_truth
from emocaustics.core.task import Loaded, Task, get_task, parse_options

BASE = Path(__file__).resolve().parents[1] / "badinput"


def _emotion(tmp_path: Path, drop: list[str]) -> tuple[object, Loaded, object]:
    data = tmp_path / "data"
    shutil.copytree(BASE / "emocaustics" / "_base" / "data", data)
    for name in drop:
        (data / "emo" / name).unlink()
    task = get_task("emotion")
    options = parse_options(task, {"method": "oracle"})
    return task, task.load(task.Dataset(data=str(data)), options), options


def test_an_explicit_data_folder_is_read_not_the_repo_sample() -> None:
    dataset = get_task("sextuple").Dataset
    assert dataset(data="/x").subset == "all"  # `-D data=DIR`: every dialogue of DIR, as every other command
    assert dataset(data="/x", subset="sample").subset == "sample"  # a named subset wins
    assert dataset().subset == "sample"


def test_the_selection_is_checked_not_the_whole_folder(tmp_path: Path) -> None:
    task, loaded, options = _emotion(tmp_path, ["emo_2.json"])
    by_id = {s.id: s for s in loaded.samples}
    assert by_id["1"].input.chains and not by_id["2"].input.chains
    require_ground_truth(task, loaded, options)  # one dialogue without chains: its row says so, the run goes on
    only = Loaded([by_id["2"]], loaded.defects, loaded.info)  # `--ids 2`: nothing left to score against
    with pytest.raises(UsageError, match=r"data/emo: no emotion-chain annotation .* 1 selected dialogue"):
        require_ground_truth(task, only, options)


def test_a_task_without_the_check_and_an_empty_selection_pass_through(tmp_path: Path) -> None:
    task, loaded, options = _emotion(tmp_path, ["emo_1.json", "emo_2.json"])
    assert require_ground_truth(task, Loaded([], [], loaded.info), options).samples == []  # the pre-flight's own
    assert require_ground_truth(Task(), loaded, options) is loaded
