"""The benchmark helpers whose numbers go into the results: timeline arithmetic and the reference-style driver."""

from __future__ import annotations

import json

import pytest

from benchmarks.timeline import phase_of, reusable_prefix_tokens, summarize, union_seconds


def test_union_seconds_merges_overlaps_and_keeps_gaps():
    assert union_seconds([]) == 0
    assert union_seconds([(0, 2), (1, 3)]) == 3  # overlap counted once
    assert union_seconds([(0, 1), (2, 3)]) == 2  # the gap is not counted
    assert union_seconds([(0, 10), (2, 3), (4, 5)]) == 10  # nested
    with pytest.raises(ValueError):
        union_seconds([(2, 1)])


def test_phase_of_tells_each_step_by_its_schema():
    from emocaustics.solve.schema import schema_of
    from emocaustics.tasks.longdialogue.extract import parse as p

    def as_json(s):
        return json.dumps(s, sort_keys=True, ensure_ascii=False)

    assert phase_of(as_json(p.pass1_schema(5, [0, 1]))) == "window-pass1"
    assert phase_of(as_json(schema_of(p.SextupleAnswer))) == "sextuple"
    assert phase_of(as_json(p.chain_direct_schema(["A", "B"]))) == "chain-direct"
    assert phase_of(as_json(p.chain_window_schema(["A"], ["e"], 5))) == "chain-window"
    assert phase_of(as_json(schema_of(p.MergeAnswer))) == "chain-merge"
    assert phase_of(None) == "free-text"


def test_reusable_prefix_counts_whole_shared_blocks_only():
    a = {"submit": 0.0, "prompt_ids": list(range(40))}
    b = {"submit": 1.0, "prompt_ids": list(range(36)) + [999] * 10}  # shares 36 tokens with a
    c = {"submit": 2.0, "prompt_ids": [7] + list(range(40))}  # shares nothing at position 0
    assert reusable_prefix_tokens([b, a, c], 16) == [0, 32, 0]  # submit order: a first; 2 full blocks of b reused
    assert reusable_prefix_tokens([a, b], 8) == [0, 32]
    same = {"submit": 3.0, "prompt_ids": list(range(32))}
    # an identical prompt still computes its last token
    assert reusable_prefix_tokens([{"submit": 0.0, "prompt_ids": list(range(32))}, same], 16) == [0, 31]


def _rec(task, submit, finish, schema=0, n=32):
    return {"task": task, "submit": submit, "first": submit + 0.01, "finish": finish, "prompt_ids": list(range(n)),
            "generated": 10, "cached": 16, "schema": schema}


def test_summarize_engine_occupancy_and_dialogue_waiting():
    schemas = [json.dumps({"properties": {"sextuples": {}}})]
    # dialogue A: two dependent steps with a 1 s gap between them; dialogue B: one step overlapping A's first
    recs = [_rec("A", 0.0, 1.0), _rec("A", 2.0, 3.0), _rec("B", 0.5, 1.5)]
    s = summarize(recs, schemas)
    assert s["requests"] == 3 and s["generated_tokens"] == 30
    assert s["llm_phase_s"] == 3.0
    assert s["generated_tokens_per_s"] == 10.0
    assert s["engine_busy_fraction"] == pytest.approx(2.5 / 3, abs=1e-4)  # 1.5..2.0 nothing in the engine
    assert s["mean_in_flight"] == 1.0  # 3 request-seconds over 3 s
    assert s["dialogues_seen"] == 2
    assert s["dialogue_waiting_fraction"] == pytest.approx(1 - 3 / 4, abs=1e-4)  # A lived 3 s with 2 in the engine; B 1 of 1
    assert s["phases"]["sextuple"]["prefix_cache_hit_rate"] == 0.5
    failed = summarize(recs + [{**_rec("C", 0, 1), "error": "CancelledError: "}], schemas)
    assert failed["failed_requests"] == 1 and failed["requests"] == 3


def test_reference_driver_uses_the_reference_concurrency_per_method():
    from benchmarks.refdriver import REFERENCE_CONCURRENCY, reference_threads

    assert {m: reference_threads(m) for m in REFERENCE_CONCURRENCY} == {
        "sextuple/direct": 16, "sextuple/rag": 16, "sextuple/window": 1, "emotion/direct": 20, "emotion/window": 4}
    with pytest.raises(ValueError, match="no documented reference concurrency"):
        reference_threads("window")


def test_reference_driver_blocks_one_request_at_a_time_per_worker(tmp_path):
    """Sextuple window: one dialogue, one request at a time; direct: one open request per dialogue, never more. The
    items are the task's solver views (`reference_items`), window's with every utterance's vector packed in; a chain
    window item whose prior sextuple run is missing fails at step `input` without a call."""
    from benchmarks.refdriver import BlockingLLM, reference_items, run_reference_style
    from emocaustics.solve.forecast import StandInEmbedder
    from emocaustics.tasks.longdialogue.embeddings import unpack
    from emocaustics.tasks.longdialogue.data.load import load_sample
    from fakes.openai_chat import FakeOpenAIServer, Faults

    dialogues = sorted(load_sample().dialogues.values(), key=lambda d: d.id)[:3]
    window, _ = reference_items(dialogues, "sextuple/window", None, StandInEmbedder())
    assert [unpack(it["emb"]).shape for it in window] == [(len(d.utterances), StandInEmbedder.dim) for d in dialogues]
    direct, _ = reference_items(dialogues, "sextuple/direct", None, StandInEmbedder())
    assert [it["emb"] for it in direct] == [None] * 3
    skipped, _ = reference_items(dialogues, "emotion/window", tmp_path, StandInEmbedder())
    assert [it.get("skip_reason", "").startswith("no sextuple prediction") for it in skipped] == [True] * 3

    with FakeOpenAIServer(Faults(latency=0.02)) as server:
        llm = BlockingLLM("fake-model", server.base_url)
        res = run_reference_style(llm, window, "sextuple/window")
        assert res["threads"] == 1 and server.max_inflight == 1
        assert all(r["ok"] for r in res["rows"]), [r["reason"] for r in res["rows"]]
        calls = llm.calls
        assert calls == sum(r["stats"]["llm_calls"] for r in res["rows"]) > len(dialogues)
        res = run_reference_style(llm, direct, "sextuple/direct")
        assert res["threads"] == 16 and 1 < server.max_inflight <= len(dialogues)  # one open request per dialogue
        assert all(r["ok"] for r in res["rows"])
        calls = llm.calls
        res = run_reference_style(llm, skipped, "emotion/window")
        assert [(r["ok"], r["step"]) for r in res["rows"]] == [(False, "input")] * 3 and llm.calls == calls
        llm.close()


