"""The eval log's decisions (issue 44, `make mutation evallog=x`), pinned fast and without Ray or a writer process.

record.py: what a sample's log keeps per call (`Recorder.add`: the row's fields, tokens, start against the recorder's
own clock, latency; `prompts=False` keeps no text), what a solver's `note` sets, how prompt text is cut into chunks
stored once by hash (`Chunker`: texts of up to 200 characters or of one line are one chunk; a paragraph ends at a
blank line; a chunk ends after a line whose crc32 ends in two zero bits; a paragraph that extends a recent one is
chunked from that one's last chunk and gives the chunks of the whole), `to_json`, `dumps`, `replica_id`.
The clock is a stand-in (`time.perf_counter` of the module reads a list), Ray is a stand-in module in `sys.modules`.
Which of the test lines end a chunk was worked out once by hand from crc32 (`BOUND` lists them) and is pinned.

read.py: a run folder written by hand in the writer's format (Parquet tables with the writer's schemas, staged JSON
lines, texts parts, configs.json or provenance files, scores and items): labels and their order, attempts (staged and
compacted, latest per sample), calls, the status table (`missing` for a planned sample the run never solved), one
sample's detail, and the size report's figures, all computed by hand.
"""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import numpy as np
import polars as pl
import pytest

from emocaustics.evallog import record
from emocaustics.evallog.record import Chunker, Finished, Recorder, chunks, dumps, recording, replica_id, text_hash
from emocaustics.models.base import ChatRequest, Completion, ModelBase, Sampling


def L(i: int) -> str:
    """A 38-character line; lines 1, 4, 9 and 12 end a chunk (their crc32 ends in two zero bits), the others not."""
    return f"line {i:02d} of the long system prompt here"


BOUND = {1, 4, 9, 12}


def lines(a: int, b: int) -> str:
    return "\n".join(L(i) for i in range(a, b))


# -- dumps and hashes ------------------------------------------------------------------------------------------------
def test_dumps_writes_compact_utf8_json_in_insertion_order_unless_sorted() -> None:
    assert dumps({"b": 1, "a": "é"}) == '{"b":1,"a":"é"}'
    assert dumps({"b": 1, "a": "é"}, sort_keys=True) == '{"a":"é","b":1}'
    assert dumps({1: np.int64(3)}) == '{"1":3}'  # non-string keys and numpy numbers
    assert dumps({"x": Path("p")}) == '{"x":"p"}'  # what it cannot encode: str()
    assert dumps({"x": Path("p")}, default=lambda v: "D") == '{"x":"D"}'


def test_dumps_falls_back_to_the_standard_encoder_for_huge_integers() -> None:
    assert dumps({"b": 2**70, "é": 1}) == '{"b": 1180591620717411303424, "é": 1}'
    assert dumps({"b": 2**70, "a": 1}, sort_keys=True) == '{"a": 1, "b": 1180591620717411303424}'
    assert dumps({"b": 2**70, "p": Path("q")}) == '{"b": 1180591620717411303424, "p": "q"}'
    assert dumps([2**70, Path("q")], default=lambda v: "D") == '[1180591620717411303424, "D"]'


def test_text_hash_is_16_hex_digits_of_blake2b() -> None:
    assert text_hash("abc") == "d8bb14d833d59559"
    assert text_hash("é") != text_hash("e") and len(text_hash("é")) == 16


# -- chunks ----------------------------------------------------------------------------------------------------------
def test_short_texts_and_one_line_texts_are_one_chunk() -> None:
    short = "a\n" + "x" * 198  # 200 characters with a newline
    assert len(short) == 200 and chunks(short) == [short]
    one_line = "y" * 500
    assert chunks(one_line) == [one_line]
    ch = Chunker()
    assert ch.refs(short) == [text_hash(short)] and ch.texts == {text_hash(short): short}


def test_a_text_over_200_characters_is_cut_after_its_boundary_lines() -> None:
    text = lines(0, 8)  # 311 characters
    assert chunks(text) == [L(0) + "\n" + L(1) + "\n", lines(2, 5) + "\n", lines(5, 8)]
    tiny = "a\n" + "x" * 199  # 201 characters, no boundary line inside: one chunk still
    assert chunks(tiny) == [tiny]


