"""Fixtures of the run tests; the test task and helpers live in count_task.py (imported by name: this folder is put
on sys.path here, as tests/conftest.py does for tests/)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from count_task import CountTask  # noqa: E402

from emocaustics.core.task import register, unregister  # noqa: E402


@pytest.fixture
def count_task():
    task = register(CountTask())
    yield task
    unregister(task.name)
