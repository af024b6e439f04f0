"""EmoCaustics dialogues on the shared plan (`solve.plan`): every dialogue becomes a prediction file or a failure row
with a reason; the response cache makes a second run call the model zero times; placement's weight and chain of a
dialogue's work item."""

import asyncio
import json
import re

import numpy as np

from emocaustics.tasks.longdialogue.embeddings import pack, unpack
from benchmarks.refdriver import extract_one
from emocaustics.tasks.longdialogue.extract.dialogue import ExtractConfig, make_item
from emocaustics.models.base import Completion
from emocaustics.models.cache import CachedLLM, ResponseCache
from extract_doubles import Dialogue, SchemaLLM, solve_dialogues, unit_vectors


def items_for(cfg, n_dialogues=3, n=8, emb=True):
    out = []
    for d in range(1, n_dialogues + 1):
        sents = [f"对话{d}第{i}句" for i in range(n)]
        out.append(make_item(d, sents, [str(i % 2 + 1) for i in range(n)], cfg,
                             emb=unit_vectors(list(range(n))) if emb else None))
    return out


def dialogues(n_dialogues=3, n=8):
    return [Dialogue(d, [f"对话{d}第{i}句" for i in range(n)], [str(i % 2 + 1) for i in range(n)])
            for d in range(1, n_dialogues + 1)]


def test_pack_roundtrip():
    a = np.random.default_rng(0).random((5, 3), dtype=np.float32)
    assert np.array_equal(unpack(json.loads(json.dumps(pack(a)))), a)


def test_all_methods_write_reference_shapes(tmp_path, monkeypatch):
    for task, method in [("sextuple", "direct"), ("sextuple", "rag"), ("sextuple", "window"),
                         ("emotion", "direct"), ("emotion", "window")]:
        cfg = ExtractConfig(task=task, method=method, window=4, step=2)
        out = tmp_path / f"{task}-{method}"
        rows = solve_dialogues(SchemaLLM(), dialogues(), cfg, out, monkeypatch=monkeypatch)
        assert [r["ok"] for r in rows] == [True] * 3, rows
        prefix = "output_chat" if task == "sextuple" else "output_emotions"
        for d in (1, 2, 3):
            pred = json.loads((out / f"{prefix}_{d}.json").read_text())
            if task == "sextuple":
                assert len(pred) == 8 and pred[0]["input_sentence"] == f"对话{d}第0句"
                assert ("event" in pred[0]) == (method == "window")
            else:
                assert set(pred) == {"1", "2"} and all("events" in v for v in pred.values())
        assert not (out / "failures.jsonl").exists()


def test_failures_are_rows_with_reasons_and_files_are_not_written(tmp_path):
    cfg = ExtractConfig(task="sextuple", method="direct")

    def answer(req, n):
        if "对话2" in req.messages[-1]["content"]:
            return Completion(text="", error="engine error: boom")
    prior = tmp_path / "prior"  # the chain window's sextuple run: 10 has none
    prior.mkdir()
    for d in (1, 2, 3, 9):
        (prior / f"output_chat_{d}.json").write_text("[]")
    chain = ExtractConfig(task="emotion", method="window")
    rows = solve_dialogues(SchemaLLM(answer), dialogues() + [Dialogue(9, [], [])], cfg, tmp_path)
    rows += solve_dialogues(SchemaLLM(), [Dialogue(10, ["x"], ["1"])], chain, tmp_path, prior=prior)
    by = {int(r["id"]): r for r in rows}
    assert by[1]["ok"] and by[3]["ok"] and not by[2]["ok"]
    assert by[2]["step"] == "direct utterance 0" and "engine error: boom" in by[2]["reason"]
    assert by[9]["reason"] == "the dialogue has no utterances"
    assert by[10]["step"] == "input" and by[10]["reason"] == f"no sextuple prediction (output_)chat_10.json in {prior}"
    assert not (tmp_path / "output_chat_2.json").exists()
    failed = [json.loads(line) for line in (tmp_path / "failures.jsonl").read_text().splitlines()]
    assert sorted(f["dialogue"] for f in failed) == [2, 9, 10]
    assert all((f["step"], f["reason"]) == (by[f["dialogue"]]["step"], by[f["dialogue"]]["reason"]) for f in failed)
    from emocaustics.core.task import Failure, get_task

    found = get_task("sextuple").store.read_predictions(tmp_path)  # what a resume reads back: by sample id
    assert set(found) == {"1", "2", "3", "9", "10"} and isinstance(found["1"], list)
    assert isinstance(found["2"], Failure) and found["2"].reason == by[2]["reason"]


