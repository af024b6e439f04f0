"""Which of a task's options the front doors set: the keys a job file's run may hold beside `task`, the option
`eval --split` sets and the one a selection's ids go to. The jobs code names no task's options: it asks the task's
classes.

- `LegacyRunKeys`, on a task's `Options`: `legacy_run_keys`, options that older job files wrote beside `task` in a run
  instead of under `options:`. A run moves those, and `method` (every task's option), under `options` on load; any
  other key beside `task` stays an unknown key.
- `DatasetOptions.option_for`, on a task's `Dataset`: which of its options holds what the front doors set. `split`:
  the option `eval --split` sets (a task whose data comes in subsets, say; without a declaration the option called
  `split`, when the task has one). `ids`: the option a selection's ids (`select: {ids}`, `eval --ids`) go to, so that
  the loader reads those samples alone (without one, every sample is loaded and the selection applied after).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

if TYPE_CHECKING:
    from emocaustics.core.task import Task


@runtime_checkable
class LegacyRunKeys(Protocol):
    # Options a run may still hold beside `task` (moved under `options` on load).
    legacy_run_keys: ClassVar[tuple[str, ...]]


def run_level_keys(task: Task) -> tuple[str, ...]:
    """The keys a run of `task` may hold beside `task` that belong under `options`: `method`, then what the task's
    options declare."""
    declared = task.Options.legacy_run_keys if isinstance(task.Options, LegacyRunKeys) else ()
    return ("method", *declared)


def dataset_option(task: Task, what: str) -> str | None:
    """The dataset option of `task` that holds `what` (`split` or `ids`): what its dataset options declare
    (`option_for`), else for `split` the option called `split`; None when the task has no such option."""
    field = getattr(task.Dataset, "option_for", {}).get(what, "split" if what == "split" else None)
    return field if field in task.Dataset.model_fields else None
