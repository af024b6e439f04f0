"""The core's one scoring fan-out (`scoring.fanout`): the rule that picks Ray, and the two tasks that fan out giving
through Ray Data exactly what they give in process (EmoCaustics' dialogues with an embedder actor pool and a judge
stage; narrative's stories as plain Ray tasks)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from emocaustics.scoring.fanout import Stage, ray_map, wants_ray

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tasks" / "longdialogue"))


@pytest.mark.parametrize("engine, units, above, allowed, expected", [
    ("auto", 51, 50, True, True), ("auto", 50, 50, True, False),  # strictly above the task's threshold
    ("auto", 5000, 50, False, False),  # the job does not allow Ray: never on auto
    ("ray", 1, 50, False, True), ("local", 10_000, 50, True, False),
])
def test_wants_ray(engine, units, above, allowed, expected):
    assert wants_ray(engine, units, above, allowed=allowed) is expected


def test_an_unknown_engine_is_refused():
    with pytest.raises(ValueError, match="expected auto, local or ray"):
        wants_ray("dask", 1, 1)


def _double(batch, *, by):
    return {"x": batch["x"] * by}


class _Add:
    def __init__(self, k):
        self.k = k

    def __call__(self, batch):
        return {"x": batch["x"] + self.k}


def test_every_item_comes_back_through_function_and_actor_stages(ray_local):
    rows = ray_map([{"x": i} for i in range(23)], [Stage(_double, {"by": 2}), Stage(_Add, {"k": 1}, actors=1)],
                   batch_size=5)
    assert sorted(int(r["x"]) for r in rows) == [2 * i + 1 for i in range(23)]


def test_emocaustics_scores_the_same_through_ray_and_in_process(ray_local):
    from test_score_engine import D1, D2, D3

    from emocaustics.tasks.longdialogue.score.engine import ascore
    from emocaustics.tasks.longdialogue.score.plan import score_with_ray
    from emocaustics.tasks.longdialogue.score.predictors import predict
    from tests.fakes.openai_embeddings import FakeEmbeddingsServer

    dialogues = [D1, D2, D3]
    for task in ("sextuple", "emotion"):
        preds = predict("baseline", task, dialogues[:2])  # D3: no prediction, a failure row
        with FakeEmbeddingsServer() as srv:
            embedder = f"openai:fake-embed@{srv.base_url}"
            local = asyncio.run(ascore(task, dialogues, preds, embedder=embedder))
            remote = score_with_ray(task, dialogues, preds, embedder=embedder, batch_size=1)
        assert remote.summary["path"] == "ray" and local.summary.get("path") != "ray"
        assert remote.dialogues.sort("dialogue").equals(local.dialogues.sort("dialogue")), task
        keys = [c for c in local.items.columns if local.items[c].dtype.is_numeric() or c in ("dialogue", "kind")]
        assert remote.items.sort(keys).equals(local.items.sort(keys)), task
        # Timing and the path differ by nature; so does distinct_texts: each Ray batch embeds its own distinct texts
        # (a text two dialogues share is embedded once per batch), and it counts what was embedded.
        same = {k for k in local.summary if not k.endswith("seconds") and k not in ("path", "distinct_texts")}
        assert {k: remote.summary[k] for k in same} == {k: local.summary[k] for k in same}, task
