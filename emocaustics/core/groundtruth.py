"""Optional part of a task: a check that the samples a config selected have ground truth to score against.

A run whose ground truth is missing or empty (an empty `emo/` folder, a split without its gold answers, a gold file
whose conversations have no pair) would solve every sample and then report "score None" with no failure. A task
that can tell says so here; the check runs on the selected samples when they are loaded (`jobs.preflight.load_all`),
so the real run and `--dry-run` both stop before anything runs, with one line naming the path and what is missing.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from emocaustics.core.task import Loaded, Options


@runtime_checkable
class GroundTruthCheck(Protocol):
    def check_ground_truth(self, loaded: Loaded, options: Options) -> None:
        """Raise a `UsageError` naming the path and what is missing when `loaded.samples` (the selection) hold no
        ground truth to score against. Samples of which only some lack it are the task's rows to report, not this."""


def require_ground_truth(task: Any, loaded: Loaded, options: Options) -> Loaded:
    """`loaded`, once the task (when it checks) has found ground truth in it."""
    if loaded.samples and isinstance(task, GroundTruthCheck):  # no sample at all is the pre-flight's own problem
        task.check_ground_truth(loaded, options)
    return loaded
