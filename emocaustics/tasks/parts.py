"""What several tasks' classes share: a `Report` method that lives in a module of its own, imported on first use.

    view_sample = lazy("emocaustics.tasks.aer.view", "view_sample")
    report_sections = lazy("emocaustics.tasks.aer.report", "sections")

Task packages are imported by every command (the registry lists them all), so a sample page or a report section,
with its polars and matplotlib, is imported only when the viewer or the report asks for it.
"""

from __future__ import annotations

import importlib
from typing import Any


def lazy(module: str, name: str) -> Any:
    """A method that calls `module.name` with the method's arguments (without `self`)."""

    def method(self: Any, *args: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"`{module}.{name}`"
    return method
