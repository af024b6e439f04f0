"""Recording one sample's LLM calls where they are made (the driver, or inside a model replica).

A `Recorder` wraps the model handed to a sample's solver: each request and its answer (messages as sent, schema,
sampling, raw text, parsed JSON, error, tokens, cache hit, start and latency) is kept in call order. A solver that
reads answers into records tells the recorder what it made of each one (`note`: the step, the re-ask attempt, the
parse error); it finds the sample's recorder through a context variable, so no solver signature changes, and many
samples in flight on one event loop each see their own (asyncio copies the context into every task).

Text is split into chunks keyed by a short hash as it is recorded (`Chunker`), so that what the calls of a sample share
(its system prompt, a topic's documents, a dialogue's history: every later prompt repeats the earlier lines) travels
and is stored once. Chunks end at a blank line (a paragraph: a document, a section) and after a line whose own hash
ends in two zero bits (content-defined: the same run of lines makes the same chunks wherever it sits in a prompt, on
average four lines each). A sample's prompts repeat most of their text, and a run sends about 3,000 characters per
call, so the chunker of a sample does not look at text it has chunked before: a paragraph seen before is a dictionary
hit, and a paragraph that extends one seen before (a history one line longer) is chunked from the start of that
one's last chunk only. Either way the chunks are the ones chunking the whole text would make.
"""

from __future__ import annotations

import hashlib
import json
import time
import zlib
from collections.abc import Iterator
from itertools import accumulate, compress
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import orjson

from emocaustics.models.base import Layer

_CURRENT: ContextVar["Recorder | None"] = ContextVar("emocaustics_evallog_recorder", default=None)
SHORT = 200  # a text up to this long is one chunk
JUDGE = "judge"  # the step of a scorer's judge calls: logged per sample as a line of their own (`read.RunLog.sample`)


def dumps(value: Any, default: Any = str, sort_keys: bool = False) -> str:
    """JSON text of `value` (UTF-8, not ASCII-escaped) by orjson, 5-10 times faster than `json.dumps`; the stdlib's
    encoder for what orjson refuses (an integer beyond 64 bits)."""
    opts = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY | (orjson.OPT_SORT_KEYS if sort_keys else 0)
    try:
        return orjson.dumps(value, default=default, option=opts).decode("utf-8")
    except TypeError:
        return json.dumps(value, ensure_ascii=False, default=default, sort_keys=sort_keys)


def text_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


class Chunker:
    """Chunks of one sample's texts by their hashes (`texts`); memory of what it chunked, for the next call's text."""

    RECENT = 4  # paragraphs a new one may extend (the history of the call before, a few others in between)

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}  # hash -> chunk
        self._hashes: dict[str, str] = {}  # chunk -> hash
        self._bounds: dict[str, bool] = {}  # line -> a chunk ends after it
        self._paras: dict[str, list[str]] = {}  # paragraph (with its blank-line end) -> its chunks' hashes
        self._recent: list[tuple[str, list[str], int]] = []  # (paragraph without its end, hashes, last chunk start)

    def _hash(self, piece: str) -> str:
        h = self._hashes.get(piece)
        if h is None:
            h = self._hashes[piece] = text_hash(piece)
            self.texts[h] = piece
        return h

    def _split(self, para: str) -> list[str]:
        """A paragraph (no blank line inside) cut after each line whose hash ends in two zero bits."""
        lines = para.split("\n")
        flags = list(map(self._bounds.get, lines))
        if None in flags:
            for i, flag in enumerate(flags):
                if flag is None:
                    flags[i] = self._bounds[lines[i]] = zlib.crc32(lines[i].encode("utf-8")) & 3 == 0
        cuts = list(compress(accumulate(map((1).__add__, map(len, lines))), flags))  # after each line's newline
        while cuts and cuts[-1] >= len(para):
            cuts.pop()
        return [para[a:b] for a, b in zip([0, *cuts], [*cuts, len(para)])]

    def refs(self, text: str) -> list[str]:
        """`text` as the hashes of consecutive chunks (`texts` has each chunk)."""
        if len(text) <= SHORT or "\n" not in text:
            return [self._hash(text)]
        out: list[str] = []
        parts = text.split("\n\n")
        last = len(parts) - 1
        for i, part in enumerate(parts):
            para = part + "\n\n" if i < last else part
            if not para:
                continue
            got = self._paras.get(para)
            if got is None:
                for prev, prev_refs, start in self._recent:  # a longer version of a recent paragraph
                    if len(part) > len(prev) and start <= len(prev) and part.startswith(prev):
                        got = prev_refs[:-1] + [self._hash(p) for p in self._split(para[start:])]
                        break
                else:
                    got = [self._hash(p) for p in self._split(para)]
                self._paras[para] = got
                self._recent = [(part, got, len(para) - len(self.texts[got[-1]])), *self._recent[:self.RECENT - 1]]
            out.extend(got)
        return out