def test_a_crashing_state_machine_is_a_failure_row(tmp_path, monkeypatch):
    from emocaustics.tasks.longdialogue.extract import dialogue

    async def crash(*args, **kwargs):
        raise AssertionError("a bug in the state machine")

    monkeypatch.setattr(dialogue, "_method", crash)  # a bug, not a silent skip
    rows = solve_dialogues(SchemaLLM(), dialogues(1, 2), ExtractConfig(task="sextuple", method="direct"), tmp_path)
    assert not rows[0]["ok"] and rows[0]["step"] == "runner" and "AssertionError" in rows[0]["reason"]


def test_second_run_makes_zero_model_calls(tmp_path, monkeypatch):
    cfg = ExtractConfig(task="emotion", method="window", window=4, step=2)
    inner = SchemaLLM()
    cache = ResponseCache(tmp_path / "cache.sqlite")
    llm = CachedLLM(inner, cache)
    rows1 = solve_dialogues(llm, dialogues(), cfg, tmp_path / "a", monkeypatch=monkeypatch)
    calls = len(inner.requests)
    assert calls > 0 and sum(r["stats"]["llm_calls"] for r in rows1) == calls
    rows2 = solve_dialogues(llm, dialogues(), cfg, tmp_path / "b", monkeypatch=monkeypatch)
    assert len(inner.requests) == calls  # nothing new reached the model
    assert sum(r["stats"]["llm_calls"] for r in rows2) == 0
    assert sum(r["stats"]["cache_hits"] for r in rows2) == calls
    assert sum(r["stats"]["generated_tokens"] for r in rows2) == 0
    for d in (1, 2, 3):
        assert (tmp_path / "a" / f"output_emotions_{d}.json").read_text() == (tmp_path / "b" / f"output_emotions_{d}.json").read_text()


def test_extract_one_is_plain_data_in_and_out():
    cfg = ExtractConfig(task="sextuple", method="window", window=4, step=2)
    row = asyncio.run(extract_one(SchemaLLM(), items_for(cfg, 1)[0]))
    json.dumps(row)  # travels back from a Ray actor
    assert row["ok"] and row["stats"]["llm_calls"] == 4 + 8  # 4 pass-1 windows, 8 pass-2 utterances


def test_extract_one_retrieves_with_the_embeddings_packed_in_its_item():
    cfg = ExtractConfig(task="sextuple", method="rag", window=2, step=1, top_k=1)
    item = make_item(1, [f"第{i}句" for i in range(6)], ["1", "2"] * 3, cfg, emb=unit_vectors([0, 1, 2, 3, 0, 5]))
    llm = SchemaLLM()
    assert asyncio.run(extract_one(llm, item))["ok"]
    prompt = next(r.messages[-1]["content"] for r in llm.requests if "编号 4" in r.messages[-1]["content"])
    assert "[0] 1：第0句" in prompt.split("最近的对话")[0]  # utterance 0, found by its embedding


def test_item_weight_follows_the_answers_a_method_generates():
    """Placement weights: window answers every utterance twice (pass 1 and 2), chain direct once per holder whatever
    the length, a chain window run on a prior sextuple run costs less than one that makes its own."""
    from emocaustics.tasks.longdialogue.extract.dialogue import item_weight

    def w(n, holders=2, prior=None, **cfg):
        item = make_item(1, [f"第{i}句" for i in range(n)], [str(i % holders) for i in range(n)], ExtractConfig(**cfg))
        return item_weight({**item, "prior": prior})

    # 100 short utterances (390 characters): the prompt text adds little
    assert w(100, task="sextuple", method="direct") == 100
    assert w(100, task="sextuple", method="rag") == 100 + round(24 * 390 / 1200)  # K=20 + top 3 + itself per call: 108
    assert w(100, task="sextuple", method="window") == 2 * 100 + round(2 * 20 * 390 / 5 / 1200)  # 203
    assert w(280, task="emotion", method="direct") == w(20, task="emotion", method="direct") == 6
    assert w(280, task="emotion", method="direct", holders=4) == 12
    own = w(100, task="emotion", method="window")
    assert w(100, task="emotion", method="window", prior=[{}] * 100) < own
    assert own > w(100, task="sextuple", method="window")


def test_item_weight_counts_the_prompt_text_a_prefix_cache_cannot_serve():
    """165 utterances of 120 characters: rag's prompts (retrieved lines first) and window's windows are new text to the
    prefix cache, 1200 characters to an answer; direct's calls share the dialogue as their prefix."""
    from emocaustics.tasks.longdialogue.extract.dialogue import item_weight

    def w(**cfg):
        return item_weight(make_item(1, ["好" * 120] * 165, ["A"] * 165, ExtractConfig(**cfg)))

    assert w(task="sextuple", method="direct") == 165
    assert w(task="sextuple", method="rag") == 165 + 24 * 165 * 120 // 1200 == 561
    assert w(task="sextuple", method="window") == 2 * 165 + 2 * 20 * 165 * 120 // 5 // 1200 == 462


