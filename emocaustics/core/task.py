"""What a task imports, and the registry that finds the tasks.

A task is a folder `emocaustics/tasks/<name>/` whose `__init__.py` calls `register(TheTask())` (or a package of its
own names it in the `emocaustics.tasks` entry-point group, or a test registers one directly). Its records (`Sample`,
`Loaded`, `Scored`, ...) are in `core/records.py`; the contract the core holds it to (`Task`, its parts, `CONTRACT`)
in `core/contract.py`; both are importable from here.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from emocaustics.core.answers import check_answer_models
from emocaustics.core.content import content_hash, jsonable  # noqa: F401 (importable from here too)
from emocaustics.core.contract import (CONTRACT, Data, JsonlStore, Methods, Placement, PredictionStore,  # noqa: F401
                                       Report, Scorer, SideInputs, Solver, Task, builds_on, needs_model,
                                       parse_options)
from emocaustics.core.errors import UsageError
from emocaustics.core.records import (DatasetOptions, Defect, Failure, Loaded, Options, Sample, ScoreContext,  # noqa: F401
                                      Scored, Side, SolveFailed, row_schema, rows_frame)
from emocaustics.tasks import BUILT_IN  # names and packages only: a task package is imported when asked for

# -- registry ----------------------------------------------------------------------------------------------------
_REGISTRY: dict[str, Task] = {}
_DISCOVERED = False


ENTRY_POINT_GROUP = "emocaustics.tasks"


def _find(name: str) -> None:
    """Register the task `name` by importing its own package only (start-up, issue 55): a built-in one
    (`emocaustics.tasks.BUILT_IN`), else the plug-in of that name; all of them when neither holds it (a plug-in named
    apart from its task). A task file's package is imported when the file is read (`_from_file`)."""
    if name in BUILT_IN:
        importlib.import_module(f"emocaustics.tasks.{BUILT_IN[name]}")
    elif name not in _REGISTRY and not is_task_file(name):
        _discover(name)
        if name not in _REGISTRY:
            _discover()


def _discover(name: str | None = None) -> None:
    """Import every task package once (each registers its tasks), then the tasks other installed packages declare
    in the `emocaustics.tasks` entry-point group (`name = "module:TaskClass"` or `"module:instance"`): a benchmark
    can live in a package of its own. Given a name: that plug-in only. Task packages keep their heavy imports lazy."""
    from importlib.metadata import entry_points

    global _DISCOVERED
    if not _DISCOVERED:  # set once all loaded: a broken plug-in is named again by every command that asks
        for package in [] if name else sorted(set(BUILT_IN.values())):
            importlib.import_module(f"emocaustics.tasks.{package}")
        for ep in entry_points(group=ENTRY_POINT_GROUP, **({"name": name} if name else {})):
            try:
                obj = ep.load()
            except Exception as exc:  # a broken plug-in is named, never a bare traceback from deep inside import
                raise UsageError(f"task plug-in {ep.name!r} ({ep.value}, entry point group {ENTRY_POINT_GROUP}): "
                                 f"cannot load: {type(exc).__name__}: {exc}") from exc
            task = obj() if isinstance(obj, type) else obj
            if not isinstance(task, Task):
                raise UsageError(f"task plug-in {ep.name!r} ({ep.value}): not a Task subclass or instance")
            if task.name not in _REGISTRY:  # in-tree tasks and explicit registrations win over a same-named plug-in
                register(task)
        _DISCOVERED = name is None


def register(task: Task) -> Task:
    """Add a task to the registry (a task module calls this at import; a test may call it for its own task)."""
    check_answer_models(task)  # core/answers.py: an answer schema guided decoding cannot bound is refused here
    _REGISTRY[task.name] = task
    return task


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)


def get_task(name: str) -> Task:
    _find(name)
    if name not in _REGISTRY and is_task_file(name):
        return _from_file(Path(name))
    if name not in _REGISTRY:
        raise UsageError(f"unknown task {name!r}; known tasks: {', '.join(task_names())}")
    return _REGISTRY[name]


def task_names() -> list[str]:
    _discover()
    return sorted(_REGISTRY)


# -- tasks written as files (a path ending in .yaml: tasks/yamltask) ----------------------------------------------
_FILES: dict[Path, Task] = {}


def is_task_file(name: str) -> bool:
    """A suffix `emocaustics.tasks.BUILT_IN` names: its package's `task_from_file(path)` reads such a file."""
    return Path(name).suffix.lower() in BUILT_IN


def _from_file(path: Path) -> Task:
    """The task of a task file, read once per process and registered under the name it gives."""
    key = path.resolve()
    if key not in _FILES:
        if not path.is_file():
            raise UsageError(f"task file {path}: no such file")
        task = importlib.import_module(f"emocaustics.tasks.{BUILT_IN[path.suffix.lower()]}").task_from_file(path)
        taken = _REGISTRY.get(task.name)
        if taken is not None and not any(t is taken for t in _FILES.values()):  # another task file's name: replaced
            raise UsageError(f"task file {path}: name: {task.name!r} is already the name of a task; give it another")
        _FILES[key] = register(task)
    return _FILES[key]
