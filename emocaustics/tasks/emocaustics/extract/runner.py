"""Running many dialogues: each one an async state machine (`extract_one`), all of them concurrently.

`extract_one(llm, item)` is the whole method for one dialogue; it is a plain module-level coroutine function so that
the model pool can run it *inside* a replica actor, next to the engine (`llm.run(extract_one, items, affinity)`), and
each dependent step is a local call there instead of a round trip from the driver. Backends without an actor (an
OpenAI-compatible endpoint, a test double) run it in the calling process.

`run_items` keeps up to `concurrency` dialogues in flight and writes each dialogue's prediction (or failure row) the
moment it finishes, each dialogue starting as soon as its own embeddings are ready (`embedfeed.py`); `runray.py`
runs it for a command or a job and writes the manifest.
"""

from __future__ import annotations

import asyncio
import base64
import time
from pathlib import Path
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from emocaustics.core.inflight import Slot, run_in_flight
from emocaustics.evallog import sink
from emocaustics.evallog.record import recording, replica_id
from emocaustics.tasks.emocaustics.extract import chains as chain_methods
from emocaustics.tasks.emocaustics.extract import sextuple as sx
from emocaustics.tasks.emocaustics.extract.sextuple import EmbeddingFailed
from emocaustics.solve.ask import Asker, StepFailed
from emocaustics.tasks.emocaustics.extract.output import append_failure, write_prediction
from emocaustics.tasks.emocaustics.extract.prompts import SYSTEM
from emocaustics.tasks.emocaustics.extract.windows import windows

DEFAULT_WINDOWS = {"sextuple": (20, 5), "emotion": (30, 10)}
# Utterances in flight per dialogue slot when dialogues run in this process (an endpoint): the whole dataset's 256
# longest dialogues hold 21,949 utterances (86 each), so a run of the dataset itself is never held back, and ten times
# the data holds about as much as the dataset (before: 2.3 times as much, 51,060)
UTTERANCES_PER_SLOT = 96
# Prompt characters that cost a replica about as much as generating one answer of an utterance (item_weight). A coarse
# calibration on the simulated Qwen2.5-72B on 4x H100 (benchmarks/sim_engine.py): alone on a replica, a 165-utterance
# dialogue's rag / window runs cost 2.6x / 3.1x its direct run; 1200 weighs them 3.3x / 2.8x (issue 31).
PROMPT_CHARS_PER_ANSWER = 1200


class ExtractConfig(BaseModel):
    """Everything that decides what a run asks the model; recorded in the manifest."""

    model_config = ConfigDict(extra="forbid")

    task: Literal["sextuple", "emotion"]
    method: Literal["direct", "rag", "window"]
    window: int | None = Field(default=None, ge=1)
    step: int | None = Field(default=None, ge=1)
    top_k: int = Field(default=3, ge=0)  # rag: retrieved earlier utterances
    rag_threshold: float = 0.5  # rag: minimum cosine of a retrieved utterance
    join_threshold: float = 0.85  # window: cosine for joining an event by embedding
    event_context: Literal["asof", "strict", "final"] = "asof"
    max_events: int = Field(default=8, ge=1)  # bucket events shown per prompt
    max_log_lines: int = Field(default=6, ge=1)  # log lines shown per event
    retries: int = Field(default=2, ge=0)
    max_tokens_cap: int = Field(default=4096, ge=16)  # max_tokens when the schema's bound is higher

    @model_validator(mode="after")
    def _check(self) -> "ExtractConfig":
        if self.task == "emotion" and self.method == "rag":
            raise ValueError("emotion chains have the methods direct and window (rag is a sextuple method)")
        k, s = self.k, self.s
        if s > k:
            raise ValueError(f"step {s} is larger than window {k}")
        return self

    @property
    def k(self) -> int:
        return self.window or DEFAULT_WINDOWS[self.task][0]

    @property
    def s(self) -> int:
        return self.step or DEFAULT_WINDOWS[self.task][1]

    def needs_embeddings(self, has_prior: bool) -> bool:
        if self.task == "sextuple":
            return self.method in ("rag", "window")
        return self.method == "window" and not has_prior  # chains build their own sextuple window run then

    def window_settings(self) -> sx.WindowSettings:
        k, s = (self.k, self.s) if self.task == "sextuple" else DEFAULT_WINDOWS["sextuple"]
        return sx.WindowSettings(k=k, s=s, join_threshold=self.join_threshold, event_context=self.event_context,
                                 max_events=self.max_events, max_log_lines=self.max_log_lines)