def test_a_boundary_line_at_the_very_end_makes_no_empty_chunk() -> None:
    text = lines(0, 10)  # ends with line 9, a boundary line
    assert chunks(text) == [L(0) + "\n" + L(1) + "\n", lines(2, 5) + "\n", lines(5, 10)]
    assert chunks(text + "\n") == [L(0) + "\n" + L(1) + "\n", lines(2, 5) + "\n", lines(5, 10) + "\n"]


def test_paragraphs_end_at_blank_lines_and_keep_them() -> None:
    text = "intro line\n\n" + lines(0, 8) + "\n\n" + "tail"
    assert chunks(text) == ["intro line\n\n", L(0) + "\n" + L(1) + "\n", lines(2, 5) + "\n", lines(5, 8) + "\n\n",
                            "tail"]
    assert chunks(lines(0, 8) + "\n\n") == [L(0) + "\n" + L(1) + "\n", lines(2, 5) + "\n", lines(5, 8) + "\n\n"]
    # blank lines alone: an empty line always ends a chunk (its crc32 is 0)
    assert chunks("\n\n\n\n" + "z" * 200) == ["\n", "\n", "\n", "\n", "z" * 200]


def test_chunks_are_stored_once_by_hash_and_refs_join_back() -> None:
    ch = Chunker()
    a = "intro line\n\n" + lines(0, 8)
    b = "other intro\n\n" + lines(0, 8)
    ra, rb = ch.refs(a), ch.refs(b)
    assert ra[1:] == rb[1:] and ra[0] != rb[0]
    assert len(ch.texts) == 5 and "".join(ch.texts[h] for h in ra) == a and "".join(ch.texts[h] for h in rb) == b
    assert ra[0] == text_hash("intro line\n\n") and ch.texts[ra[0]] == "intro line\n\n"
    assert ch.refs(a) == ra and len(ch.texts) == 5  # seen before: the same refs


def test_a_longer_history_is_chunked_like_the_whole_text() -> None:
    ch = Chunker()
    first = ch.refs("intro line\n\n" + lines(0, 8))
    second = ch.refs("intro line\n\n" + lines(0, 11))  # three lines more; line 9 ends a chunk
    assert [ch.texts[h] for h in second] == ["intro line\n\n", L(0) + "\n" + L(1) + "\n", lines(2, 5) + "\n",
                                             lines(5, 10) + "\n", L(10)]
    assert second[:3] == first[:3]
    third = ch.refs(lines(0, 14) + "\n\nend")  # longer again, now with its blank-line end; 12 ends a chunk
    assert [ch.texts[h] for h in third] == [L(0) + "\n" + L(1) + "\n", lines(2, 5) + "\n", lines(5, 10) + "\n",
                                            lines(10, 13) + "\n", L(13) + "\n\n", "end"]
    fresh = Chunker()
    assert [fresh.texts[h] for h in fresh.refs(lines(0, 14) + "\n\nend")] == [ch.texts[h] for h in third]


def test_a_paragraph_that_only_shares_a_prefix_is_chunked_afresh() -> None:
    ch = Chunker()
    ch.refs(lines(0, 8))
    other = lines(0, 3) + "\nsomething else entirely, a new line here\n" + lines(5, 8)
    assert [ch.texts[h] for h in ch.refs(other)] == chunks(other) == [
        L(0) + "\n" + L(1) + "\n", other[78:]]


def test_an_extension_after_four_other_paragraphs_is_still_right() -> None:
    ch = Chunker()
    ch.refs(lines(0, 8))
    for k in range(5):
        ch.refs(f"para {k}\n" + "q" * 210)
    got = [ch.texts[h] for h in ch.refs(lines(0, 11))]
    assert got == [L(0) + "\n" + L(1) + "\n", lines(2, 5) + "\n", lines(5, 10) + "\n", L(10)]


def test_a_paragraph_as_long_as_a_recent_one_is_not_an_extension() -> None:
    ch = Chunker()
    ch.refs(lines(0, 8))
    same_len = lines(0, 7) + "\n" + L(7).upper()
    assert [ch.texts[h] for h in ch.refs(same_len)] == [L(0) + "\n" + L(1) + "\n", lines(2, 5) + "\n",
                                                         lines(5, 7) + "\n" + L(7).upper()]