class Recorder:
    """The calls of one sample, in order; `prompts=False` keeps counts and timings but no prompt or answer text."""

    def __init__(self, prompts: bool = True, t0: float | None = None) -> None:
        self.prompts = prompts
        self.calls: list[dict[str, Any]] = []
        self.chunker = Chunker()
        self.texts = self.chunker.texts
        self._schemas: dict[int, tuple[Any, list[str]]] = {}  # id(schema) -> (schema, its hashes): many calls share one
        self._by_request: dict[int, tuple[Any, dict[str, Any]]] = {}  # id(request) -> (request, its last call)
        self._chunked = 0  # calls before this one have their messages as text hashes (the rest: as sent)
        self._t0 = time.perf_counter() if t0 is None else t0  # each call's `start` counts from here

    def __getstate__(self) -> dict[str, Any]:
        """What the eval log's writer process needs (`writer.ConfigLog.emit`): the calls as recorded and the chunker
        as it is (its memory included, so `to_json` there makes the chunks it would make here); not the requests."""
        return {**self.__dict__, "_schemas": {}, "_by_request": {}}

    def _schema(self, schema: Any) -> list[str]:
        got = self._schemas.get(id(schema))
        if got is None or got[0] is not schema:
            text = json.dumps(schema, sort_keys=True, ensure_ascii=False)
            got = self._schemas[id(schema)] = (schema, self.chunker.refs(text))
        return got[1]

    def add(self, request: Any, completion: Any, started: float, latency: float) -> None:
        call: dict[str, Any] = {
            "seq": len(self.calls), "start": round(started - self._t0, 4), "latency": round(latency, 4),
            "sampling": request.sampling.key(), "prompt_tokens": int(completion.prompt_tokens or 0),
            "generated_tokens": int(completion.generated_tokens or 0), "cached": bool(completion.cached),
            "repaired": bool(getattr(completion, "repaired", False)), "error": completion.error,
            "step": None, "attempt": None, "parse_error": None,
        }
        if self.prompts:  # the messages' text as sent (no copy): `to_json` chunks it
            call["messages"] = [[m.get("role", ""), str(m.get("content", ""))] for m in request.messages]
            call["schema"] = request.schema  # the object: encoded and chunked by `to_json`, off the event loop
            call["text"] = completion.text
            call["parsed"] = dumps(completion.parsed) if completion.parsed is not None else None
        self.calls.append(call)
        self._by_request[id(request)] = (request, call)

    def note(self, request: Any, *, step: str | None = None, attempt: int | None = None,
             parse_error: str | None = None) -> None:
        found = self._by_request.get(id(request))
        if found is None or found[0] is not request:
            return
        call = found[1]
        call["step"], call["attempt"], call["parse_error"] = step, attempt, parse_error

    def to_json(self) -> dict[str, Any]:
        """Plain JSON (it travels from a replica back to the driver with the sample's result): each call's messages
        as the hashes of their chunks (chunked here, in call order, so the same chunks as when each call was made)."""
        for call in self.calls[self._chunked:]:
            if call.get("schema") is not None:  # as the request held it (`add`); a window's schema is built per call
                call["schema"] = self._schema(call["schema"])
            msgs = call.get("messages")
            if msgs:
                call["messages"] = [[role, self.chunker.refs(text)] for role, text in msgs]
        self._chunked = len(self.calls)
        return {"calls": self.calls, "texts": self.texts, "prompts": self.prompts}

    def finished(self) -> "Any":
        """The sample's log as its result row carries it: in a replica, plain JSON (it travels to the driver); in the
        driver, a `Finished` that the eval log's writer turns into JSON in its child process (its raw calls
        pickled: `__getstate__`), off the event loop."""
        return self.to_json() if replica_id() is not None else Finished(self)


class Finished:
    """A finished sample's recorder, chunked and encoded when the eval log's writer asks for `to_json()`; pickled
    (a row that crosses processes after all) as that plain JSON."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    def to_json(self) -> dict[str, Any]:
        return self.recorder.to_json()

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (self.to_json(),))


class RecordingLLM(Layer):
    """A layer in front of the model as one sample's solver sees it: every `generate` is recorded."""

    def __init__(self, llm: Any, recorder: Recorder) -> None:
        super().__init__(llm)
        self.recorder = recorder

    async def generate(self, requests: list[Any]) -> list[Any]:
        t0 = time.perf_counter()
        completions = await self.llm.generate(requests)
        latency = time.perf_counter() - t0  # a batch's requests run together: each took the batch's time
        for request, completion in zip(requests, completions):
            self.recorder.add(request, completion, t0, latency)
        return completions


@contextmanager
def recording(llm: Any, prompts: bool = True) -> Iterator[tuple[RecordingLLM, Recorder]]:
    """The model wrapped for one sample, and its recorder made current for `note` while the block runs."""
    rec = Recorder(prompts)
    token = _CURRENT.set(rec)
    try:
        yield RecordingLLM(llm, rec), rec
    finally:
        _CURRENT.reset(token)


def replica_id() -> str | None:
    """The Ray actor this code runs in (a model replica), or None in the driver."""
    import sys

    if "ray" not in sys.modules:
        return None
    import ray

    if not ray.is_initialized():
        return None
    try:
        return ray.get_runtime_context().get_actor_id()
    except Exception:  # no runtime context here: not a replica
        return None


def note(request: Any, *, step: str | None = None, attempt: int | None = None, parse_error: str | None = None) -> None:
    """What the solver made of the answer to `request` (its step, re-ask attempt, parse error); a no-op when no
    sample is being recorded."""
    rec = _CURRENT.get()
    if rec is not None:
        rec.note(request, step=step, attempt=attempt, parse_error=parse_error)
