"""Fixtures the job tests share: `count_task`, the run tests' stand-in task (tests/runs/count_task.py), registered for
one test."""

from __future__ import annotations

from pathlib import Path

import pytest

RUNS = Path(__file__).resolve().parents[1] / "runs"  # count_task.py, the test task


@pytest.fixture
def count_task(monkeypatch):
    monkeypatch.syspath_prepend(str(RUNS))
    from count_task import CountTask

    from emocaustics.core.task import register, unregister

    task = register(CountTask())
    yield task
    unregister(task.name)
