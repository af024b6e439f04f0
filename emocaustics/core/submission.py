"""Optional part of a task: a submission writer. A task whose `finalize` writes the files a benchmark's leaderboard
takes (a Codabench zip, the organisers' JSON) declares them, so the front doors (`eval --submission-file`,
`ec.eval(submission_file=...)`) know before running whether there is one, and which file to hand over."""

from __future__ import annotations

from typing import ClassVar, Protocol, runtime_checkable


@runtime_checkable
class SubmissionWriter(Protocol):
    # File names `finalize` writes in the config's predictions folder, the default first (a target path picks the
    # one with its suffix).
    submission_files: ClassVar[tuple[str, ...]]