def make_item(dialogue_id: int, sentences: list[str], holders: list[str], cfg: ExtractConfig,
              emb: np.ndarray | None = None, prior: list[dict] | None = None) -> dict[str, Any]:
    """One dialogue as a plain, serialisable work item (it travels to a Ray actor)."""
    return {"id": int(dialogue_id), "sentences": list(sentences), "holders": list(holders),
            "config": cfg.model_dump(), "emb": None if emb is None else pack(emb), "prior": prior}


def pack(emb: np.ndarray) -> dict[str, Any]:
    """Embeddings as base64 float32 (a quarter of the size of a JSON list of floats) with their shape."""
    a = np.ascontiguousarray(emb, dtype=np.float32)
    return {"shape": list(a.shape), "b64": base64.b64encode(a.tobytes()).decode("ascii")}


def unpack(packed: dict[str, Any]) -> np.ndarray:
    return np.frombuffer(base64.b64decode(packed["b64"]), dtype=np.float32).reshape(packed["shape"])


def item_affinity(item: dict[str, Any]) -> str:
    """One replica per (dialogue, config): a dialogue's prompts within one config share prefixes (prefix-cache hits);
    across configs the templates differ, so tying all configs of a dialogue to one replica would only unbalance. Except
    one: an emotion `window` run without a prior sextuple run makes its own, whose prompts are those of the sextuple
    `window` run of the same dialogue and window settings; both get that run's key, so one prefix cache serves both (at
    64 simulated replicas this took the paper grid from 626 to 574 simulated seconds; issue 31)."""
    c = item["config"]
    if c["method"] == "window" and (c["task"] == "sextuple" or item.get("prior") is None):
        ws = ExtractConfig.model_validate(c).window_settings()
        return f"{item['id']}:sextuple:window:{ws.k}:{ws.s}"
    return f"{item['id']}:{c['task']}:{c['method']}:{c.get('window')}:{c.get('step')}"


def item_weight(item: dict[str, Any]) -> int:
    """Expected cost of a dialogue-run for load balancing, in answers of about one utterance's size: the answers it
    generates, plus the prompt text that no earlier prompt of the run shares (a prefix cache cannot serve it) at
    PROMPT_CHARS_PER_ANSWER. Utterances alone overrate a long dialogue's chain `direct` run (one bounded answer per
    holder) and underrate `window` (pass 1 answers every utterance too); in a mixed grid that unbalanced the replicas
    (busiest at 1.10x the mean in the 10x scale benchmark). Answers alone underrate `rag` and `window` on dialogues of
    long utterances: every rag prompt starts with its retrieved lines and every window shows K new-to-the-cache
    utterances; alone on a simulated replica a rag run of 165 utterances of ~117 characters cost 2.6x its `direct` run,
    one of 52 utterances of ~16 characters 1.0x (issue 31)."""
    n, chars = len(item["sentences"]), sum(len(s) for s in item["sentences"])
    cfg = ExtractConfig.model_validate(item["config"])
    ws = cfg.window_settings()
    window_prompts = 2 * ws.k * chars / ws.s  # each window's text, shown once in pass 1 and once in pass 2
    if cfg.task == "sextuple":
        if cfg.method == "direct":
            return n  # the dialogue is the shared prefix of every call
        if cfg.method == "rag":
            return n + round((cfg.k + cfg.top_k + 1) * chars / PROMPT_CHARS_PER_ANSWER)
        return 2 * n + round(window_prompts / PROMPT_CHARS_PER_ANSWER)
    holders = len(set(item["holders"]))
    if cfg.method == "direct":
        return 3 * holders  # at most 3 events x 4 emotions per holder
    own_sextuples = 2 * n + round(window_prompts / PROMPT_CHARS_PER_ANSWER) if item.get("prior") is None else 0
    return own_sextuples + 3 * len(windows(n, cfg.k, cfg.s)) + holders  # chain windows, then the merges


