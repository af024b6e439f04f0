"""Scoring engine: spec-exact sextuple and emotion-chain scores, embedders/judges as actors, Polars score tables.

Public API (lazy re-exports, so that importing the package stays cheap):
    score_sextuples, score_chains, ascore_sextuples, ascore_chains  (emocaustics.tasks.emocaustics.score.engine)
    ScoreResult                                                     (emocaustics.tasks.emocaustics.score.tables)
    read_sextuple_predictions, read_chain_predictions,
    write_sextuple_predictions, write_chain_predictions             (emocaustics.tasks.emocaustics.score.predictions)
    predict (built-in oracle / baseline)                            (emocaustics.tasks.emocaustics.score.predictors)
    score_with_ray                                                  (emocaustics.tasks.emocaustics.score.plan)
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
        return getattr(importlib.import_module(f"emocaustics.tasks.emocaustics.score.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'emocaustics.tasks.emocaustics.score' has no attribute {name!r}")
