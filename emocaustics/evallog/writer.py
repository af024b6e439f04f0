"""Writing a run's eval log (driver side): each sample as it finishes, Parquet once its config is done.

    <run>/evallog/staging/<config>.jsonl    one line per finished sample attempt: its calls (text by hash), the
                                            chunks of text not written before, status, replica, cost
    <run>/evallog/calls/<config>.parquet    one row per call, in order (messages as lists of text hashes)
    <run>/evallog/attempts/<config>.parquet one row per solve attempt of a sample (status, reason, replica, cost)
    <run>/evallog/samples/<config>.parquet  one row per sample once the config is scored: input, gold, prediction,
                                            status (calibration configs too)
    <run>/evallog/texts/part-NNNNN.parquet  hash -> text, every chunk once for the whole run

A killed run keeps every line written; `--resume` compacts what was staged and adds new attempts (the reader shows a
sample's latest). Compaction is idempotent (rows are unique by key), so a crash during it loses nothing.
Secrets (values of the environment's key/token/password variables) are replaced before anything is written, and a
job with `log: {prompts: false}` keeps no prompt, answer or sample input (calls keep counts and timings; gold and
prediction stay, as in the run's other files).
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

import polars as pl

from emocaustics.evallog.record import text_hash

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH", re.IGNORECASE)
REDACTED = "[redacted]"
CALL_SCHEMA: dict[str, Any] = {
    "sample_id": pl.Utf8, "attempt": pl.Utf8, "seq": pl.Int64, "step": pl.Utf8, "retry": pl.Int64,
    "start": pl.Float64, "latency": pl.Float64, "messages": pl.List(pl.Struct({"role": pl.Utf8,
                                                                                 "text": pl.List(pl.Utf8)})),
    "schema": pl.List(pl.Utf8), "sampling": pl.Utf8, "text": pl.Utf8, "parsed": pl.Utf8, "error": pl.Utf8,
    "parse_error": pl.Utf8, "prompt_tokens": pl.Int64, "generated_tokens": pl.Int64, "cached": pl.Boolean,
    "repaired": pl.Boolean,
}
ATTEMPT_SCHEMA: dict[str, Any] = {
    "sample_id": pl.Utf8, "attempt": pl.Utf8, "finished": pl.Float64, "ok": pl.Boolean, "step": pl.Utf8,
    "reason": pl.Utf8, "replica": pl.Utf8, "calls": pl.Int64, "stats": pl.Utf8, "prompts": pl.Boolean,
}
SAMPLE_SCHEMA: dict[str, Any] = {
    "sample_id": pl.Utf8, "input": pl.Utf8, "target": pl.Utf8, "prediction": pl.Utf8, "status": pl.Utf8,
    "reason": pl.Utf8,
}


def secrets_from_env(environ: dict[str, str] | None = None) -> list[str]:
    """Values of variables whose names say they hold a secret (8 characters or more: shorter ones are not keys)."""
    env = os.environ if environ is None else environ
    return sorted({v for k, v in env.items() if SECRET_NAME.search(k) and len(v.strip()) >= 8}, key=len, reverse=True)


class Redactor:
    def __init__(self, secrets: list[str]) -> None:
        forms = set()
        for s in secrets:
            forms.update({s, json.dumps(s)[1:-1], json.dumps(s, ensure_ascii=False)[1:-1]})
        self.forms = sorted(forms, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for form in self.forms:
            if form in text:
                text = text.replace(form, REDACTED)
        return text


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)


class EvalLog:
    """One run's eval log folder; `config(label)` gives the writer of one config."""

    def __init__(self, run_dir: Path, *, prompts: bool = True, secrets: list[str] | None = None) -> None:
        self.root = Path(run_dir) / "evallog"
        self.prompts = prompts
        self.redact = Redactor(secrets_from_env() if secrets is None else secrets)
        self.attempt = f"{time.time():.6f}-{os.getpid()}"  # this process's attempt at the run
        self._lock = threading.Lock()
        for sub in ("staging", "calls", "attempts", "samples", "texts"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        self.known: set[str] = set()
        for part in sorted((self.root / "texts").glob("part-*.parquet")):
            self.known.update(pl.read_parquet(part, columns=["hash"])["hash"].to_list())
        for staged in sorted((self.root / "staging").glob("*.jsonl")):  # a killed attempt's samples: kept
            self._compact(staged.stem)

    def config(self, label: str) -> "ConfigLog":
        return ConfigLog(self, label)

    # -- texts ---------------------------------------------------------------------------------------------------
    def _new_texts(self, texts: dict[str, str]) -> dict[str, str]:
        """The chunks not written before (marked as written: the caller stages them)."""
        with self._lock:
            fresh = {h: t for h, t in texts.items() if h not in self.known}
            self.known.update(fresh)
        return fresh

    def _write_texts(self, rows: dict[str, str]) -> None:
        if not rows:
            return
        parts = sorted((self.root / "texts").glob("part-*.parquet"))
        n = int(parts[-1].stem.split("-")[1]) + 1 if parts else 0
        frame = pl.DataFrame({"hash": list(rows), "text": [self.redact(t) for t in rows.values()]},
                             schema={"hash": pl.Utf8, "text": pl.Utf8})
        _atomic_parquet(frame, self.root / "texts" / f"part-{n:05d}.parquet")

    # -- compaction ----------------------------------------------------------------------------------------------
    def _compact(self, label: str) -> None:
        """Staged lines of `label` into its Parquet tables (merged with what is there), then the staging file goes."""
        staged = self.root / "staging" / f"{label}.jsonl"
        if not staged.exists():
            return
        calls, attempts, texts = [], [], {}
        for line in staged.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:  # the last line of a killed run may be cut: that sample runs again
                continue
            texts.update(row.pop("texts", {}))
            row_calls = row.pop("calls", None) or []
            row["calls"] = len(row_calls)
            for c in row_calls:
                calls.append({"sample_id": row["sample_id"], "attempt": row["attempt"], "seq": c["seq"],
                              "step": c.get("step"), "retry": c.get("attempt"), "start": c.get("start"),
                              "latency": c.get("latency"),
                              "messages": [{"role": r, "text": t} for r, t in c.get("messages") or []] or None,
                              "schema": c.get("schema"), "sampling": _json(c.get("sampling")),
                              "text": c.get("text"), "parsed": c.get("parsed"), "error": c.get("error"),
                              "parse_error": c.get("parse_error"), "prompt_tokens": c.get("prompt_tokens"),
                              "generated_tokens": c.get("generated_tokens"), "cached": c.get("cached"),
                              "repaired": c.get("repaired")})
            attempts.append({k: row.get(k) for k in ATTEMPT_SCHEMA})
        with self._lock:
            on_disk = set()
            for part in sorted((self.root / "texts").glob("part-*.parquet")):
                on_disk.update(pl.read_parquet(part, columns=["hash"])["hash"].to_list())
            self._write_texts({h: t for h, t in texts.items() if h not in on_disk})
            self.known.update(texts)
        _merge(self.root / "calls" / f"{label}.parquet", pl.DataFrame(calls, schema=CALL_SCHEMA),
               ["sample_id", "attempt", "seq"])
        _merge(self.root / "attempts" / f"{label}.parquet", pl.DataFrame(attempts, schema=ATTEMPT_SCHEMA),
               ["sample_id", "attempt"])
        staged.unlink()


class ConfigLog:
    """The eval log of one config: `emit` each sample as it finishes, `finish` once the config is scored."""

    def __init__(self, log: EvalLog, label: str) -> None:
        self.log, self.label = log, label
        self.prompts = log.prompts
        self.path = log.root / "staging" / f"{label}.jsonl"
        self._lock = threading.Lock()

    def emit(self, sample_id: str, result: dict[str, Any]) -> None:
        """One finished sample: `result` has ok, step, reason, stats, replica and `log` (a `Recorder.to_json()`)."""
        rec = result.get("log") or {}
        calls = rec.get("calls") or []
        texts = rec.get("texts") or {}
        if not self.prompts:  # whatever a replica recorded, no prompt or answer text is kept
            calls = [{k: v for k, v in c.items() if k not in ("messages", "schema", "text", "parsed")} for c in calls]
            texts = {}
        row = {"sample_id": str(sample_id), "attempt": self.log.attempt, "finished": time.time(),
               "ok": bool(result.get("ok")), "step": result.get("step"), "reason": result.get("reason"),
               "replica": result.get("replica"), "calls": calls, "stats": _json(result.get("stats") or {}),
               "prompts": self.prompts, "texts": self.log._new_texts(texts)}
        line = self.log.redact(json.dumps(row, ensure_ascii=False, default=str))
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")

    def finish(self, samples: list[Any], predictions: dict[str, Any]) -> None:
        """Compact what was staged and write every sample's input, gold and prediction (the dataset's and the
        predictions' side of the log; calibration configs have only this)."""
        from emocaustics.core.task import Failure, jsonable

        self.log._compact(self.label)
        texts: dict[str, str] = {}
        rows = []
        for s in samples:
            ref = {}
            for key, value in (("input", s.input), ("target", s.target)):
                if key == "input" and not self.prompts:  # the input is what the prompts are made of
                    ref[key] = None
                    continue
                text = self.log.redact(_json(jsonable(value)))
                ref[key] = text_hash(text)
                texts[ref[key]] = text
            pred = predictions.get(s.id)
            failed = isinstance(pred, Failure)
            rows.append({"sample_id": s.id, **ref, "status": "failed" if failed else ("ok" if s.id in predictions
                                                                                       else "missing"),
                         "prediction": None if failed or s.id not in predictions
                         else self.log.redact(_json(jsonable(pred))),
                         "reason": self.log.redact(str(pred)) if failed else None})
        with self.log._lock:
            fresh = {h: t for h, t in texts.items() if h not in self.log.known}
            self.log._write_texts(fresh)
            self.log.known.update(fresh)
        _atomic_parquet(pl.DataFrame(rows, schema=SAMPLE_SCHEMA), self.log.root / "samples" / f"{self.label}.parquet")


def _merge(path: Path, new: pl.DataFrame, key: list[str]) -> None:
    if path.exists():
        new = pl.concat([pl.read_parquet(path), new], how="vertical_relaxed")
    _atomic_parquet(new.unique(subset=key, keep="first", maintain_order=True), path)


def _atomic_parquet(frame: pl.DataFrame, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    frame.write_parquet(tmp, compression="zstd", compression_level=9)
    os.replace(tmp, path)
