"""The EmoCaustics verbs: `extract sextuple|emotion`, `data stats`, and `score sextuple|emotion` (its data is fetched by
the core's `data fetch emocaustics`)."""

from __future__ import annotations

from typing import Any

from emocaustics.tasks.longdialogue.data import cli as data_cli
from emocaustics.tasks.longdialogue.extract import cli as extract_cli
from emocaustics.tasks.longdialogue.score import cli as score_cli


def register(subparsers: Any) -> None:
    extract_cli.register(subparsers)


def register_data(data_subparsers: Any) -> None:
    data_cli.register_data(data_subparsers)


def register_score(score_subparsers: Any) -> None:
    score_cli.register_score(score_subparsers)
