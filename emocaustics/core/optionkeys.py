"""Which of a task's options the front doors set: the keys a job file's run may hold beside `task`, and the option
`eval --split` sets. The jobs code names no task's options: it asks the task's classes.

- `LegacyRunKeys`, on a task's `Options`: `legacy_run_keys`, options that older job files wrote beside `task` in a run
  instead of under `options:`. A run moves those, and `method` (every task's option), under `options` on load; any
  other key beside `task` stays an unknown key.
- `SplitField`, on a task's `Dataset`: `split_field`, the dataset option that `eval --split` sets (a task whose data
  comes in subsets, say). Without a declaration it is the option called `split`, when the task has one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

if TYPE_CHECKING:
    from emocaustics.core.task import Task


@runtime_checkable
class LegacyRunKeys(Protocol):
    # Options a run may still hold beside `task` (moved under `options` on load).
    legacy_run_keys: ClassVar[tuple[str, ...]]


@runtime_checkable
class SplitField(Protocol):
    # The dataset option `--split` sets; None: the task has no split.
    split_field: ClassVar[str | None]


def run_level_keys(task: Task) -> tuple[str, ...]:
    """The keys a run of `task` may hold beside `task` that belong under `options`: `method`, then what the task's
    options declare."""
    declared = task.Options.legacy_run_keys if isinstance(task.Options, LegacyRunKeys) else ()
    return ("method", *declared)


def split_field(task: Task) -> str | None:
    """The dataset option `--split` sets for `task`: what its dataset options declare, else `split`; None when the
    task has no such option."""
    field = task.Dataset.split_field if isinstance(task.Dataset, SplitField) else "split"
    return field if field in task.Dataset.model_fields else None
