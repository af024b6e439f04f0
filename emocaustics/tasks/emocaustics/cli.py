"""The EmoCaustics verbs: `extract sextuple|emotion`, `data fetch|stats`, and `score sextuple|emotion`."""

from __future__ import annotations

from typing import Any

from emocaustics.tasks.emocaustics.data import cli as data_cli
from emocaustics.tasks.emocaustics.extract import cli as extract_cli
from emocaustics.tasks.emocaustics.score import cli as score_cli


def register(subparsers: Any) -> None:
    data_cli.register(subparsers)
    extract_cli.register(subparsers)


def register_score(score_subparsers: Any) -> None:
    score_cli.register_score(score_subparsers)
