"""Scoring engine: spec-exact sextuple and emotion-chain scores, embedders/judges as actors, Polars score tables.

Public API (lazy re-exports, so that importing the package stays cheap):
    score_sextuples, score_chains, ascore_sextuples, ascore_chains  (emocaustics.tasks.longdialogue.score.engine)
    ScoreResult                                                     (emocaustics.tasks.longdialogue.score.tables)
    read_sextuple_predictions, read_chain_predictions,
    write_sextuple_predictions, write_chain_predictions             (emocaustics.tasks.longdialogue.score.predictions)
    predict (built-in oracle / baseline)                            (emocaustics.tasks.longdialogue.score.predictors)
    score_with_ray                                                  (emocaustics.tasks.longdialogue.score.plan)
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "score_sextuples": "engine", "score_chains": "engine", "ascore_sextuples": "engine", "ascore_chains": "engine",
    "ScoreResult": "tables", "read_sextuple_predictions": "predictions", "read_chain_predictions": "predictions",
    "write_sextuple_predictions": "predictions", "write_chain_predictions": "predictions",
    "predict": "predictors", "score_with_ray": "plan",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"emocaustics.tasks.longdialogue.score.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'emocaustics.tasks.longdialogue.score' has no attribute {name!r}")
