"""Writing a run's eval log (driver side): each sample as it finishes, Parquet once its config is done.

    <run>/evallog/staging/<config>.jsonl    one line per finished sample attempt: its calls (text by hash), the
                                            chunks of text not written before, status, replica, cost
    <run>/evallog/calls/<config>.parquet    one row per call, in order (messages as lists of text hashes)
    <run>/evallog/attempts/<config>.parquet one row per solve attempt of a sample (status, reason, replica, cost)
    <run>/evallog/samples/<config>.parquet  one row per sample once the config is scored: input, gold, prediction,
                                            status (calibration configs too)
    <run>/evallog/texts/part-NNNNN.parquet  hash -> text, every chunk once for the whole run

A killed run keeps every line written; `--resume` compacts what was staged and adds new attempts (the reader shows a
sample's latest). Compaction is idempotent (rows are unique by key), so a crash during it loses nothing. It reads
the staged lines back, at the config's end or (a killed attempt's) at the next run's start: one path for both.
All of that work (chunking each finished recorder, encoding and staging its line, building the tables) runs in a child
process (`process.ChildWriter`, started at a run's first sample, stopped when its last open config is finished, or
by `close`; at the process's exit it finishes on its own): in a thread of the driver it held the GIL against the
event loop that drives the calls. The driver only pickles each finished sample's raw calls; its prediction is written
without waiting for the line (the child catches up behind; a config's `finish` waits for it), so a run killed outright
may keep a prediction whose line was not written yet. A line that fails, or a child that dies, fails the next sample
handed over (or the `finish`) with an `EvalLogError` naming the run folder and the config: the run stops there.
A write that fails (a full disk) stops the run with one line naming its path (`core.writes.WriteFailed`); the lines
and tables written before it stay whole.
Secrets (values of the environment's key/token/password variables) are replaced before anything is written, and a
job with `log: {prompts: false}` keeps no prompt, answer or sample input (calls keep counts and timings; gold and
prediction stay, as in the run's other files).
"""

from __future__ import annotations

import json
import os
import time
import weakref
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import polars as pl

from emocaustics.core.redact import Redactor, secrets as known_secrets
from emocaustics.core.writes import append_line, atomic_parquet, writing
from emocaustics.evallog.process import ChildWriter
from emocaustics.evallog.record import JUDGE, Finished, dumps, text_hash
from emocaustics.evallog.tables import ATTEMPT_SCHEMA, SAMPLE_SCHEMA, _tables

_FIELDS: dict[type, tuple[str, ...]] = {}  # a dataclass's field names


def _plain(obj: Any) -> Any:
    """One level of `core.content.jsonable` for the JSON encoder (which walks dicts, lists and tuples itself)."""
    import dataclasses

    from pydantic import BaseModel

    names = _FIELDS.get(type(obj))
    if names is None and dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        names = _FIELDS[type(obj)] = tuple(f.name for f in dataclasses.fields(obj))
    if names is not None:
        return {name: getattr(obj, name) for name in names}
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    return str(obj)


def _json_plain(value: Any) -> str:
    """The sorted JSON text of `jsonable(value)`, without copying the whole value first."""
    try:
        return dumps(value, default=_plain, sort_keys=True)
    except (TypeError, ValueError):  # dict keys the encoder does not take (a tuple): the slow way
        from emocaustics.core.task import jsonable

        return dumps(jsonable(value), sort_keys=True)


