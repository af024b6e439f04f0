"""benchmarks/planrun.py: the benchmarks' stand-in vectors travel in the EmoCaustics solver views, copies get new ids
and holders, and a run on the shared plan asks the model what the dialogue's state machine asks with those vectors."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from benchmarks.planrun import ID_STRIDE, StandInEmbeddings, copies_of, hash_vectors, options_of, samples_of


@pytest.fixture(scope="module")
def dialogues():
    from emocaustics.tasks.longdialogue.data.load import load_sample

    return sorted(load_sample().dialogues.values(), key=lambda d: d.id)[:2]


def test_copies_get_new_ids_and_holders(dialogues):
    out = copies_of(dialogues, 3)
    a, b = dialogues
    assert [d.id for d in out] == [a.id, b.id, a.id + ID_STRIDE, b.id + ID_STRIDE, a.id + 2 * ID_STRIDE,
                                   b.id + 2 * ID_STRIDE]
    assert out[0] is a and [u.holder for u in out[4].utterances] == [f"{u.holder}2" for u in a.utterances]
    assert all(x.sentence is y.sentence for x, y in zip(out[4].utterances, a.utterances))  # shared strings
    fresh = copies_of(dialogues, 2, fresh_strings=True)
    assert fresh[0] is not a and [u.holder for u in fresh[0].utterances] == [u.holder for u in a.utterances]
    assert all(x.sentence == y.sentence and x.sentence is not y.sentence
               for x, y in zip(fresh[2].utterances, a.utterances))


def test_views_carry_one_packed_copy_per_dialogue_text(dialogues):
    from ray import cloudpickle

    from emocaustics.solve.forecast import StandInEmbedder
    from emocaustics.tasks.longdialogue.embeddings import unpack

    a = dialogues[0]
    task = StandInEmbeddings("sextuple")
    window = options_of(task="sextuple", method="window")
    orig, copy = samples_of(copies_of([a], 2))
    v1, v2 = task.solver_view(orig, window), task.solver_view(copy, window)
    assert v1.input["emb"] is v2.input["emb"] and len(task._packed) == 1
    sentences = [u.sentence for u in a.utterances]
    assert np.array_equal(unpack(v1.input["emb"]), asyncio.run(StandInEmbedder().embed(sentences)))
    assert np.array_equal(hash_vectors(sentences), unpack(v1.input["emb"]))
    assert task.side_texts(v1, window) is None  # no embedding feed: nothing for the plan to embed
    assert task.solver_view(orig, options_of(task="sextuple", method="direct")).input["emb"] is None
    shipped = cloudpickle.loads(cloudpickle.dumps(task))  # what a replica gets: the task, not the driver's vectors
    assert sorted(vars(shipped)) == ["description", "methods", "name", "side", "store"] and shipped.name == "sextuple"


def test_plan_run_asks_what_the_state_machine_asks_with_the_vectors(dialogues, tmp_path):
    """The same dialogues through the plan with the task variant and through `extract_one` with the vectors packed by
    hand: the same calls, and the plan writes every prediction."""
    from emocaustics.solve.forecast import RecordingLLM, counter_for
    from emocaustics.solve.plan import asolve_samples
    from benchmarks.refdriver import extract_one
    from emocaustics.tasks.longdialogue.extract.dialogue import ExtractConfig, make_item

    task, options = StandInEmbeddings("sextuple"), options_of(task="sextuple", method="window", window=4, step=2)
    plan_llm = RecordingLLM(counter_for(None))
    rows = asyncio.run(asolve_samples(task, samples_of(dialogues), options, plan_llm, tmp_path))
    assert [(r["id"], r["ok"]) for r in rows] == [(str(d.id), True) for d in dialogues]
    assert sorted(p.name for p in tmp_path.glob("output_chat_*.json")) == sorted(
        f"output_chat_{d.id}.json" for d in dialogues)

    one_llm = RecordingLLM(counter_for(None))
    cfg = ExtractConfig(task="sextuple", method="window", window=4, step=2)
    for d in dialogues:
        sentences = [u.sentence for u in d.utterances]
        item = make_item(d.id, sentences, [u.holder for u in d.utterances], cfg, hash_vectors(sentences))
        assert asyncio.run(extract_one(one_llm, item))["ok"]
    assert plan_llm.calls == one_llm.calls == sum(r["stats"]["llm_calls"] for r in rows) > 0
