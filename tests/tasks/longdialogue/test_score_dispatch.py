"""One dispatch of EmoCaustics scoring (`plan.score_with_ray`): a job's `Task.score` and the `score` verb both go
through it; `ray=False` (and the reference, always) scores in this process with the embedder given, which may be the
job's loaded embedder object rather than a spec. No Ray, no model: a bag-of-characters embedder."""

from __future__ import annotations

import asyncio
import hashlib

import numpy as np
import pytest

from emocaustics.core.records import ScoreContext
from emocaustics.core.task import Sample
from emocaustics.tasks.longdialogue.data.subsets import resolve
from emocaustics.tasks.longdialogue.score.engine import ascore
from emocaustics.tasks.longdialogue.score.plan import score_with_ray
from emocaustics.tasks.longdialogue.score.predictors import predict
from emocaustics.tasks.longdialogue.task import EmoCausticsTask, EmoOptions


class BagEmbedder:
    name = "bag"

    def __init__(self) -> None:
        self.calls = 0

    async def embed(self, texts):
        self.calls += 1
        out = np.zeros((len(texts), 32), dtype=np.float32)
        for i, t in enumerate(texts):
            for ch in t:
                out[i, int(hashlib.md5(ch.encode()).hexdigest(), 16) % 32] += 1.0
        return out


def _equal(a, b) -> None:
    assert a.items.equals(b.items, null_equal=True) and a.dialogues.equals(b.dialogues, null_equal=True)
    drop = ("seconds", "embed_seconds")
    assert {k: v for k, v in a.summary.items() if k not in drop} == {k: v for k, v in b.summary.items() if k not in drop}


@pytest.mark.parametrize("task", ["sextuple", "emotion"])
@pytest.mark.parametrize("compat", ["spec", "reference"])
def test_in_process_dispatch_is_the_engine(task, compat):
    dialogues, _ = resolve("sample", None)
    preds = predict("baseline", task, dialogues)
    emb = BagEmbedder()
    got = score_with_ray(task, dialogues, preds, ray=False, embedder=emb, compat=compat)
    assert emb.calls >= 1  # the object given was used, not a model loaded from a spec
    _equal(got, asyncio.run(ascore(task, dialogues, preds, embedder=BagEmbedder(), compat=compat)))
    if compat == "spec":
        assert got.summary["path"] == "in-process"


def test_task_score_in_process_uses_the_jobs_embedder():
    task = EmoCausticsTask("sextuple", "test", ("direct",))
    dialogues, _ = resolve("sample", None)
    samples = [Sample(str(d.id), d) for d in dialogues]
    preds = predict("baseline", "sextuple", dialogues)
    emb = BagEmbedder()
    scored = task.score(samples, {str(k): v for k, v in preds.items()}, EmoOptions(method="baseline"),
                        ScoreContext(embedder=emb, use_ray=False))
    direct = asyncio.run(ascore("sextuple", dialogues, preds, embedder=BagEmbedder()))
    assert emb.calls >= 1 and scored.summary["score"] == direct.summary["score"] is not None