class EvalLog:
    """One run's eval log folder; `config(label)` gives the writer of one config."""

    def __init__(self, run_dir: Path, *, prompts: bool = True, secrets: list[str] | None = None,
                 _state: dict[str, Any] | None = None) -> None:
        self.root = Path(run_dir) / "evallog"
        self.prompts = prompts
        self.secrets = known_secrets() if secrets is None else secrets  # the URL credentials too (core/redact.py)
        self.redact = Redactor(self.secrets)
        self.attempt = f"{time.time():.6f}-{os.getpid()}"  # this process's attempt at the run
        self._child: ChildWriter | None = None
        self._open: set[str] = set()  # configs with samples sent to the child and not finished
        if _state is not None:  # the child's copy of the parent's log (`_serve_log`): nothing to scan or compact
            self.attempt, self.known, self._written = _state["attempt"], _state["known"], _state["written"]
            return
        with writing(self.root):
            for sub in ("staging", "calls", "attempts", "samples", "texts"):
                (self.root / sub).mkdir(parents=True, exist_ok=True)
        self.known: set[str] = set()
        for part in sorted((self.root / "texts").glob("part-*.parquet")):
            self.known.update(pl.read_parquet(part, columns=["hash"])["hash"].to_list())
        self._written = set(self.known)  # the chunks in texts/ (`known`: and those staged, not yet compacted)
        for staged in sorted((self.root / "staging").glob("*.jsonl")):  # a killed attempt's samples: kept
            self._compact(staged.stem)

    def config(self, label: str) -> "ConfigLog":
        return ConfigLog(self, label)

    def _send(self, label: str, message: tuple, what: str, opens: bool = True) -> "Future[Any]":
        if self._child is None:
            state = {"root": str(self.root.parent), "prompts": self.prompts, "secrets": self.secrets,
                     "attempt": self.attempt, "known": self.known, "written": self._written}
            self._child = ChildWriter(_serve_log, state, f"eval log of run {self.root.parent}")
            # a log dropped unclosed, or the process's exit: the child ends once it has written what it was sent
            self._finalizer = weakref.finalize(self, self._child.detach)
        if opens:
            self._open.add(label)
        return self._child.submit(message, f"config {label}, {what}")

    def close(self) -> None:
        """Stop the writer process once the lines sent are written (the log's state comes back to this process);
        a later sample starts a new one. Also on an error that stops the run (`sink.active`)."""
        child, self._child = self._child, None
        self._open.clear()
        if child is None:
            return
        self._finalizer.detach()
        state = child.stop()
        if state is not None:
            self.known, self._written = state["known"], state["written"]

    # -- texts ---------------------------------------------------------------------------------------------------
    def _new_texts(self, texts: dict[str, str]) -> dict[str, str]:
        """The chunks not written before (marked as written: the caller stages them)."""
        fresh = {h: t for h, t in texts.items() if h not in self.known}
        self.known.update(fresh)
        return fresh

    def _flush_texts(self, texts: dict[str, str]) -> None:
        """Chunks into a new texts part (those not there yet). Like `_new_texts`, only ever called from one thread (the
        child's, or the driver's where no child runs): no lock."""
        self.known.update(texts)
        rows = {h: t for h, t in texts.items() if h not in self._written}
        if not rows:
            return
        parts = sorted((self.root / "texts").glob("part-*.parquet"))
        n = int(parts[-1].stem.split("-")[1]) + 1 if parts else 0
        frame = pl.DataFrame({"hash": list(rows), "text": [self.redact(t) for t in rows.values()]},
                             schema={"hash": pl.Utf8, "text": pl.Utf8})
        atomic_parquet(frame, self.root / "texts" / f"part-{n:05d}.parquet")
        self._written.update(rows)

    # -- compaction ----------------------------------------------------------------------------------------------
    def _compact(self, label: str) -> None:
        """Staged lines of `label` into its Parquet tables (merged with what is there), then the staging file goes."""
        staged = self.root / "staging" / f"{label}.jsonl"
        if not staged.exists():
            return
        rows = []
        for line in staged.read_text(encoding="utf-8").splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:  # the last line of a killed run may be cut: that sample runs again
                continue
        calls, attempts, texts = _tables(rows)
        self._flush_texts(texts)
        atomic_parquet(calls, self.root / "calls" / f"{label}.parquet", merge_on=["sample_id", "attempt", "seq"])
        atomic_parquet(pl.DataFrame(attempts, schema=ATTEMPT_SCHEMA), self.root / "attempts" / f"{label}.parquet",
                       merge_on=["sample_id", "attempt"])
        staged.unlink()


