"""The eval log's decisions (issue 44, `make mutation evallog=x`), pinned fast and without Ray or a writer process.

record.py: what a sample's log keeps per call (`Recorder.add`: the row's fields, tokens, start against the recorder's
own clock, latency; `prompts=False` keeps no text), what a solver's `note` sets, how prompt text is cut into chunks
stored once by hash (`Chunker`: texts of up to 200 characters or of one line are one chunk; a paragraph ends at a
blank line; a chunk ends after a line whose crc32 ends in two zero bits; a paragraph that extends a recent one is
chunked from that one's last chunk and gives the chunks of the whole), `to_json`, `dumps`, `replica_id`.
The clock is a stand-in (`time.perf_counter` of the module reads a list), Ray is a stand-in module in `sys.modules`.
Which of the test lines end a chunk was worked out once by hand from crc32 (`BOUND` lists them) and is pinned.
That the chunker looks at no text twice (a known paragraph is a hit, a longer history is cut from the last chunk of
one of the last four paragraphs, a known chunk is not hashed again, a schema object is encoded once) is pinned with
spies on what it cuts, hashes and encodes (`looked_at`).

read.py: a run folder written by hand in the writer's format (Parquet tables with the writer's schemas, staged JSON
lines, texts parts, configs.json or provenance files, scores and items): labels and their order, attempts (staged and
compacted, latest per sample), calls, the status table (`missing` for a planned sample the run never solved), one
sample's detail, and the size report's figures, all computed by hand; staged lines read as UTF-8 on a host with
another locale (simulated).
"""

from __future__ import annotations

import json
import pickle
import sys
import zlib
from pathlib import Path
from types import ModuleType, SimpleNamespace

import numpy as np
import polars as pl
import pytest

from emocaustics.evallog import record
from emocaustics.evallog.record import Chunker, Finished, Recorder, dumps, recording, replica_id, text_hash
from emocaustics.models.base import ChatRequest, Completion, ModelBase, Sampling


def chunks(text: str) -> list[str]:
    """`text` as the consecutive pieces a fresh chunker makes of it (they join back to it)."""
    ch = Chunker()
    return [ch.texts[h] for h in ch.refs(text)]


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
    blank = "p\n\n" + "q" * 197  # 200 characters: its blank line does not cut it
    assert chunks(blank) == [blank] and chunks(blank + "q") == ["p\n\n", "q" * 198]
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


