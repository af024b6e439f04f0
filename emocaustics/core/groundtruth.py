"""A run whose ground truth is missing or empty (an empty `emo/` folder, a split without its gold answers, a gold file
whose conversations have no pair) would solve every sample and then report "score None" with no failure. A task that
can tell says so in its data part (`Data.check_ground_truth`); the check runs on the selected samples when they are
loaded (`jobs.preflight.load_all`), so the real run and `--dry-run` both stop before anything runs, with one line
naming the path and what is missing.
"""

from __future__ import annotations

from emocaustics.core.task import Loaded, Options, Task


def require_ground_truth(task: Task, loaded: Loaded, options: Options) -> Loaded:
    """`loaded`, once the task (when it checks) has found ground truth in it."""
    if loaded.samples:  # no sample at all is the pre-flight's own problem
        task.data.check_ground_truth(loaded, options)
    return loaded