class ConfigLog:
    """The eval log of one config: `emit` each sample as it finishes, `finish` once the config is scored."""

    def __init__(self, log: EvalLog, label: str) -> None:
        self.log, self.label = log, label
        self.prompts = log.prompts
        self.path = log.root / "staging" / f"{label}.jsonl"

    def emit(self, sample_id: str, result: dict[str, Any]) -> "Future[None] | None":
        """One finished sample: `result` has ok, step, reason, stats, replica and `log` (a `Recorder.to_json()`, or a
        `record.Finished` whose text is chunked by the writer). The log's child process chunks, encodes and stages it,
        off the caller's event loop: the future is done once its line is written, and nobody on the run's path waits
        for it. Raises what failed before (`process.ChildWriter.submit`)."""
        got = {k: result.get(k) for k in ("ok", "step", "reason", "replica", "log")}
        got["stats"] = dumps(result.get("stats") or {}, sort_keys=True)
        if isinstance(got["log"], Finished):  # the child chunks it: it gets the raw calls (`Recorder.__getstate__`)
            got["log"] = got["log"].recorder
        return self.log._send(self.label, ("emit", self.label, str(sample_id), got, time.time()), f"sample {sample_id}")

    def _write(self, sample_id: str, result: dict[str, Any], finished: float) -> None:
        rec = result.get("log") or {}
        if hasattr(rec, "to_json"):  # a recorder sent raw: chunked here (the child), in call order
            rec = rec.to_json()
        calls = rec.get("calls") or []
        texts = rec.get("texts") or {}
        if not self.prompts:  # whatever a replica recorded, no prompt or answer text is kept
            calls = [{k: v for k, v in c.items() if k not in ("messages", "schema", "text", "parsed")} for c in calls]
            texts = {}
        judged = result.get("step") == JUDGE  # a scorer's judge calls: an attempt of their own, beside the solve's
        row = {"sample_id": sample_id, "attempt": self.log.attempt + f".{JUDGE}" * judged, "finished": finished,
               "ok": bool(result.get("ok")), "step": result.get("step"), "reason": result.get("reason"),
               "replica": result.get("replica"), "calls": calls, "stats": result["stats"],
               "prompts": self.prompts, "texts": self.log._new_texts(texts)}
        line = self.log.redact(dumps(row))
        append_line(self.path, line)  # a line cut by a full disk is cut back off: the staged lines stay readable

    def finish(self, samples: list[Any], predictions: dict[str, Any]) -> None:
        """Compact what was staged and write every sample's input, gold and prediction (the dataset's and the
        predictions' side of the log; calibration configs have only this)."""
        from emocaustics.core.task import Failure

        texts: dict[str, str] = {}
        rows = []
        for s in samples:
            ref = {}
            for key, value in (("input", s.input), ("target", s.target)):
                if key == "input" and not self.prompts:  # the input is what the prompts are made of
                    ref[key] = None
                    continue
                text = self.log.redact(_json_plain(value))
                ref[key] = text_hash(text)
                texts[ref[key]] = text
            pred = predictions.get(s.id)
            failed = isinstance(pred, Failure)
            rows.append({"sample_id": s.id, **ref, "status": "failed" if failed else ("ok" if s.id in predictions
                                                                                       else "missing"),
                         "prediction": None if failed or s.id not in predictions
                         else self.log.redact(_json_plain(pred)),
                         "reason": self.log.redact(str(pred)) if failed else None})
        self.log._open.discard(self.label)
        if self.log._child is None:
            self._finish(rows, texts)
            return
        self.log._send(self.label, ("finish", self.label, rows, texts), "its finish", opens=False).result()
        if not self.log._open:  # no other config has samples in the child: it ends with the run's last config
            self.log.close()

    def abort(self) -> None:
        """The run stopped with an error (`sink.active`): the writer process ends (the lines sent are written)."""
        self.log.close()

    def _finish(self, rows: list[dict[str, Any]], texts: dict[str, str]) -> None:
        self.log._compact(self.label)
        self.log._flush_texts(texts)
        atomic_parquet(pl.DataFrame(rows, schema=SAMPLE_SCHEMA), self.log.root / "samples" / f"{self.label}.parquet")


def _serve_log(state: dict[str, Any]) -> Any:
    """The child's handler (`process._serve`): the parent's log as it was when the child started, then each message
    (a sample to stage, a config to finish, stop) in order."""
    log = EvalLog(Path(state["root"]), prompts=state["prompts"], secrets=state["secrets"], _state=state)

    def handle(message: tuple) -> Any:
        if message[0] == "emit":
            label, sample_id, result, finished = message[1:]
            return log.config(label)._write(sample_id, result, finished)
        if message[0] == "finish":
            return log.config(message[1])._finish(*message[2:])
        return {"known": log.known, "written": log._written}
    return handle
