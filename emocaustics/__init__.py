"""emocaustics: a Ray-distributed evaluation cluster for LLM evaluation in emotion, event and narrative understanding.

    import emocaustics as ec
    run = ec.eval("aer", model="openai:gpt-4o-mini", split="dev", limit=10)
    run.summary, run.scores, ec.load_run(run.dir).compare(other_run_dir)

The API (`emocaustics.api`) is imported on first use: `import emocaustics` stays cheap (no Ray, Polars or pydantic).
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Run", "Scores", "UsageError", "eval", "export", "load_run", "run", "score"]

if TYPE_CHECKING:
    from emocaustics.api import Run, eval, export, load_run, run, score  # noqa: A004
    from emocaustics.score.generic import Scores
    from emocaustics.core.errors import UsageError

_LAZY = {"eval": "emocaustics.api", "run": "emocaustics.api", "load_run": "emocaustics.api", "Run": "emocaustics.api",
         "score": "emocaustics.api", "export": "emocaustics.api", "Scores": "emocaustics.score.generic",
         "UsageError": "emocaustics.core.errors"}


class _Package(types.ModuleType):
    """`ec.score` is the API function although `emocaustics.score` is also a subpackage (the scoring code): the import
    system's binding of that subpackage onto this package is kept aside. `from emocaustics.score.X import Y` and
    `importlib.import_module("emocaustics.score")` are unaffected (they go through sys.modules)."""

    @property
    def score(self) -> Any:
        from emocaustics.api import score

        return score

    @score.setter
    def score(self, module: Any) -> None:
        self.__dict__["_score_package"] = module


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'emocaustics' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