def test_replay_runs_with_the_batch_limits_the_replica_ran_with() -> None:
    pytest.importorskip("vllm")
    from benchmarks.replay import replay_options
    from emocaustics.models.vllm_actor import ENGINE_DEFAULTS

    dump = {"engine_opts": {"max_model_len": 4096}, "scheduler": {"max_num_seqs": 128, "max_num_batched_tokens": 2048}}
    opts = replay_options(dump)
    assert opts["max_num_seqs"] == 128 and opts["max_num_batched_tokens"] == 2048
    assert opts["max_model_len"] == 4096 and opts["scheduling_policy"] == ENGINE_DEFAULTS["scheduling_policy"]
    # an older dump without the limits: the replay's own defaults, said by their absence
    assert "max_num_seqs" not in replay_options({"engine_opts": {}})


def test_cpu_split_charges_each_process_to_its_group() -> None:
    import os

    from benchmarks.engine_bench import _cpu_split

    me = os.getpid()
    before = {11: 1.0, 12: 2.0, 20: 5.0, me: 3.0, -1: 0.0, 99: 7.0, 30: 4.0}
    after = {11: 4.0, 12: 3.5, 20: 6.0, me: 3.5, -1: 9.0, 99: 8.0, 100: 0.25, 30: 6.0}  # 100 started during the run
    # 30: the shared embedder child, alive across runs (its time never reaches the reaped children's, -1)
    split = _cpu_split(before, after, {"engine_pids": [11, 12], "actor_pid": 20, "child_pids": [30]})
    assert split == {"engine": 4.5, "replica_actor": 1.0, "driver": 0.5, "driver_children": 11.0, "other": 1.25}


def test_cpu_ceiling_is_the_replays_cpu_over_the_pipelines() -> None:
    """Window on 2 cores: the same engine work on both sides (76 CPU-s), plus 33.9 CPU-s of embedder, state machines
    and Ray on the pipeline's side; the replay's frontend 3.1."""
    from benchmarks.engine_bench import cpu_ceiling

    split = {"engine": 76.2, "replica_actor": 6.4, "driver": 1.0, "driver_children": 23.0, "other": 3.1}
    got = cpu_ceiling(split, {"cpu_engine_core_s": 76.1, "frontend_cpu_s": 3.1})
    assert got == {"cpu_ceiling": round(79.2 / 109.7, 3), "engine_cpu_vs_replay": round(76.2 / 76.1, 3)}
    assert cpu_ceiling(split, {}) == {"cpu_ceiling": None, "engine_cpu_vs_replay": None}  # no replay figures


def test_forced_output_holds_each_forced_row_to_its_recorded_next_token() -> None:
    """The replay's logits processor: forced rows can only take their recorded next token (whatever the model's
    logits), other rows are untouched, and rows follow their requests through vLLM's moves and removals."""
    pytest.importorskip("vllm")
    import torch
    from vllm import SamplingParams
    from vllm.v1.sample.logits_processor import BatchUpdate, MoveDirectionality

    from benchmarks.forced import KEY, ForcedOutput

    proc = ForcedOutput(None, torch.device("cpu"), False)
    out_a, out_b, out_c = [], [5], []
    forced_a = SamplingParams(extra_args={KEY: [3, 1, 2]})
    forced_b = SamplingParams(extra_args={KEY: [5, 4]})
    free_c = SamplingParams()
    proc.update_state(BatchUpdate(batch_size=3, removed=[], moved=[],
                                  added=[(0, forced_a, [9], out_a), (1, forced_b, [9], out_b), (2, free_c, [9], out_c)]))
    logits = torch.randn(3, 8)
    free_row = logits[2].clone()
    got = proc.apply(logits)
    assert got[0].argmax().item() == 3 and got[1].argmax().item() == 4  # b has generated 5 already: next is 4
    assert torch.isinf(got[0]).sum().item() == 7 and torch.equal(got[2], free_row)

    out_a.append(3)  # vLLM appends to the running lists; a request moves and one leaves
    proc.update_state(BatchUpdate(batch_size=2, removed=[1], added=[],
                                  moved=[(0, 1, MoveDirectionality.SWAP)]))
    got = proc.apply(torch.randn(2, 8))
    assert got[1].argmax().item() == 1 and not torch.isinf(got[0]).any()

    out_a.extend([1, 2])  # past the recorded tokens: left to the grammar
    assert not torch.isinf(proc.apply(torch.randn(2, 8))).any()