@pytest.fixture
def looked_at(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """What the chunker cuts (`split`), hashes (`hash`) and checks for a boundary (`crc`), in order."""
    seen: dict[str, list[str]] = {"split": [], "hash": [], "crc": []}
    split, hash_ = Chunker._split, record.text_hash
    monkeypatch.setattr(Chunker, "_split", lambda self, para: (seen["split"].append(para), split(self, para))[1])
    monkeypatch.setattr(record, "text_hash", lambda t: (seen["hash"].append(t), hash_(t))[1])
    monkeypatch.setattr(record, "zlib", SimpleNamespace(crc32=lambda b: (seen["crc"].append(b.decode()),
                                                                          zlib.crc32(b))[1]))
    return seen


def test_text_chunked_before_is_not_looked_at_again(looked_at: dict[str, list[str]]) -> None:
    ch = Chunker()
    ch.refs(lines(0, 8))
    assert looked_at["split"] == [lines(0, 8)] and looked_at["crc"] == [L(i) for i in range(8)]
    assert looked_at["hash"] == [L(0) + "\n" + L(1) + "\n", lines(2, 5) + "\n", lines(5, 8)]
    ch.refs(lines(0, 8))  # the same paragraph: a dictionary hit
    assert len(looked_at["split"]) == 1 and len(looked_at["hash"]) == 3
    ch.refs(lines(0, 11))  # a longer history: from the start of the last chunk, new lines' boundaries only
    assert looked_at["split"][1:] == [lines(5, 11)] and looked_at["crc"][8:] == [L(8), L(9), L(10)]
    assert looked_at["hash"][3:] == [lines(5, 10) + "\n", L(10)]
    other = lines(0, 3) + "\nsomething else entirely, a new line here\n" + lines(5, 8)
    ch.refs(other)  # a new paragraph whose first chunk is known: only its new chunk is hashed
    assert looked_at["hash"][5:] == [other[78:]]
    del looked_at["hash"][5:], looked_at["split"][2:]
    ch.refs("x\n" + "y" * 300)
    ch.refs("x\n" + "y" * 300 + "\n\nz")  # the same paragraph with a blank line: cut afresh
    assert looked_at["split"][2:] == ["x\n" + "y" * 300, "x\n" + "y" * 300 + "\n\n", "z"]
    assert looked_at["hash"][5:] == ["x\n" + "y" * 300, "x\n" + "y" * 300 + "\n\n", "z"]


def test_a_paragraph_ending_in_a_boundary_line_is_not_extended_from_its_blank_line(
        looked_at: dict[str, list[str]]) -> None:
    ch = Chunker()
    first = ch.refs(lines(0, 10) + "\n\nend")  # line 9 ends a chunk: the paragraph's blank line is a chunk alone
    assert [ch.texts[h] for h in first] == [L(0) + "\n" + L(1) + "\n", lines(2, 5) + "\n", lines(5, 10) + "\n",
                                            "\n", "end"]
    got = ch.refs(lines(0, 11) + "\n\nend")
    assert [ch.texts[h] for h in got] == [L(0) + "\n" + L(1) + "\n", lines(2, 5) + "\n", lines(5, 10) + "\n",
                                          L(10) + "\n\n", "end"]
    assert looked_at["split"][2:] == [lines(0, 11) + "\n\n"]


def test_an_extension_is_looked_for_among_the_last_four_paragraphs(looked_at: dict[str, list[str]]) -> None:
    for others, tail in ((3, lines(5, 11)), (4, lines(0, 11))):
        ch = Chunker()
        ch.refs(lines(0, 8))
        for k in range(others):
            ch.refs(f"para {k}\n" + "q" * 210)
        looked_at["split"].clear()
        assert [ch.texts[h] for h in ch.refs(lines(0, 11))] == [L(0) + "\n" + L(1) + "\n", lines(2, 5) + "\n",
                                                                 lines(5, 10) + "\n", L(10)]
        assert looked_at["split"] == [tail], others


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


def test_to_json_chunks_messages_and_schema_once(clock: Clock) -> None:
    rec = Recorder()
    system = "intro line\n\n" + lines(0, 8)
    req = ChatRequest(messages=({"role": "system", "content": system}, {"role": "user", "content": "q1"}),
                      schema=SCHEMA)
    rec.add(req, Completion(text="a"), 100.0, 1.0)
    rec.add(ChatRequest(messages=({"role": "system", "content": system}, {"role": "user", "content": "q2"}),
                        schema=SCHEMA), Completion(text="b"), 100.0, 1.0)
    out = rec.to_json()
    assert out["prompts"] is True and out["calls"] is rec.calls and out["texts"] is rec.texts
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


def test_a_schema_object_is_encoded_once_and_a_new_one_at_the_same_id_again(clock: Clock, monkeypatch) -> None:
    encoded: list = []
    dumps_ = json.dumps
    monkeypatch.setattr(record, "json", SimpleNamespace(dumps=lambda v, **kw: (encoded.append(v), dumps_(v, **kw))[1]))
    rec = Recorder()
    s1 = {"type": "object"}
    assert rec._schema(s1) == [text_hash('{"type": "object"}')]
    assert rec._schema(s1) == [text_hash('{"type": "object"}')] and encoded == [s1]  # many calls share one schema
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
    assert fin.to_json()["calls"][0]["messages"][1] == ["user", [text_hash("q")]]
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


def test_recording_gives_a_recording_model(clock: Clock) -> None:
    inner = Echo()
    with recording(inner) as (w, rec):
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


# -- reading a run folder --------------------------------------------------------------------------------------------
from benchmarks.evallog_bench import size_report  # noqa: E402
from emocaustics.core.errors import UsageError  # noqa: E402
from emocaustics.evallog.read import NOT_SOLVED, RunLog  # noqa: E402
from emocaustics.evallog.tables import ATTEMPT_SCHEMA, CALL_SCHEMA, SAMPLE_SCHEMA  # noqa: E402

TEXTS_0 = {"h_sys": "You are terse. ", "h_q1": "Question one?", "h_in": '{"q": 1}', "h_gold": '["A"]',
           "h_schema": '{"type": "object"}'}  # 15, 13, 8, 5, 18 characters
TEXTS_1 = {"h_q2": "Question two?"}  # 13
STAGED_TEXTS = {"h_q3": "Question three?"}  # 15


def _msgs(*pairs: tuple[str, list[str]]) -> list[dict]:
    return [{"role": r, "text": t} for r, t in pairs]


def _call(sample: str, attempt: str, seq: int, **kw) -> dict:
    row = {k: None for k in CALL_SCHEMA}
    row.update(sample_id=sample, attempt=attempt, seq=seq, sampling='{"max_tokens": 8}', cached=False,
               repaired=False, prompt_tokens=0, generated_tokens=0, start=0.0, latency=0.0)
    row.update(kw)
    return row


def _attempt(sample: str, attempt: str, finished: float, ok: bool, **kw) -> dict:
    row = {k: None for k in ATTEMPT_SCHEMA}
    row.update(sample_id=sample, attempt=attempt, finished=finished, ok=ok, calls=0, stats="{}", prompts=True)
    row.update(kw)
    return row


def _parquet(path: Path, rows: list[dict], schema: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(rows, schema=schema).write_parquet(path)


def _line(**kw) -> str:
    return json.dumps(kw)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """cfgA: finished (samples table), s1 compacted with two calls, s2 failed once compacted and again staged, s3
    staged only (prompts off) and a cut line; cfgB: unfinished, three planned samples, two tried; cfgY: staged only;
    cfgZ: attempts only; scores and items for both configs in the run's shared tables. Read only (made once)."""
    tmp_path = tmp_path_factory.mktemp("run")
    root = tmp_path / "evallog"
    for sub in ("staging", "calls", "attempts", "samples", "texts"):
        (root / sub).mkdir(parents=True)
    _parquet(root / "texts" / "part-00000.parquet", [{"hash": h, "text": t} for h, t in TEXTS_0.items()],
             {"hash": pl.Utf8, "text": pl.Utf8})
    _parquet(root / "texts" / "part-00001.parquet", [{"hash": h, "text": t} for h, t in TEXTS_1.items()],
             {"hash": pl.Utf8, "text": pl.Utf8})
    _parquet(root / "calls" / "cfgA.parquet", [
        _call("s1", "att-1", 1, step="answer", retry=1, start=0.5, latency=0.25, schema=["h_schema"],
              messages=_msgs(("system", ["h_sys"]), ("user", ["h_q1", "h_gone"])), text='{"a":1}',
              parsed='{"a": 1}', prompt_tokens=10, generated_tokens=3, repaired=True),
        _call("s1", "att-1", 0, step="answer", retry=0, start=0.0, latency=0.5,
              messages=_msgs(("system", ["h_sys"]), ("user", ["h_q1"])), text="oops", error="invalid JSON",
              parse_error="bad", prompt_tokens=9, generated_tokens=2, cached=True),
        _call("s2", "att-1", 0, messages=_msgs(("system", ["h_sys"]), ("user", ["h_q2"])), prompt_tokens=9),
    ], CALL_SCHEMA)
    _parquet(root / "attempts" / "cfgA.parquet", [
        _attempt("s1", "att-1", 10.0, True, replica="r1", calls=2, stats='{"calls": 2}'),
        _attempt("s2", "att-1", 5.0, False, step="answer", reason="timeout", calls=1),
    ], ATTEMPT_SCHEMA)
    _parquet(root / "samples" / "cfgA.parquet", [
        {"sample_id": "s1", "input": "h_in", "target": "h_gold", "prediction": '{"answer": ["A"]}', "status": "ok",
         "reason": None},
        {"sample_id": "s2", "input": None, "target": None, "prediction": None, "status": "failed",
         "reason": "failed: bad answer"},
        {"sample_id": "s4", "input": None, "target": None, "prediction": None, "status": "missing", "reason": None},
    ], SAMPLE_SCHEMA)
    _parquet(root / "samples" / "cfgS.parquet", [  # a calibration config: samples only, no attempt, no call
        {"sample_id": "c1", "input": None, "target": "h_gold", "prediction": '["A"]', "status": "ok", "reason": None},
    ], SAMPLE_SCHEMA)
    staged_call = {"seq": 0, "start": 0.0, "latency": 2, "sampling": {"max_tokens": 8}, "prompt_tokens": 4,
                   "generated_tokens": 1, "cached": False, "repaired": False, "error": None, "step": "answer",
                   "attempt": 0, "parse_error": "no JSON", "messages": [["system", ["h_sys"]], ["user", ["h_q3"]]],
                   "schema": None, "text": "x", "parsed": None}
    (root / "staging" / "cfgA.jsonl").write_text("\n".join([
        _line(sample_id="s2", attempt="att-2", finished=20.0, ok=False, step="answer", reason="bad answer",
              replica="r2", calls=[staged_call], stats='{"calls": 1}', prompts=True, texts=STAGED_TEXTS),
        "{not json",
        _line(sample_id="s3", attempt="att-2", finished=15, ok=True, step=None, reason=None, replica=None,
              calls=[], stats="{}", prompts=False, texts={}),
    ]) + "\n", encoding="utf-8")
    (root / "staging" / "cfgY.jsonl").write_text(_line(
        sample_id="y1", attempt="att-2", finished=1, ok=True, step=None, reason=None, replica=None,
        calls=[{"seq": 0, "prompt_tokens": 3, "sampling": None, "messages": None}], stats="{}", prompts=False,
        texts={}) + "\n", encoding="utf-8")
    _parquet(root / "attempts" / "cfgB.parquet", [
        _attempt("1", "att-1", 1.0, True), _attempt("2", "att-1", 2.0, False, reason="boom"),
    ], ATTEMPT_SCHEMA)
    _parquet(root / "attempts" / "cfgZ.parquet", [_attempt("z", "att-1", 1.0, True)], ATTEMPT_SCHEMA)
    (tmp_path / "configs.json").write_text(json.dumps([{"run": "cfgB", "task": "tB"}, {"run": "cfgA", "task": "tA"},
                                                       {"run": "cfgC", "task": "tC"}]), encoding="utf-8")
    prov = tmp_path / "predictions" / "cfgB"
    prov.mkdir(parents=True)
    (prov / "provenance.json").write_text(json.dumps({"task": "tB", "samples": {"1": "f", "2": "f", "3": "f"}}))
    pl.DataFrame({"run": ["cfgA", "cfgA", "cfgB"], "sample_id": ["s1", "s2", "1"], "score": [1.0, 0.0, 0.5],
                  "c_acc": [1.0, 0.0, None], "c_b": [None, None, 2.0], "cache_hits": [0, 1, 2],
                  "prompt_tokens": [19, 9, 5], "generated_tokens": [5, 1, 0], "seconds": [0.75, 0.5, 0.0],
                  "other": ["o", "o", "o"]}).write_parquet(tmp_path / "scores.parquet")
    pl.DataFrame({"run": ["cfgA", "cfgA", "cfgA", "cfgB"], "dialogue": [None, None, None, 1],
                  "item": ["e1", "e2", "e3", "d1"], "sample_id": ["s1", "s1", "s2", None]}).write_parquet(
        tmp_path / "items.parquet")
    return tmp_path


def test_a_folder_without_an_eval_log_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no evallog/ folder"):
        RunLog(tmp_path)


def test_texts_come_from_every_part_and_the_staged_lines(run: Path) -> None:
    log = RunLog(run)
    assert log.texts == {**TEXTS_0, **TEXTS_1, **STAGED_TEXTS}
    assert log.text(None) is None and log.text([]) == ""
    assert log.text(["h_sys", "h_q1", "h_nope"]) == "You are terse. Question one?[missing text h_nope]"


def test_a_cut_staged_line_is_named_once_and_the_others_are_read(run: Path) -> None:
    log = RunLog(run)
    log.all_attempts("cfgA")
    log.all_attempts("cfgA")
    assert [(p.name, n) for p, n, _ in log.bad_lines] == [("cfgA.jsonl", 2)]
    assert log.bad_lines[0][2] == "Expecting property name enclosed in double quotes"
    assert [r["_label"] for r in log._staged_lines()] == ["cfgA", "cfgA", "cfgY"]


def test_staged_lines_are_read_as_utf8_whatever_the_locale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a host whose locale is Latin-1 (simulated: a read without an encoding decodes Latin-1), prompts stay whole."""
    read_text = Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None, errors=None: read_text(
        self, encoding=encoding or "latin-1", errors=errors))
    (tmp_path / "evallog" / "staging").mkdir(parents=True)
    (tmp_path / "evallog" / "staging" / "x.jsonl").write_text(
        '{"sample_id": "1", "calls": [], "texts": {"h": "café ✓"}}\n', encoding="utf-8")
    assert RunLog(tmp_path).texts == {"h": "café ✓"}


def test_labels_follow_the_configs_then_the_rest_sorted(run: Path) -> None:
    log = RunLog(run)
    assert log.labels() == ["cfgB", "cfgA", "cfgS", "cfgY", "cfgZ"]
    assert log.records["cfgA"] == {"run": "cfgA", "task": "tA"}


def test_records_of_a_run_still_going_come_from_the_provenance(tmp_path: Path) -> None:
    (tmp_path / "evallog").mkdir()
    for name, opts in (("b", {"method": "zs"}), ("a", None)):
        (tmp_path / "predictions" / name).mkdir(parents=True)
        (tmp_path / "predictions" / name / "provenance.json").write_text(json.dumps(
            {"task": "t" + name, "model": "m", "options": opts, "samples": {}}))
    log = RunLog(tmp_path)
    assert log.records == {"a": {"run": "a", "task": "ta", "model": "m", "method": None},
                           "b": {"run": "b", "task": "tb", "model": "m", "method": "zs"}}
    assert list(log.records) == ["a", "b"]
    assert log.scores is None and log.items is None and log.labels() == []
    assert log.table("a").height == 0 and size_report(log)["dedup_share"] is None
    s = log.sample("a", "1")  # no items nor scores tables
    assert (s["items"], s["scores"], s["status"], s["reason"], s["task"]) == ([], {}, "missing", NOT_SOLVED, "ta")


def test_attempts_merge_compacted_and_staged_and_keep_each_samples_latest(run: Path) -> None:
    log = RunLog(run)
    every = log.all_attempts("cfgA")
    assert every.select("sample_id", "attempt", "finished", "ok", "calls", "replica").rows() == [
        ("s2", "att-1", 5.0, False, 1, None), ("s1", "att-1", 10.0, True, 2, "r1"),
        ("s3", "att-2", 15.0, True, 0, None), ("s2", "att-2", 20.0, False, 1, "r2")]
    assert every.columns == list(ATTEMPT_SCHEMA)
    latest = log.attempts("cfgA")
    assert latest.select("sample_id", "attempt").rows() == [("s1", "att-1"), ("s3", "att-2"), ("s2", "att-2")]
    assert log.all_attempts("cfgY").select("sample_id", "finished", "calls").rows() == [("y1", 1.0, 1)]
    assert log.all_attempts("nothing").height == 0 and log.all_attempts("nothing").columns == list(ATTEMPT_SCHEMA)


def test_each_samples_latest_attempt_comes_in_the_order_of_those_attempts(tmp_path: Path) -> None:
    """500 samples solved twice (a resume): the latest attempts are the second round's, in its order."""
    rows = [_attempt(f"s{i % 500}", "a" if i < 500 else "b", float(i), True) for i in range(1000)]
    _parquet(tmp_path / "evallog" / "attempts" / "big.parquet", rows, ATTEMPT_SCHEMA)
    latest = RunLog(tmp_path).attempts("big")
    assert latest["sample_id"].to_list() == [f"s{i}" for i in range(500)] and set(latest["attempt"]) == {"b"}


def test_calls_hold_the_compacted_and_the_staged_ones(run: Path) -> None:
    log = RunLog(run)
    calls = log.calls("cfgA")
    assert calls is log.calls("cfgA") and calls.columns == list(CALL_SCHEMA)
    assert calls.select("sample_id", "attempt", "seq", "retry").rows() == [
        ("s1", "att-1", 1, 1), ("s1", "att-1", 0, 0), ("s2", "att-1", 0, None), ("s2", "att-2", 0, 0)]
    staged = calls.row(3, named=True)
    assert staged["messages"] == [{"role": "system", "text": ["h_sys"]}, {"role": "user", "text": ["h_q3"]}]
    assert (json.loads(staged["sampling"]), staged["parse_error"], staged["latency"], staged["step"]) == (
        {"max_tokens": 8}, "no JSON", 2.0, "answer")  # an integral JSON number in a float column
    y = log.calls("cfgY").row(0, named=True)
    assert y["messages"] is None and y["sampling"] == "null" and y["prompt_tokens"] == 3 and y["retry"] is None
    assert log.calls("nothing").height == 0


def test_the_table_has_a_status_and_reason_per_sample_with_its_scores(run: Path) -> None:
    table = RunLog(run).table("cfgA").sort("sample_id")
    assert table.columns == ["sample_id", "status", "reason", "calls", "replica", "score", "c_acc", "cache_hits",
                             "prompt_tokens", "generated_tokens", "seconds"]
    assert table.rows() == [("s1", "ok", None, 2, "r1", 1.0, 1.0, 0, 19, 5, 0.75),
                            ("s2", "failed", "failed: bad answer", 1, "r2", 0.0, 0.0, 1, 9, 1, 0.5),
                            ("s3", "ok", None, 0, None, None, None, None, None, None, None),
                            ("s4", "missing", None, None, None, None, None, None, None, None, None)]


def test_an_unfinished_config_counts_its_planned_samples_never_solved_as_missing(run: Path) -> None:
    log = RunLog(run)
    table = log.table("cfgB").sort("sample_id")
    assert table.select("sample_id", "status", "reason", "calls", "score", "c_b").rows() == [
        ("1", "ok", None, 0, 0.5, 2.0), ("2", "failed", "boom", 0, None, None), ("3", "missing", NOT_SOLVED, None,
                                                                                  None, None)]
    assert "c_acc" not in table.columns
    epoch = log.table("cfgB.epoch-2").sort("sample_id")  # an epoch's log plans its config's samples
    assert epoch.select("sample_id", "status", "reason").rows() == [(i, "missing", NOT_SOLVED) for i in "123"]
    assert log.table("cfgBepoch-2").height == 0 and log.table("cfgB.epoch-x").height == 0


def test_a_planned_id_is_read_as_text(tmp_path: Path) -> None:
    (tmp_path / "evallog").mkdir()
    prov = tmp_path / "predictions" / "cfgN"
    prov.mkdir(parents=True)
    (prov / "provenance.json").write_text(json.dumps({"samples": {"7": "f"}}))
    log = RunLog(tmp_path)
    assert log._planned("cfgN") == ["7"] and log._planned("cfgN.epoch-12") == ["7"] and log._planned("x") == []


def test_a_sample_shows_its_input_gold_prediction_calls_items_and_scores(run: Path) -> None:
    s = RunLog(run).sample("cfgA", "s1")
    calls = s.pop("calls")
    assert s == {"config": "cfgA", "sample_id": "s1", "task": "tA", "input": {"q": 1}, "target": ["A"],
                 "prediction": {"answer": ["A"]}, "status": "ok", "reason": None, "replica": "r1",
                 "stats": {"calls": 2}, "attempts": 1, "judge": None,  # no judge scored it
                 "items": [{"sample_id": "s1", "item": "e1"}, {"sample_id": "s1", "item": "e2"}],
                 "scores": {"score": 1.0, "c_acc": 1.0}, "prompts": True}
    assert calls == [
        {"seq": 0, "step": "answer", "retry": 0, "start": 0.0, "latency": 0.5, "text": "oops", "error": "invalid JSON",
         "parse_error": "bad", "prompt_tokens": 9, "generated_tokens": 2, "cached": True, "repaired": False,
         "messages": [{"role": "system", "content": "You are terse. "}, {"role": "user", "content": "Question one?"}],
         "schema": None, "sampling": {"max_tokens": 8}, "parsed": None},
        {"seq": 1, "step": "answer", "retry": 1, "start": 0.5, "latency": 0.25, "text": '{"a":1}', "error": None,
         "parse_error": None, "prompt_tokens": 10, "generated_tokens": 3, "cached": False, "repaired": True,
         "messages": [{"role": "system", "content": "You are terse. "},
                      {"role": "user", "content": "Question one?[missing text h_gone]"}],
         "schema": {"type": "object"}, "sampling": {"max_tokens": 8}, "parsed": {"a": 1}}]


def test_a_sample_solved_twice_shows_its_latest_attempt(run: Path) -> None:
    s = RunLog(run).sample("cfgA", "s2")
    assert (s["status"], s["reason"], s["replica"], s["attempts"], s["stats"]) == (
        "failed", "failed: bad answer", "r2", 2, {"calls": 1})  # the status and reason of the samples table
    assert s["input"] is None and s["target"] is None and s["prediction"] is None
    assert [(c["retry"], c["parse_error"], c["messages"][1]["content"]) for c in s["calls"]] == [
        (0, "no JSON", "Question three?")]
    assert s["items"] == [{"sample_id": "s2", "item": "e3"}] and s["scores"] == {"score": 0.0, "c_acc": 0.0}


def test_a_sample_with_only_a_staged_attempt_and_prompts_off(run: Path) -> None:
    s = RunLog(run).sample("cfgA", "s3")
    assert (s["status"], s["reason"], s["replica"], s["attempts"], s["calls"], s["prompts"]) == (
        "ok", None, None, 1, [], False)
    assert s["items"] == [] and s["scores"] == {} and s["stats"] == {}


def test_a_sample_never_solved_is_missing_and_a_failed_one_says_why(run: Path) -> None:
    log = RunLog(run)
    s = log.sample("cfgB", "3")
    assert (s["status"], s["reason"], s["replica"], s["stats"], s["attempts"], s["calls"], s["prompts"]) == (
        "missing", NOT_SOLVED, None, None, 0, [], True)
    assert s["task"] == "tB" and s["scores"] == {}
    failed = log.sample("cfgB", "2")
    assert (failed["status"], failed["reason"], failed["attempts"]) == ("failed", "boom", 1)
    one = log.sample("cfgB", "1")  # this task's items have no sample_id column: their first column is the key
    assert (one["status"], one["reason"]) == ("ok", None)
    assert one["items"] == [{"dialogue": 1, "item": "d1"}] and one["scores"] == {"score": 0.5, "c_b": 2.0}
    assert log.sample("cfgZ", "z")["task"] is None
    calibration = log.sample("cfgS", "c1")  # no attempt: the samples table's status
    assert (calibration["status"], calibration["reason"], calibration["attempts"], calibration["calls"]) == (
        "ok", None, 0, [])
    assert calibration["target"] == ["A"] and calibration["prediction"] == ["A"] and calibration["input"] is None


def test_the_size_report_counts_prompt_text_sent_against_text_stored(run: Path) -> None:
    import os

    log = RunLog(run)
    disk = sum(os.path.getsize(Path(d) / n) for d, _, names in os.walk(run / "evallog") for n in names)
    # sent: cfgA's calls 15+13(+0 for a missing chunk), 15+13, 15+13, and the staged 15+15; cfgY's has no messages
    # stored: 15+13+8+5+18 + 13 + 15
    assert size_report(log) == {"bytes_on_disk": disk, "prompt_chars_sent": 114, "text_chars_stored": 87,
                                 "dedup_share": 0.2368}