# -- the recorder ----------------------------------------------------------------------------------------------------
class Clock:
    def __init__(self, *ticks: float) -> None:
        self.ticks = list(ticks)

    def perf_counter(self) -> float:
        return self.ticks.pop(0)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock(100.0)
    monkeypatch.setattr(record, "time", c)
    return c


SCHEMA = {"type": "object", "properties": {"é": {"type": "string"}}}


def _req(user: str = "question", schema: dict | None = None) -> ChatRequest:
    return ChatRequest(messages=({"role": "system", "content": "be brief"}, {"role": "user", "content": user}),
                       schema=schema, sampling=Sampling(max_tokens=64, temperature=0.5, top_p=0.9, seed=None))


def test_a_call_row_holds_sampling_tokens_timing_and_the_texts_as_sent(clock: Clock) -> None:
    rec = Recorder()
    req = _req(schema=SCHEMA)
    rec.add(req, Completion(text='{"a": 1}', parsed={"a": 1}, prompt_tokens=12, generated_tokens=5, cached=True,
                            repaired=True), 100.123456, 0.98765)
    rec.add(_req("q2"), Completion(text="", error="timed out", prompt_tokens=None, generated_tokens=None), 101.5, 2)
    first, second = rec.calls
    assert first == {"seq": 0, "start": 0.1235, "latency": 0.9877,
                     "sampling": {"max_tokens": 64, "temperature": 0.5, "top_p": 0.9, "seed": None},
                     "prompt_tokens": 12, "generated_tokens": 5, "cached": True, "repaired": True, "error": None,
                     "step": None, "attempt": None, "parse_error": None,
                     "messages": [["system", "be brief"], ["user", "question"]], "schema": SCHEMA,
                     "text": '{"a": 1}', "parsed": '{"a":1}'}
    assert first["schema"] is SCHEMA
    assert (second["seq"], second["start"], second["latency"]) == (1, 1.5, 2)
    assert (second["prompt_tokens"], second["generated_tokens"], second["cached"], second["repaired"]) == (0, 0, False,
                                                                                                         False)
    assert second["error"] == "timed out" and second["parsed"] is None and second["schema"] is None
    assert type(second["prompt_tokens"]) is int and type(second["cached"]) is bool


def test_a_completion_without_a_repaired_flag_and_a_message_without_fields(clock: Clock) -> None:
    rec = Recorder()
    req = SimpleNamespace(messages=({},), schema=None, sampling=Sampling())
    done = SimpleNamespace(text="t", parsed=0, error=None, prompt_tokens=3, generated_tokens=4, cached=0)
    rec.add(req, done, 100.0, 0.0)
    assert rec.calls[0]["repaired"] is False and rec.calls[0]["messages"] == [["", ""]]
    assert rec.calls[0]["parsed"] == "0"  # a falsy answer is kept


def test_without_prompts_a_call_keeps_counts_and_timings_only(clock: Clock) -> None:
    rec = Recorder(prompts=False)
    rec.add(_req(schema=SCHEMA), Completion(text="secret", parsed={"a": 1}, prompt_tokens=7), 100.0, 1.0)
    assert "messages" not in rec.calls[0] and "schema" not in rec.calls[0] and "text" not in rec.calls[0]
    assert "parsed" not in rec.calls[0] and rec.calls[0]["prompt_tokens"] == 7
    assert rec.to_json() == {"calls": rec.calls, "texts": {}, "prompts": False}


def test_note_sets_step_attempt_and_parse_error_of_that_request_only(clock: Clock) -> None:
    rec = Recorder()
    a, b = _req("a"), _req("b")
    rec.add(a, Completion(text="x"), 100.0, 1.0)
    rec.add(b, Completion(text="y"), 100.0, 1.0)
    rec.note(b, step="answer", attempt=1, parse_error="bad JSON")
    assert [(c["step"], c["attempt"], c["parse_error"]) for c in rec.calls] == [(None, None, None),
                                                                                ("answer", 1, "bad JSON")]
    rec.note(_req("a"), step="other")  # an equal request, not the one sent: nothing
    assert rec.calls[0]["step"] is None
    rec.note(a, step="events")
    assert (rec.calls[0]["step"], rec.calls[0]["attempt"], rec.calls[0]["parse_error"]) == ("events", None, None)


