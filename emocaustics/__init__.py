"""emocaustics: a Ray-distributed evaluation cluster for LLM evaluation in emotion, event and narrative understanding.

    import emocaustics as ec
    run = ec.eval("aer", model="openai:gpt-4o-mini", split="dev", limit=10)
    run.summary, run.scores, ec.load_run(run.dir).compare(other_run_dir)

The API (`emocaustics.api`) is imported on first use: `import emocaustics` stays cheap (no Ray, Polars or pydantic).
The scoring code is `emocaustics.scoring`, so that importing it binds no `score` here: `ec.score` is the API's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Run", "Scores", "UsageError", "eval", "export", "load_run", "run", "score"]

if TYPE_CHECKING:
    from emocaustics.api import Run, eval, export, load_run, run, score  # noqa: A004
    from emocaustics.scoring.generic import Scores
    from emocaustics.core.errors import UsageError

_LAZY = {"eval": "emocaustics.api", "run": "emocaustics.api", "load_run": "emocaustics.api", "Run": "emocaustics.api",
         "score": "emocaustics.api", "export": "emocaustics.api", "Scores": "emocaustics.scoring.generic",
         "UsageError": "emocaustics.core.errors"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'emocaustics' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
