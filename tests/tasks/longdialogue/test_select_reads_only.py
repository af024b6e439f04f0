"""A selection's ids reach a task that can read samples alone (`Dataset.option_for`, core/optionkeys.py): `eval --ids`
of 3 dialogues read and validated all 400 of the folder before the selection threw 397 away (startup_bench: 0.35 s
of the time before the first request). The selected samples, their order and the named errors stay the same."""

from __future__ import annotations

import os
import shutil

import pytest

from emocaustics.core.errors import UsageError
from emocaustics.jobs.configs import resolve
from emocaustics.jobs.preflight import load_all
from emocaustics.jobs.spec import JobSpec
from emocaustics.tasks.longdialogue import task as emo_task
from emocaustics.tasks.longdialogue.data import load, loadcache

OLD_NS = 1_600_000_000 * 10**9  # 2020: an mtime outside the load cache's racy window (as published data)


@pytest.fixture
def reads(tmp_path, monkeypatch):
    """The dialogues read one by one (a load-cache hit reads each on first access) and the data folder."""
    monkeypatch.setattr(loadcache, "cache_root", lambda: tmp_path / "cache")
    root = shutil.copytree(load.SAMPLE_ROOT, tmp_path / "data")
    for f in root.rglob("*.json"):
        os.utime(f, ns=(OLD_NS, OLD_NS))
    load.load_corpus(root)  # the full load that writes the folder's index: later loads hit it
    read: list[int] = []
    one = load._one_dialogue

    def counted(root, did, *args, **kwargs):
        read.append(did)
        return one(root, did, *args, **kwargs)

    monkeypatch.setattr(load, "_one_dialogue", counted)
    emo_task._resolve.cache_clear()
    yield read, root
    emo_task._resolve.cache_clear()


def _loaded(root, select, tmp_path):
    job = JobSpec.model_validate({"name": "s", "dataset": {"data": str(root)}, "select": select,
                                  "runs": [{"task": "sextuple", "method": "baseline"}]})
    return next(iter(load_all(resolve(job, tmp_path / "run").configs).values()))


def test_only_the_selected_dialogues_are_read_in_the_datas_order(reads, tmp_path):
    read, root = reads
    got = _loaded(root, {"ids": ["3", "1"]}, tmp_path)
    assert [s.id for s in got.samples] == ["1", "3"]  # the data's order, as SelectSpec.apply keeps it
    assert sorted(read) == [1, 3]
    assert got.info["selected_samples"] == 2


def test_without_ids_or_with_a_limit_every_dialogue_is_read(reads, tmp_path):
    read, root = reads
    got = _loaded(root, {"limit": 2}, tmp_path)
    assert [s.id for s in got.samples] == ["1", "2"] and len(read) == got.info["loaded_samples"] > 2


def test_an_unknown_or_wordy_id_is_still_named(reads, tmp_path):
    _, root = reads
    got = _loaded(root, {"ids": ["1", "999"]}, tmp_path)
    assert isinstance(got, UsageError) and "999" in str(got) and str(root) in str(got)
    got = _loaded(root, {"ids": ["one"]}, tmp_path)  # not a dialogue number: the selection names it
    assert isinstance(got, UsageError) and "select.ids: dataset sextuple" in str(got) and "no sample one" in str(got)
