"""Small AER datasets of our own (never the published text), written into a temporary folder, and test doubles.

`write_dataset(root, ...)` lays out `<split>_data/questions.jsonl` (+ `docs.json`) like the organisers' repository;
`question(...)` / `topic(...)` build records with overridable fields so that each validation rule can be broken alone.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from emocaustics.models.base import ChatRequest, Completion

SHARED = Path(__file__).resolve().parents[3] / ".." / "shared" / "datasets" / "aer"


def published_root() -> Path:
    """The published data (EMOCAUSTICS_AER_DATA, else ../shared/datasets/aer beside the checkout); skips the test,
    saying so, when neither holds it."""
    import pytest

    env = os.environ.get("EMOCAUSTICS_AER_DATA")
    for cand in ([Path(env)] if env else []) + [SHARED]:
        if (cand / "sample_data" / "questions.jsonl").is_file():
            return cand.resolve()
    pytest.skip("published AER data not found (set EMOCAUSTICS_AER_DATA or put it in ../shared/datasets/aer)")


PNG = "data:image/png;base64," + "iVBORw0KGgo" * 40  # what the published imageUrl fields look like


def question(n: int, topic: int, gold: str | None = "A", **over: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "topic_id": topic, "id": f"q-{n}",
        "target_event": f"The harbour of town {topic} closed after event {n}.",
        "option_A": f"A storm flooded the harbour of town {topic} (question {n}).",
        "option_B": f"The mayor of town {topic} gave a speech (question {n}).",
        "option_C": f"Tourists visited town {topic} in summer (question {n}).",
        "option_D": f"A bridge in town {topic} was painted (question {n}).",
    }
    if gold is not None:
        rec["golden_answer"] = gold
    rec.update(over)
    return {k: v for k, v in rec.items() if v is not None}


def doc(i: int, topic: int, words: int = 40, **over: Any) -> dict[str, Any]:
    body = " ".join(f"word{topic}x{i}n{k}" for k in range(words)) + "."
    rec = {"title": f"Report {i} on town {topic}", "id": f"d-{topic}-{i}", "link": f"https://example.org/{topic}/{i}",
           "snippet": f"Short note {i} on town {topic}.", "source": "Example News", "imageUrl": PNG, "content": body}
    rec.update(over)
    return rec


def topic(tid: int, docs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"topic_id": tid, "topic": f"Events in town {tid}", "docs": docs if docs is not None else
            [doc(i, tid) for i in range(1, 4)]}


def write_dataset(root: Path, splits: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]] | None]],
                  reference: list[dict[str, Any]] | None = None) -> Path:
    """splits: name -> (question records, topic records or None for no docs.json)."""
    for split, (questions, topics) in splits.items():
        folder = root / f"{split}_data"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
        if topics is not None:
            (folder / "docs.json").write_text(json.dumps(topics), encoding="utf-8")
    if reference is not None:
        (root / "reference.jsonl").write_text("".join(json.dumps(r) + "\n" for r in reference), encoding="utf-8")
    return root


def standard_dataset(root: Path) -> Path:
    """sample: topics 1-3 with 2 questions each (docs); dev: topics 1, 4 (no docs); test: topic 5 with reference."""
    sample = [question(1, 1, "A"), question(2, 1, "A,B"), question(3, 2, "C"), question(4, 2, "B,C,D"),
              question(5, 3, "D"), question(6, 3, "A,C")]
    dev = [question(10, 1, "B"), question(11, 4, "C"), question(12, 4, "A,D"), question(13, 5, "D")]
    test = [question(20, 5, None), question(21, 5, None)]
    return write_dataset(root, {"sample": (sample, [topic(1), topic(2), topic(3)]), "dev": (dev, None),
                                "test": (test, [topic(5)])},
                         reference=[{"id": "q-20", "answer": "B"}, {"id": "q-21", "answer": "A,C"}])


class KeywordEmbedder:
    """Embeds a text as counts of a few marker words (then normalised): deterministic and instant; counts calls."""

    name = "keyword-double"

    def __init__(self, words: list[str]) -> None:
        self.words = words
        self.identity = f"keyword-double:{','.join(words)}"  # its vectors are kept by it (models/embedstore.py)
        self.calls: list[int] = []

    async def embed(self, texts: list[str]) -> np.ndarray:
        self.calls.append(len(texts))
        m = np.array([[t.count(w) for w in self.words] + [1e-3] for t in texts], dtype=np.float32)
        return m / np.linalg.norm(m, axis=1, keepdims=True)


class ScriptedLLM:
    """Answers each request with `answer(request, n)`: a JSON value, a str (verbatim text) or a Completion."""

    name = "scripted-double"

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.requests: list[ChatRequest] = []

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        out = []
        for r in requests:
            self.requests.append(r)
            value = self.answer(r, len(self.requests) - 1)
            if isinstance(value, Completion):
                out.append(value)
            else:
                text = value if isinstance(value, str) else json.dumps(value)
                out.append(Completion(text=text, parsed=None if isinstance(value, str) else value))
        return out
