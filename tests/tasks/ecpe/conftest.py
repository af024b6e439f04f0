"""Fixtures of the ECPE (SemEval-2024 Task 3) tests: the published data (skipped when absent) and builders of
official-shaped records for hand-worked conversations."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

SHARED = Path(__file__).resolve().parents[3] / ".." / "shared" / "datasets" / "ecac"


def _data_root() -> Path | None:
    env = os.environ.get("EMOCAUSTICS_ECAC_DATA")
    for cand in ([Path(env)] if env else []) + [SHARED]:
        if (cand / "Subtask_1_test.json").is_file() and (cand / "Subtask_2_test.json").is_file():
            return cand.resolve()
    return None


@pytest.fixture(scope="session")
def ecac_root() -> Path:
    root = _data_root()
    if root is None:
        pytest.skip("the SemEval-2024 Task 3 data is not here (EMOCAUSTICS_ECAC_DATA or ../shared/datasets/ecac)")
    return root


def gold_conv(cid: Any, texts: list[str], emotions: list[str], pairs: list[list[str]]) -> dict[str, Any]:
    return {"conversation_ID": cid,
            "conversation": [{"utterance_ID": i, "text": t, "speaker": "AB"[i % 2], "emotion": e}
                             for i, (t, e) in enumerate(zip(texts, emotions), 1)],
            "emotion-cause_pairs": pairs}


def pred_conv(cid: Any, pairs: Any) -> dict[str, Any]:
    return {"conversation_ID": cid, "emotion-cause_pairs": pairs}


# A small conversation used by many tests. Tokens:
#  1 "I lost my job today ."       I(0) lost(1) my(2) job(3) today(4) .(5)           neutral
#  2 "Oh no , that is terrible !"  Oh(0) no(1) ,(2) that(3) is(4) terrible(5) !(6)  sadness
#  3 "But I got a new one !"       But(0) I(1) got(2) a(3) new(4) one(5) !(6)        joy
TEXTS = ["I lost my job today .", "Oh no , that is terrible !", "But I got a new one !"]
EMOTIONS = ["neutral", "sadness", "joy"]


@pytest.fixture
def build() -> SimpleNamespace:
    return SimpleNamespace(gold=gold_conv, pred=pred_conv, texts=TEXTS, emotions=EMOTIONS)
