"""Hand-made rating sets for the human-assessment tests.

`main_set()` (three score types: fun +qc, dull -reversed, clear +qc; systems alpha, beta; qc system "qc"):
- worker P, assignments A1 (HIT H1, 600 s) and A2 (HIT H2, 900 s): rates qc lowest on every qc score type
  (qc values 10, 20 / 15, 25 against systems 80, 90, 60, 70 / 85, 95, 65, 75: twelve distinct values) -> passes;
- worker F, assignment A3 (HIT H1 again, 360 s): rates qc highest -> fails; H1 is done by a passing and a failing
  worker;
- worker C, assignment A4 (HIT H3, 1200 s): every rating 50 (dull 50 reversed is 50 too) -> constant, fails.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest

SHARED = Path(__file__).resolve().parents[3] / ".." / "shared" / "datasets" / "humaneval"


def metadata(**over: Any) -> dict[str, Any]:
    meta = {"score": {"fun": {"positive": True, "qc": True, "max": 100},
                      "dull": {"positive": False, "qc": False, "max": 100},
                      "clear": {"positive": True, "qc": True, "max": 100}},
            "model": ["alpha", "beta"], "qc-model": "qc", "ranking": None, "sorted_scores": None}
    meta.update(over)
    return meta


def conv(model: str, fun: float, dull: float, clear: float) -> dict[str, Any]:
    return {"model": model, "score": {"fun": fun, "dull": dull, "clear": clear}}


def record(hit: str, assignment: str, worker: str, seconds: float, *convs: dict[str, Any]) -> dict[str, Any]:
    return {"result": list(convs), "hit": hit, "assignment": assignment, "worker": worker,
            "duration in seconds": seconds}


def main_set(**meta_over: Any) -> dict[str, Any]:
    return {"metadata": metadata(**meta_over), "data": [
        record("H1", "A1", "P", 600, conv("alpha", 80, 30, 90), conv("beta", 60, 50, 70), conv("qc", 10, 90, 20)),
        record("H2", "A2", "P", 900, conv("alpha", 85, 25, 95), conv("beta", 65, 45, 75), conv("qc", 15, 85, 25)),
        record("H1", "A3", "F", 360, conv("alpha", 20, 80, 30), conv("beta", 40, 60, 50), conv("qc", 90, 10, 95)),
        record("H3", "A4", "C", 1200, conv("alpha", 50, 50, 50), conv("beta", 50, 50, 50), conv("qc", 50, 50, 50)),
    ]}


@pytest.fixture
def ratings() -> dict[str, Any]:
    return copy.deepcopy(main_set())


def shared_root() -> Path | None:
    env = os.environ.get("EMOCAUSTICS_HUMANEVAL_DATA")
    for cand in ([Path(env)] if env else []) + [SHARED]:
        if (cand / "hits_data_FreeTopicRound1.json").is_file():
            return cand.resolve()
    return None


@pytest.fixture
def humaneval_root() -> Path:
    root = shared_root()
    if root is None:
        pytest.skip("published human-assessment ratings not found (EMOCAUSTICS_HUMANEVAL_DATA or "
                    "../shared/datasets/humaneval)")
    return root


@pytest.fixture
def kit() -> Any:
    """The builders above, for tests that make their own rating sets."""
    from types import SimpleNamespace

    return SimpleNamespace(metadata=metadata, conv=conv, record=record, main_set=main_set)