def item_chain(item: dict[str, Any]) -> int:
    """The answers of a dialogue-run that wait for each other in sequence (its critical path, for placement), in
    `item_weight`'s unit: `window`'s pass 1 answers every utterance, window after window, then a round of pass 2
    answers side by side (1); the chain method adds one per chain window and the merge. `direct` and `rag` answer side
    by side: 1. (Counting calls instead rated a chain run's cheap chain windows like pass-1 windows; alone on a
    simulated replica both kinds of run take ~1.4 s per unit of this measure: benchmarks/scale_bench.py.)"""
    cfg = ExtractConfig.model_validate(item["config"])
    if cfg.method != "window":
        return 1
    n = len(item["sentences"])
    own = n + 1 if cfg.task == "sextuple" or item.get("prior") is None else 0
    return own if cfg.task == "sextuple" else own + len(windows(n, cfg.k, cfg.s)) + 1


async def _method(asker: Asker, cfg: ExtractConfig, d: sx.DialogueInput, emb: sx.Embeddings | None,
                  prior: list[dict] | None) -> Any:
    if cfg.task == "sextuple":
        if cfg.method == "direct":
            return await sx.direct(asker, d)
        if cfg.method == "rag":
            assert emb is not None, "rag needs embeddings"
            return await sx.rag(asker, d, emb, k=cfg.k, top_k=cfg.top_k, threshold=cfg.rag_threshold)
        records, _ = await sx.window(asker, d, emb, cfg.window_settings())
        return records
    if cfg.method == "direct":
        return chain_methods.to_json(d, await chain_methods.direct(asker, d))
    if prior is None:  # the chain windows and the merge wait for this sextuple run
        then = len(windows(len(d), cfg.k, cfg.s)) + 1
        prior, _ = await sx.window(asker, d, emb, cfg.window_settings(), then=then)
    built = await chain_methods.window(asker, d, prior, k=cfg.k, s=cfg.s)
    return chain_methods.to_json(d, await chain_methods.merge(asker, built))


async def extract_one(llm: Any, item: dict[str, Any]) -> dict[str, Any]:
    """The state machine of one dialogue: a prediction, or a failure naming the step and the reason."""
    cfg = ExtractConfig.model_validate(item["config"])
    d = sx.DialogueInput(int(item["id"]), tuple(item["sentences"]), tuple(item["holders"]))
    # Packed with the item when it travels to a replica, or a ticket to the run's embedding board (rows posted as
    # the driver's feed embeds them); in this process it may be a feed's lazy `emb_source`.
    if item.get("emb") is not None:
        emb = sx.Embeddings(unpack(item["emb"]))
    elif item.get("emb_board") is not None:
        from emocaustics.tasks.emocaustics.extract.embedboard import board_embeddings

        emb = board_embeddings(*item["emb_board"])
    else:
        emb = item.get("emb_source")
    log_prompts = item.get("log_prompts")  # set when the job keeps an eval log (evallog/sink.py)
    t0 = time.perf_counter()
    row: dict[str, Any] = {"dialogue": d.id, "utterances": len(d), "ok": False, "prediction": None, "step": None,
                           "reason": None}
    with recording(llm, bool(log_prompts)) as (recorded, rec):
        asker = Asker(recorded if log_prompts is not None else llm, system=SYSTEM, affinity=item_affinity(item),
                      retries=cfg.retries, max_tokens_cap=cfg.max_tokens_cap)
        try:
            if len(d) == 0:
                raise StepFailed("input", "the dialogue has no utterances")
            row["prediction"] = await _method(asker, cfg, d, emb, item.get("prior"))
            row["ok"] = True
        except StepFailed as exc:
            row["step"], row["reason"] = exc.step, exc.reason
        except ValueError as exc:  # e.g. a prior sextuple prediction of the wrong length
            row["step"], row["reason"] = "input", str(exc)
        except EmbeddingFailed as exc:
            row["step"], row["reason"] = "embedding", str(exc)
    if log_prompts is not None:
        row["log"], row["replica"] = rec.finished(), replica_id()
    row["stats"] = asker.stats.to_json()
    row["retry_reasons"] = asker.retry_reasons
    row["seconds"] = round(time.perf_counter() - t0, 3)
    return row


def failure_row(item: dict[str, Any], step: str, reason: str) -> dict[str, Any]:
    return {"dialogue": int(item["id"]), "utterances": len(item["sentences"]), "ok": False, "prediction": None,
            "step": step, "reason": reason, "stats": {}, "seconds": 0.0}


async def _run_one(llm: Any, item: dict[str, Any]) -> dict[str, Any]:
    from emocaustics.models.local import RunFailure, run_item

    run = getattr(llm, "run", None)
    if run is not None:
        res = (await run(extract_one, [item], item_affinity, weight_key=item_weight, chain_key=item_chain))[0]
    else:
        res = await run_item(llm, extract_one, item)
    if isinstance(res, RunFailure):  # the state machine itself crashed, or its replica died for good
        return failure_row(item, "runner", res.reason)
    return res


