"""A small round for the dialogue-judge tests: the first assignments of the shared free-topic round 1 (conversations
and the normative file's metadata), written to a folder of the shape the task reads."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[3] / ".." / "shared" / "datasets" / "humaneval"
ROUND = "FreeTopicRound1"


def shared_round() -> Path:
    for cand in ([Path(os.environ["EMOCAUSTICS_HUMANEVAL_DATA"])] if os.environ.get("EMOCAUSTICS_HUMANEVAL_DATA")
                 else []) + [SHARED]:
        if (cand / f"dialogues_{ROUND}.jsonl").exists():
            return cand
    pytest.skip("humaneval data not here ($EMOCAUSTICS_HUMANEVAL_DATA or ../shared/datasets/humaneval)")


def write_subset(dest: Path, every: int) -> Path:
    """Every conversation of every `every`-th worker of the round (a worker's QC verdict needs all of theirs; the
    file lists the assignments the workers failed in first, so the first workers alone would all fail)."""
    src = shared_round()
    dest.mkdir(parents=True, exist_ok=True)
    meta = json.loads((src / f"hits_data_{ROUND}.json").read_text())["metadata"]
    (dest / f"hits_data_{ROUND}.json").write_text(json.dumps({"metadata": meta, "data": []}))
    seen: dict[str, int] = {}
    lines = []
    for line in (src / f"dialogues_{ROUND}.jsonl").read_text().splitlines():
        w = json.loads(line)["worker"]
        if seen.setdefault(w, len(seen)) % every == 0:
            lines.append(line)
    (dest / f"dialogues_{ROUND}.jsonl").write_text("\n".join(lines) + "\n")
    return dest


@pytest.fixture(scope="session")
def small_round(tmp_path_factory) -> Path:
    """A quarter of round 1's workers (every conversation they rated)."""
    return write_subset(tmp_path_factory.mktemp("round"), 4)


@pytest.fixture(scope="session")
def tiny_round(tmp_path_factory) -> Path:
    """Every 40th worker of round 1: a handful of conversations, for calls through a model endpoint."""
    return write_subset(tmp_path_factory.mktemp("tiny"), 40)
