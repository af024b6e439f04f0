"""What a task imports, and the registry that finds the tasks.

A task is a folder `emocaustics/tasks/<name>/` whose `__init__.py` calls `register(TheTask())` (or a package of its
own names it in the `emocaustics.tasks` entry-point group, or a test registers one directly). Its records (`Sample`,
`Loaded`, `Scored`, ...) are in `core/records.py`; the contract the core holds it to (`Task`, its parts, `CONTRACT`)
in `core/contract.py`; both are importable from here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from pathlib import Path

from emocaustics.core.answers import check_answer_models
from emocaustics.core.content import approx_tokens, content_hash, jsonable  # noqa: F401 (importable from here too)
from emocaustics.core.contract import (CONTRACT, Data, JsonlStore, Methods, Placement, PredictionStore,  # noqa: F401
                                       Report, Scorer, SideInputs, Solver, Task, builds_on, needs_model,
                                       parse_options)
from emocaustics.core.errors import UsageError
from emocaustics.core.records import (DatasetOptions, Defect, Failure, Loaded, Options, Sample, ScoreContext,  # noqa: F401
                                      Scored, Side, SolveFailed, row_schema, rows_frame)

# -- registry ----------------------------------------------------------------------------------------------------
_REGISTRY: dict[str, Task] = {}
_DISCOVERED = False


def task_packages() -> list[str]:
    """The task packages under `emocaustics/tasks/` (each a folder with an __init__.py)."""
    import pkgutil

    import emocaustics.tasks

    return sorted(f"emocaustics.tasks.{m.name}" for m in pkgutil.iter_modules(emocaustics.tasks.__path__) if m.ispkg)


ENTRY_POINT_GROUP = "emocaustics.tasks"


def _discover() -> None:
    """Import every task package once (each registers its tasks), then the tasks other installed packages declare
    in the `emocaustics.tasks` entry-point group (`name = "module:TaskClass"` or `"module:instance"`): a benchmark
    can live in a package of its own. Task packages keep their heavy imports lazy."""
    from importlib.metadata import entry_points

    global _DISCOVERED
    if not _DISCOVERED:  # set once all loaded: a broken plug-in is named again by every command that asks
        for name in task_packages():
            importlib.import_module(name)
        for ep in entry_points(group=ENTRY_POINT_GROUP):
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
        _DISCOVERED = True


def register(task: Task) -> Task:
    """Add a task to the registry (a task module calls this at import; a test may call it for its own task)."""
    check_answer_models(task)  # core/answers.py: an answer schema guided decoding cannot bound is refused here
    _REGISTRY[task.name] = task
    return task


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)


def get_task(name: str) -> Task:
    if name not in _REGISTRY:
        _discover()
    if name not in _REGISTRY and Path(name).suffix.lower() in _FILE_READERS:
        return _from_file(Path(name))
    if name not in _REGISTRY:
        raise UsageError(f"unknown task {name!r}; known tasks: {', '.join(task_names())}")
    return _REGISTRY[name]


def task_names() -> list[str]:
    _discover()
    return sorted(_REGISTRY)


# -- tasks written as files (a path ending in .yaml: tasks/yamltask) ----------------------------------------------
_FILE_READERS: dict[str, Callable[[Path], Task]] = {}  # suffix -> the reader a task package registered
_FILES: dict[Path, Task] = {}


def register_task_file(suffixes: Iterable[str], reader: Callable[[Path], Task]) -> None:
    """A task package reads task files with these suffixes: `get_task(PATH)` then registers the task it returns."""
    for suffix in suffixes:
        _FILE_READERS[suffix] = reader


def is_task_file(name: str) -> bool:
    _discover()
    return Path(name).suffix.lower() in _FILE_READERS


def _from_file(path: Path) -> Task:
    """The task of a task file, read once per process and registered under the name it gives."""
    key = path.resolve()
    if key not in _FILES:
        if not path.is_file():
            raise UsageError(f"task file {path}: no such file")
        task = _FILE_READERS[path.suffix.lower()](path)
        taken = _REGISTRY.get(task.name)
        if taken is not None and not any(t is taken for t in _FILES.values()):  # another task file's name: replaced
            raise UsageError(f"task file {path}: name: {task.name!r} is already the name of a task; give it another")
        _FILES[key] = register(task)
    return _FILES[key]