async def run_items(llm: Any, items: list[dict[str, Any]], out: Path, task: str, *, concurrency: int = 256,
                    embeddings: Any = None,
                    on_row: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Every item to a result row (prediction dropped from the row once written); files written as each finishes.

    `embeddings` (an `EmbedFeed`: `get(item)`, `upto(item, n)`) gives an item's utterance embeddings when the item has
    none (`needs_emb`): awaited before the item is shipped to a replica, or handed to the state machine as a lazy
    source when it runs in this process, so that each dialogue starts as soon as its own inputs are ready. `on_row`
    sees each row as it is written (progress)."""
    in_process = not getattr(llm, "runs_remotely", False)
    log = sink.current()  # the job's eval log of this config, if any

    async def one(item: dict[str, Any], slot: Slot) -> dict[str, Any]:
        if item.get("skip_reason"):
            row = failure_row(item, "input", item["skip_reason"])
        else:
            if log is not None:
                item["log_prompts"] = log.prompts
            row = await _with_embeddings(llm, item, embeddings, in_process)
        await slot.release()  # solved: the log line and the files need no bound
        if log is not None:  # before the prediction: a dialogue with a prediction always has its log line
            written = log.emit(str(row["dialogue"]), row)
            row.pop("log", None)
            if written is not None:  # the log's writer process chunks and stages it: the prediction waits for its line
                await asyncio.wrap_future(written)
        if row["ok"]:
            write_prediction(out, task, row["dialogue"], row.pop("prediction"))
        else:
            row.pop("prediction", None)
            append_failure(out, {"dialogue": row["dialogue"], "step": row["step"], "reason": row["reason"]})
        if on_row is not None:
            on_row(row)
        return row

    # Started longest dialogue first (the longest chain of dependent calls sets the run's length; with more
    # dialogues than `concurrency` a long one must not wait behind short ones); rows come back in the items' order.
    # Dialogues run in this process hold their answers until they end: their utterances in flight are bounded too
    # (core/inflight.py), so that ten times the data does not put ten copies of the longest dialogues in memory at once.
    # Not when the caller asked for every item in flight (a batch API collects them all into one batch).
    order = sorted(range(len(items)), key=lambda i: -len(items[i].get("sentences") or ()))
    bounded = in_process and concurrency < len(items)
    rows = await run_in_flight((items[i] for i in order), one, limit=concurrency,
                               weight=lambda it: max(1, len(it.get("sentences") or ())),
                               budget=concurrency * UTTERANCES_PER_SLOT if bounded else None)
    by_index = dict(zip(order, rows))
    return [by_index[i] for i in range(len(items))]


async def _with_embeddings(llm: Any, item: dict[str, Any], feed: Any, in_process: bool) -> dict[str, Any]:
    if feed is None or not item.get("needs_emb") or item.get("emb") is not None:
        return await _run_one(llm, item)

    async def source() -> np.ndarray:
        try:
            return await feed.get(item)
        except Exception as exc:
            raise EmbeddingFailed(str(exc)) from None

    async def partial(n: int) -> np.ndarray:
        try:
            return await feed.upto(item, n)
        except Exception as exc:
            raise EmbeddingFailed(str(exc)) from None

    if in_process:
        return await _run_one(llm, {**item, "emb_source": sx.Embeddings(source, partial)})
    if getattr(feed, "board", None) is not None:  # shipped now; the replica awaits its rows when a step needs them
        return await _run_one(llm, {**item, "emb_board": (feed.board, feed.ticket(item))})
    try:
        return await _run_one(llm, {**item, "emb": pack(await source())})
    except EmbeddingFailed as exc:
        return failure_row(item, "embedding", str(exc))


def embed_items(embedder: Any, items: list[dict[str, Any]]) -> None:
    """Fill `emb` of every item with one batched embedding call over all their utterances (a per-dialogue index:
    each item gets only its own rows)."""
    texts = [s for it in items for s in it["sentences"]]
    if not texts:
        return
    vecs = np.asarray(asyncio.run(embedder.embed(texts)), dtype=np.float32)
    at = 0
    for it in items:
        n = len(it["sentences"])
        it["emb"] = pack(vecs[at:at + n])
        at += n
