"""Acceptance on the real engine: all five task/method combinations on 10 dialogues through the smoke model (real
vLLM CPU engine in a Ray actor, via the pool's `run`), files the scorer reads, every dialogue a
prediction or a failure row, zero unparseable answers, and a second run that makes zero engine calls."""

import asyncio

import pytest

from emocaustics.tasks.longdialogue.extract.dialogue import ExtractConfig
from emocaustics.tasks.longdialogue.extract.run import run_extract
from emocaustics.tasks.longdialogue.score.predictions import read_chain_predictions, read_sextuple_predictions

pytestmark = [pytest.mark.engine, pytest.mark.slow]

COMBOS = [("sextuple", "direct"), ("sextuple", "rag"), ("sextuple", "window"), ("emotion", "direct"),
          ("emotion", "window")]


@pytest.fixture(scope="module")
def ten_dialogues(published_root):
    from emocaustics.tasks.longdialogue.data.subsets import resolve

    dialogues, _ = resolve(None, list(range(1, 11)), root=published_root)
    return dialogues


def _run_all(dialogues, base, cache):
    summaries = {}
    for task, method in COMBOS:
        frm = base / "sextuple-window" if (task, method) == ("emotion", "window") else None
        summaries[(task, method)] = run_extract(dialogues, ExtractConfig(task=task, method=method), llm_spec="smoke",
                                                out=base / f"{task}-{method}", from_dir=frm, cache_dir=cache)
    return summaries


def test_five_methods_end_to_end_then_cached(smoke_pool, ten_dialogues, tmp_path):
    ids = sorted(d.id for d in ten_dialogues)
    first = _run_all(ten_dialogues, tmp_path / "run1", tmp_path / "cache")
    for (task, method), s in first.items():
        predicted = ids if not s["failures"] else sorted(set(ids) - {f["dialogue"] for f in s["failures"]})
        assert s["dialogues"] == 10 and s["predicted"] + len(s["failures"]) == 10, (task, method, s)
        assert s["predicted"] >= 9, (task, method, s)  # nearly every dialogue came through, not just a row each
        assert all(f["reason"] for f in s["failures"])
        assert s["unparseable"] == 0, (task, method, s)  # structured output: every answer parsed first time
        assert s["llm_calls"] > 0 and s["generated_tokens"] > 0
        reader = read_sextuple_predictions if task == "sextuple" else read_chain_predictions
        got = reader(tmp_path / "run1" / f"{task}-{method}")
        assert sorted(got.predictions) == predicted
        assert all(not isinstance(v, str) for v in got.predictions.values()), got.predictions  # str = failure
    calls_before = asyncio.run(smoke_pool.stats())["calls"]
    second = _run_all(ten_dialogues, tmp_path / "run2", tmp_path / "cache")
    for key, s in second.items():
        assert s["llm_calls"] == 0 and s["cache_hits"] == first[key]["llm_calls"], (key, s)
    assert asyncio.run(smoke_pool.stats())["calls"] == calls_before  # the engine saw nothing new
    for task, method in COMBOS:
        a, b = tmp_path / "run1" / f"{task}-{method}", tmp_path / "run2" / f"{task}-{method}"
        for f in a.glob("output_*.json"):
            assert f.read_text() == (b / f.name).read_text()