def test_item_chain_counts_the_answers_that_wait_for_each_other():
    """Placement's chain: window's pass 1 answers every utterance in sequence, then one round of pass 2; the chain
    method adds one per chain window and the merge, and skips the sextuple pass with a prior run; direct and rag answer
    side by side."""
    from emocaustics.tasks.longdialogue.extract.dialogue import item_chain

    def c(n, prior=None, **cfg):
        item = make_item(1, [f"第{i}句" for i in range(n)], ["A"] * n, ExtractConfig(**cfg))
        return item_chain({**item, "prior": prior})

    assert c(8, task="sextuple", method="window", window=4, step=2) == 8 + 1
    assert c(285, task="sextuple", method="window") == c(285, task="sextuple", method="window", window=10) == 285 + 1
    assert c(285, task="emotion", method="window") == (285 + 1) + 29 + 1  # its own sextuple run, 29 windows, merge
    assert c(285, task="emotion", method="window", prior=[{}] * 285) == 29 + 1
    assert c(285, task="sextuple", method="direct") == c(285, task="sextuple", method="rag") == 1
    assert c(285, task="emotion", method="direct") == 1


def test_the_longest_dialogue_starts_first_and_rows_keep_the_items_order(tmp_path):
    """With more dialogues than `concurrency`, a long dialogue (the run's critical path) must not queue behind short
    ones: dialogues start longest first; the rows come back in the items' order."""
    cfg = ExtractConfig(task="sextuple", method="direct")
    ds = [Dialogue(d, [f"样本{d}号第{i}句" for i in range(n)], ["1"] * n) for d, n in [(1, 2), (2, 6), (3, 4)]]
    llm = SchemaLLM()
    rows = solve_dialogues(llm, ds, cfg, tmp_path, concurrency=1)
    started = [int(re.search(r"样本(\d)号", r.messages[-1]["content"]).group(1)) for r in llm.requests]
    assert started == [2] * 6 + [3] * 4 + [1] * 2
    assert [r["id"] for r in rows] == ["1", "2", "3"] and all(r["ok"] for r in rows)


def _peak_in_flight(ds, concurrency: int, tmp_path, measure) -> int:
    """The peak of `measure(dialogue ids running)` while `ds` are solved at `concurrency` (a dialogue runs from its
    first call to its row)."""
    running: set[int] = set()
    peak = [0]

    class Watching(SchemaLLM):
        async def generate(self, requests):
            for r in requests:
                running.add(int(re.search(r"样本(\d+)号", r.messages[-1]["content"]).group(1)))
            peak[0] = max(peak[0], measure(running))
            await asyncio.sleep(0.01)
            return await super().generate(requests)

    rows = solve_dialogues(Watching(), ds, ExtractConfig(task="sextuple", method="direct"), tmp_path,
                           concurrency=concurrency, on_row=lambda row: running.discard(int(row.id)))
    assert all(r["ok"] for r in rows)
    return peak[0]


def test_utterances_in_flight_are_bounded_when_dialogues_run_in_this_process(tmp_path, monkeypatch):
    """In this process a dialogue holds its answers until it ends, so ten times the data must not mean ten copies of
    the longest dialogues at once: at most `UNITS_IN_FLIGHT` utterances in flight (here 10).
    Lengths 6, 5, 4, 3: 6 runs alone (6 + 5 = 11 > 10), then 5 + 4 = 9, then 3: the peak is 9 (11 by count alone)."""
    from emocaustics.solve import plan

    monkeypatch.setattr(plan, "UNITS_IN_FLIGHT", 10)
    lengths = {1: 3, 2: 6, 3: 4, 4: 5}
    ds = [Dialogue(d, [f"样本{d}号第{i}句" for i in range(n)], ["1"] * n) for d, n in lengths.items()]
    assert _peak_in_flight(ds, 2, tmp_path, lambda running: sum(lengths[d] for d in running)) == 9


def test_the_bound_does_not_hold_back_the_dataset_at_a_jobs_default_concurrency(tmp_path):
    """The bound is on utterances in flight, not per slot: at a job's default of 64 dialogues in flight, 64 dialogues
    as long as EmoCaustics' longest (about 190 utterances) all run at once. Per slot (96 each, 6,144 in all) only 32
    of them did, and the window run over the dataset idled a quarter of the endpoint's slots for its first 8 s."""
    from emocaustics.jobs.spec import JobSpec

    concurrency = JobSpec.model_fields["concurrency"].default
    ds = [Dialogue(d, [f"样本{d}号第{i}句" for i in range(190)], ["1"] * 190) for d in range(1, concurrency + 5)]
    assert _peak_in_flight(ds, concurrency, tmp_path, len) == concurrency
