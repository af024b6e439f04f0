"""A run of a task file, read again in another process (`emocaustics export`, `emocaustics report`): the run folder
names the task by the file's `name:`, which only the process that read the file knows. Each config's provenance
records the file (`dataset_info.task_file`, an absolute path since issue 53); reading it registers the task under its
name again, so every reader of the run looks the task up by name as for any other task."""

from __future__ import annotations

from pathlib import Path

from emocaustics.core.errors import UsageError


def register_run_tasks(run_dir: Path) -> None:
    """Register the task of every task file the configs of `run_dir` were made from; a file that is gone is one
    `UsageError` naming it and the provenance that recorded it."""
    from emocaustics.core.provenance import read
    from emocaustics.core.task import get_task, task_names

    for folder in sorted(Path(run_dir).glob("predictions/*/")):
        rec = read(folder) or {}
        path = (rec.get("dataset_info") or {}).get("task_file")
        if not path or rec.get("task") in task_names():
            continue
        if not Path(path).is_file():
            raise UsageError(f"{folder / 'provenance.json'}: task {rec.get('task')!r} was read from the task file "
                             f"{path}, which is not there (put it back to export or report this run)")
        get_task(path)
