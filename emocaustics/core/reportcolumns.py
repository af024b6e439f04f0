"""Optional part of a task: its own per-config columns in the report (its own module because `core/task.py` is at
the line budget, like `core.sampleview` and `core.submission`).

`Task.summary_columns(options)` puts values on every row of a config (a window size, say); a task that declares
`option_column_docs` (column -> what it means, in the order shown) has those columns shown in the summary, right after
what ran, and defined in the report's glossary. The report names no task's columns itself: it asks the tasks of the
run for theirs. A task that declares none shows none, and a report mixing tasks shows the union (a config of a task
without the column leaves its cell empty).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar, Protocol, runtime_checkable


@runtime_checkable
class OptionColumns(Protocol):
    # Each column `summary_columns` returns -> one sentence for the glossary; the order is the order shown.
    option_column_docs: ClassVar[dict[str, str]]


def declared_option_columns(task_names: Iterable[str]) -> dict[str, str]:
    """The option columns (name -> meaning) the named tasks declare, first task first; a column two tasks declare is
    defined by the first. A name no task is registered under (an old run folder's) declares none."""
    from emocaustics.core.errors import UsageError
    from emocaustics.core.task import get_task

    out: dict[str, str] = {}
    for name in task_names:
        try:
            task = get_task(name)
        except UsageError:  # unregistered: its rows still show, without option columns
            continue
        if isinstance(task, OptionColumns):
            for column, doc in task.option_column_docs.items():
                out.setdefault(column, doc)
    return out
