"""Each test's task files leave the registry with it: a task file registers its task under the name it gives, for
the rest of the process, and a later test's task list (`data fetch nope` names every task with data to fetch) is the
tree's own, whichever order the tests run in."""

from __future__ import annotations

import pytest

from emocaustics.core import task


@pytest.fixture(autouse=True)
def _task_files_forgotten():
    before = set(task.task_names())
    yield
    for name in set(task.task_names()) - before:
        task.unregister(name)