def test_note_of_a_request_whose_id_was_reused_is_ignored(clock: Clock) -> None:
    rec = Recorder()
    a = _req("a")
    rec.add(a, Completion(text="x"), 100.0, 1.0)
    impostor = _req("z")
    rec._by_request[id(impostor)] = (a, rec.calls[0])  # another object once had this id
    rec.note(impostor, step="wrong")
    assert rec.calls[0]["step"] is None


def test_a_request_sent_again_is_noted_on_its_last_call(clock: Clock) -> None:
    rec = Recorder()
    a = _req("a")
    rec.add(a, Completion(text="x"), 100.0, 1.0)
    rec.add(a, Completion(text="y"), 100.0, 1.0)
    rec.note(a, attempt=2)
    assert [c["attempt"] for c in rec.calls] == [None, 2]


def test_to_json_chunks_messages_and_schema_once_and_pauses_after_each_call(clock: Clock) -> None:
    rec = Recorder()
    system = "intro line\n\n" + lines(0, 8)
    req = ChatRequest(messages=({"role": "system", "content": system}, {"role": "user", "content": "q1"}),
                      schema=SCHEMA)
    rec.add(req, Completion(text="a"), 100.0, 1.0)
    rec.add(ChatRequest(messages=({"role": "system", "content": system}, {"role": "user", "content": "q2"}),
                        schema=SCHEMA), Completion(text="b"), 100.0, 1.0)
    paused: list[float] = []
    out = rec.to_json(paused.append)
    assert paused == [0, 0] and out["prompts"] is True and out["calls"] is rec.calls and out["texts"] is rec.texts
    sys_refs = [text_hash(t) for t in ("intro line\n\n", L(0) + "\n" + L(1) + "\n", lines(2, 5) + "\n",
                                       lines(5, 8))]
    schema_text = '{"properties": {"é": {"type": "string"}}, "type": "object"}'
    assert rec.calls[0]["messages"] == [["system", sys_refs], ["user", [text_hash("q1")]]]
    assert rec.calls[1]["messages"] == [["system", sys_refs], ["user", [text_hash("q2")]]]
    assert rec.calls[0]["schema"] == rec.calls[1]["schema"] == [text_hash(schema_text)]
    assert rec.texts[text_hash(schema_text)] == schema_text and len(rec.texts) == 7
    rec.add(_req("q3"), Completion(text="c"), 100.0, 1.0)
    again = rec.to_json()  # the calls chunked before stay as they are; the new one is chunked
    assert again["calls"][0]["messages"] == [["system", sys_refs], ["user", [text_hash("q1")]]]
    assert again["calls"][2]["messages"] == [["system", [text_hash("be brief")]], ["user", [text_hash("q3")]]]
    assert again["calls"][2]["schema"] is None


def test_a_schema_object_is_encoded_once_and_a_new_one_at_the_same_id_again(clock: Clock) -> None:
    rec = Recorder()
    s1 = {"type": "object"}
    assert rec._schema(s1) == [text_hash('{"type": "object"}')]
    rec._schemas[id(s1)] = ({"type": "array"}, ["stale"])  # another object once at this id
    assert rec._schema(s1) == [text_hash('{"type": "object"}')]
    rec._schemas[id(s1)] = (s1, ["kept"])
    assert rec._schema(s1) == ["kept"]


def test_a_message_without_text_is_kept_empty(clock: Clock) -> None:
    rec = Recorder()
    rec.add(SimpleNamespace(messages=(), schema=None, sampling=Sampling()), Completion(text="a"), 100.0, 1.0)
    assert rec.to_json()["calls"][0]["messages"] == []


def test_a_pickled_recorder_keeps_its_calls_and_chunker_but_not_its_requests(clock: Clock) -> None:
    rec = Recorder()
    req = _req(schema=SCHEMA)
    rec.add(req, Completion(text="a"), 100.5, 1.0)
    rec._schema(SCHEMA)
    state = rec.__getstate__()
    assert state["_schemas"] == {} and state["_by_request"] == {} and state["calls"] is rec.calls
    assert state["prompts"] is True and state["_t0"] == 100.0 and state["chunker"] is rec.chunker
    copy = pickle.loads(pickle.dumps(rec))
    assert copy.to_json() == rec.to_json()
    assert rec._by_request and rec._schemas  # the original keeps its own


