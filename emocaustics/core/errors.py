"""Errors a user acts on, and the exit statuses a script can rely on.

Each error is printed as one line by the command line, never as a traceback:

| status | meaning |
|---|---|
| 0 | done; every sample has a prediction and a score (or `--allow-failures` was given) |
| 2 | usage error: bad arguments, spec, path, data, or a run folder that is not free (nothing was run) |
| 3 | the command finished and wrote its outputs, but some samples failed |
| 4 | a model endpoint stopped answering (or its model service went away); finished samples are kept and `--resume` continues |
| 5 | the Ray cluster was lost (a raylet or the head died); finished samples are kept and `--resume` continues |
| 6 | the job's `max_cost_usd` would have been crossed by the next call; finished samples are kept and `--resume` continues |
| 7 | an output could not be written (a full disk, a read-only folder): the line names the path and the cause; what was written is kept and `--resume` continues once the write can succeed |
| 130 | interrupted |
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_FAILURES = 3
EXIT_ENDPOINT_DOWN = 4
EXIT_CLUSTER_LOST = 5
EXIT_BUDGET_REACHED = 6
EXIT_WRITE_FAILED = 7
EXIT_INTERRUPTED = 130


class UsageError(Exception):
    """A user mistake (bad path, unknown subset, bad spec): printed as one line, exit status 2."""

    exit_code = EXIT_USAGE


def shorten(text: object, limit: int = 80) -> str:
    """`text` as echoed in an error: a pasted 5,000-character id would bury the message, so the middle goes."""
    text = str(text)
    if len(text) <= limit:
        return text
    keep = limit - 20
    return f"{text[:keep // 2]}...({len(text)} characters)...{text[-(keep - keep // 2):]}"


class DataError(UsageError):
    """Bad input data: names the file, the record and the field (whichever are known)."""

    def __init__(self, message: str, *, file: str | None = None, record: str | int | None = None,
                 field: str | None = None) -> None:
        self.file, self.record, self.field, self.detail = file, record, field, message
        where = ", ".join(p for p in (file and str(file), record is not None and f"record {record}",
                                      field and f"field {field!r}") if p)
        super().__init__(f"{where}: {message}" if where else message)


class RunFolderTaken(UsageError):
    """`run` into a folder that already holds a run (another job's, or a finished one) without --resume/--force."""


class ResumeMismatch(UsageError):
    """`run --resume` of a job whose results would differ from those of the run in the folder."""


class NothingToResume(UsageError):
    """`run --resume` where there is no run to continue (a missing or empty folder)."""


class PreflightError(UsageError):
    """A check before anything starts failed: an endpoint, a model or embedder, or the dataset (names which)."""


class ProvenanceMismatch(UsageError):
    """Predictions scored against ground truth they were not made for (names the sample and what was expected)."""


class Stop(Exception):
    """A typed stop: the job cannot go on against its model (a dead endpoint, a reached budget, a model service gone).

    Raised by the model layer from `generate`, up through the solver and the solving plan (solve/plan.py: no further
    sample starts, those in flight end at their next call; a sample it reached is not written, so `--resume` runs
    it), and named once by the job runner, which adds where and the command that continues the run (`continued`).
    Nobody searches failure text for it."""

    exit_code = EXIT_ENDPOINT_DOWN
    hint = "to continue"  # what the resume command is for, in the one line the user sees

    def continued(self, where: str, command: str) -> Stop:
        """This stop, of its own type, with where it happened and the command that continues the run."""
        return type(self)(f"{where}: {self}; finished samples are kept; {self.hint}: {command}")


class EndpointDown(Stop):
    """A model endpoint failed too many times in a row (models/breaker.py): the job stops (exit status 4), finished
    samples are kept."""

    hint = "when the endpoint is back"


class ServiceGone(EndpointDown):
    """A model service's replica went away during a job and none came back under its name in time
    (models/comeback.py): as a dead endpoint, exit status 4."""

    hint = "once the service is served again"


class BudgetReached(Stop):
    """The next call could cross the job's `max_cost_usd` (models/budget.py): the job stops before it (exit status
    6), finished samples are kept and `--resume` continues."""

    exit_code = EXIT_BUDGET_REACHED
    hint = "to continue (with a new budget for the rest)"


class WriteFailed(Stop):
    """A file of the run could not be written (a full disk, a read-only folder; `core.writes`): a typed stop (exit
    status 7), one line naming the path and the cause; what was written is kept and `--resume` continues."""

    exit_code = EXIT_WRITE_FAILED

    def __init__(self, what: str, when: str = "once there is room", line: str | None = None) -> None:
        self.what, self.when = what, when  # "cannot write PATH: CAUSE", and when a resume can go on
        super().__init__(line or f"{what}; what was written is kept, and `--resume` continues {when}")

    def continued(self, where: str, command: str) -> WriteFailed:
        return WriteFailed(self.what, self.when, f"{where}: {self.what}; what was written is kept; {self.when}, to "
                                                 f"continue: {command}")


class SamplesFailed(Exception):
    """The command finished and wrote its outputs, but `count` samples failed (exit status 3)."""

    exit_code = EXIT_FAILURES

    def __init__(self, count: int, total: int, where: str = "") -> None:
        self.count, self.total = count, total
        super().__init__(f"{count} of {total} samples failed{' (' + where + ')' if where else ''}; "
                         "exit status 3 (pass --allow-failures to exit 0 when samples fail)")