def test_finished_in_the_driver_is_chunked_when_pickled(clock: Clock) -> None:
    rec = Recorder()
    rec.add(_req("q"), Completion(text="a"), 100.0, 1.0)
    fin = rec.finished()
    assert isinstance(fin, Finished) and fin.recorder is rec
    paused: list[float] = []
    assert fin.to_json(paused.append)["calls"][0]["messages"][1] == ["user", [text_hash("q")]] and paused == [0]
    assert pickle.loads(pickle.dumps(fin)) == rec.to_json()


def test_finished_in_a_replica_is_plain_json(clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(record, "replica_id", lambda: "actor-9")
    rec = Recorder()
    rec.add(_req("q"), Completion(text="a"), 100.0, 1.0)
    assert rec.finished() == {"calls": rec.calls, "texts": rec.texts, "prompts": True}
    assert rec.calls[0]["messages"][1] == ["user", [text_hash("q")]]


class Echo(ModelBase):
    name = "echo"

    def __init__(self) -> None:
        self.seen: list = []

    async def generate(self, requests: list) -> list:
        self.seen.append(requests)
        return [Completion(text=r.messages[-1]["content"].upper(), prompt_tokens=2) for r in requests]


def test_the_recording_model_records_each_request_of_a_batch_with_the_batch_time(monkeypatch) -> None:
    import asyncio

    monkeypatch.setattr(record, "time", Clock(10.0, 12.0, 12.75))
    inner = Echo()
    with recording(inner) as (llm, rec):
        assert llm.recorder is rec and llm.llm is inner and record._CURRENT.get() is rec
        got = asyncio.run(llm.generate([_req("a"), _req("b")]))
        record.note(inner.seen[0][1], step="second", attempt=0, parse_error="p")
    assert [c.text for c in got] == ["A", "B"]
    assert [(c["seq"], c["start"], c["latency"], c["text"]) for c in rec.calls] == [(0, 2.0, 0.75, "A"),
                                                                                   (1, 2.0, 0.75, "B")]
    assert (rec.calls[1]["step"], rec.calls[1]["attempt"], rec.calls[1]["parse_error"]) == ("second", 0, "p")
    assert rec.calls[0]["step"] is None and rec.prompts is True
    assert record._CURRENT.get() is None
    record.note(inner.seen[0][0], step="after")  # no sample recorded: nothing
    assert rec.calls[0]["step"] is None


def test_recording_without_prompts_and_the_context_is_reset_on_error(clock: Clock) -> None:
    with pytest.raises(RuntimeError):
        with recording(Echo(), prompts=False) as (llm, rec):
            assert rec.prompts is False and record._CURRENT.get() is rec
            raise RuntimeError
    assert record._CURRENT.get() is None


def test_wrap_gives_a_recording_model(clock: Clock) -> None:
    rec = Recorder()
    inner = Echo()
    w = rec.wrap(inner)
    assert isinstance(w, record.RecordingLLM) and w.recorder is rec and w.llm is inner and w.name == "echo"


# -- replica id ------------------------------------------------------------------------------------------------------
def _fake_ray(monkeypatch, initialized: bool, actor: object) -> None:
    ray = ModuleType("ray")

    def context():
        if isinstance(actor, Exception):
            raise actor
        return SimpleNamespace(get_actor_id=lambda: actor)

    ray.is_initialized = lambda: initialized
    ray.get_runtime_context = context
    monkeypatch.setitem(sys.modules, "ray", ray)


def test_replica_id_is_the_actor_id_only_inside_an_initialised_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "ray", raising=False)
    assert replica_id() is None
    _fake_ray(monkeypatch, True, "actor-1")
    assert replica_id() == "actor-1"
    _fake_ray(monkeypatch, False, "actor-1")
    assert replica_id() is None
    _fake_ray(monkeypatch, True, RuntimeError("no context"))
    assert replica_id() is None
