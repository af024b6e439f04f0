"""Reading a run's eval log (`writer.py` wrote it) beside the run's score tables, for the viewer and for tests.

Everything is read lazily per config and kept: the texts table once (every chunk of the run), a config's calls when
one of its samples is opened. Staged lines of a run still going (or killed) are read too, so an unfinished run can be
looked at; a sample solved more than once (a resume after a failure) shows its latest attempt.
"""

from __future__ import annotations

import json
import re
from functools import cached_property
from pathlib import Path
from typing import Any

import polars as pl

from emocaustics.evallog.record import JUDGE
from emocaustics.evallog.tables import ATTEMPT_SCHEMA, CALL_SCHEMA, SAMPLE_SCHEMA, _tables


NOT_SOLVED = "not solved: the run stopped before this sample (--resume solves it)"


def _read(path: Path, schema: dict[str, Any]) -> pl.DataFrame:
    return pl.read_parquet(path) if path.exists() else pl.DataFrame(schema=schema)


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


class RunLog:
    def __init__(self, run_dir: Path | str) -> None:
        self.run_dir = Path(run_dir)
        self.root = self.run_dir / "evallog"
        if not self.root.is_dir():
            from emocaustics.core.errors import UsageError

            raise UsageError(f"{self.run_dir}: no evallog/ folder (is this a run folder of `emocaustics run`?)")
        self._calls: dict[str, pl.DataFrame] = {}
        self.bad_lines: list[tuple[Path, int, str]] = []  # staged lines that are not JSON: (file, line number, why)

    # -- run-wide tables -----------------------------------------------------------------------------------------
    @cached_property
    def texts(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for part in sorted((self.root / "texts").glob("part-*.parquet")):
            frame = pl.read_parquet(part)
            out.update(zip(frame["hash"].to_list(), frame["text"].to_list()))
        for staged in self._staged_lines():
            out.update(staged.get("texts") or {})
        return out

    def _staged_lines(self, label: str | None = None) -> list[dict[str, Any]]:
        rows = []
        for path in sorted((self.root / "staging").glob(f"{label}.jsonl" if label else "*.jsonl")):
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                try:
                    rows.append({**json.loads(line), "_label": path.stem})
                except json.JSONDecodeError as exc:  # the viewer shows the rest; `bad_lines` names it (export refuses)
                    if (path, n, exc.msg) not in self.bad_lines:
                        self.bad_lines.append((path, n, exc.msg))
        return rows

    def text(self, refs: list[str] | None) -> str | None:
        if refs is None:
            return None
        return "".join(self.texts.get(h, f"[missing text {h}]") for h in refs)

    @cached_property
    def scores(self) -> pl.DataFrame | None:
        path = self.run_dir / "scores.parquet"
        return pl.read_parquet(path) if path.exists() else None

    @cached_property
    def items(self) -> pl.DataFrame | None:
        path = self.run_dir / "items.parquet"
        return pl.read_parquet(path) if path.exists() else None

    @cached_property
    def records(self) -> dict[str, dict[str, Any]]:
        """configs.json by label (a finished run), else each config's provenance (a run still going)."""
        path = self.run_dir / "configs.json"
        if path.exists():
            return {r["run"]: r for r in json.loads(path.read_text(encoding="utf-8"))}
        out = {}
        for prov in sorted((self.run_dir / "predictions").glob("*/provenance.json")):
            rec = json.loads(prov.read_text(encoding="utf-8"))
            out[prov.parent.name] = {"run": prov.parent.name, "task": rec.get("task"), "model": rec.get("model"),
                                     "method": (rec.get("options") or {}).get("method")}
        return out

    def labels(self) -> list[str]:
        found = {p.stem for sub in ("samples", "attempts") for p in (self.root / sub).glob("*.parquet")}
        found |= {p.stem for p in (self.root / "staging").glob("*.jsonl")}
        order = list(self.records)
        return [lb for lb in order if lb in found] + sorted(found - set(order))

    # -- one config ----------------------------------------------------------------------------------------------
    def all_attempts(self, label: str, judged: bool = False) -> pl.DataFrame:
        """Every solve attempt of every sample (status, reason, replica, cost), oldest first; `judged`: the lines of
        the scorer's judge calls instead (step `judge`)."""
        staged = pl.DataFrame(_tables(self._staged_lines(label))[1], schema=ATTEMPT_SCHEMA)  # as compaction makes them
        frame = pl.concat([_read(self.root / "attempts" / f"{label}.parquet", ATTEMPT_SCHEMA), staged])
        return frame.filter(pl.col("step").eq_missing(JUDGE) == judged).sort("finished")

    def attempts(self, label: str) -> pl.DataFrame:
        """Each sample's latest solve attempt."""
        return self.all_attempts(label).unique("sample_id", keep="last", maintain_order=True)

    def calls(self, label: str) -> pl.DataFrame:
        if label not in self._calls:  # the compacted calls, then the staged ones as compaction makes them
            self._calls[label] = pl.concat([_read(self.root / "calls" / f"{label}.parquet", CALL_SCHEMA),
                                            _tables(self._staged_lines(label))[0]])
        return self._calls[label]

    def _planned(self, label: str) -> list[str]:
        """The config's sample ids, from the provenance written before its first sample (none: nothing planned); an
        epoch's log (`LABEL.epoch-E`) plans its config's samples."""
        from emocaustics.core.provenance import read

        rec = read(self.run_dir / "predictions" / re.sub(r"\.epoch-\d+$", "", label))
        return [str(i) for i in rec["samples"]] if rec else []

    def samples(self, label: str) -> pl.DataFrame:
        return _read(self.root / "samples" / f"{label}.parquet", SAMPLE_SCHEMA)

    def table(self, label: str) -> pl.DataFrame:
        """One row per sample of the config: id, status, reason, score and metrics (when scored), calls, tokens."""
        base = self.samples(label).select("sample_id", "status", "reason")
        att = self.attempts(label).select("sample_id", pl.col("ok").alias("_ok"), pl.col("reason").alias("_reason"),
                                          "calls", "replica")
        if base.is_empty():  # not finished: a sample the run stopped before has no line yet, and is still counted
            tried = set(att["sample_id"].to_list())
            base = pl.DataFrame({"sample_id": [i for i in self._planned(label) if i not in tried]},
                                schema={"sample_id": pl.String}).with_columns(status=pl.lit("missing"),
                                                                              reason=pl.lit(NOT_SOLVED))
        frame = base.join(att, on="sample_id", how="full", coalesce=True).with_columns(
            pl.coalesce(pl.col("status"), pl.when(pl.col("_ok")).then(pl.lit("ok")).otherwise(pl.lit("failed")))
            .alias("status"), pl.coalesce("reason", "_reason").alias("reason")).drop("_ok", "_reason")
        if self.scores is not None and "run" in self.scores.columns:
            sc = self.scores.filter(pl.col("run") == label)  # one table for the run: other tasks' metrics are null
            keep = ["sample_id", "score", *[c for c in sc.columns if c.startswith("c_")
                                            and sc.get_column(c).null_count() < sc.height],
                    *[c for c in ("cache_hits", "prompt_tokens", "generated_tokens", "seconds") if c in sc.columns]]
            frame = frame.join(sc.select(keep), on="sample_id", how="left")
        return frame

    def sample(self, label: str, sample_id: str) -> dict[str, Any]:
        """One sample of one config: input, gold, prediction, status, its latest attempt's calls (prompts resolved),
        the scorer's judge calls (`judge`: its model, when and how long it judged, its calls) and item decisions."""
        row = self.samples(label).filter(pl.col("sample_id") == sample_id)
        rec = row.to_dicts()[0] if row.height else {}
        att = self.all_attempts(label).filter(pl.col("sample_id") == sample_id).to_dicts()
        latest = att[-1] if att else {}
        judged = self.all_attempts(label, judged=True).filter(pl.col("sample_id") == sample_id).to_dicts()[-1:]
        judge = {**_loads(judged[0]["stats"]), "finished": judged[0]["finished"],
                 "calls": self.attempt_calls(label, sample_id, judged[0]["attempt"])} if judged else None
        items = []
        if self.items is not None and "run" in self.items.columns:
            # The sample's key: `sample_id`, else the table's first column (a task's own, e.g. a dialogue number).
            # Only this config's rows, without the columns other tasks' items brought into the shared table.
            mine = self.items.filter(pl.col("run") == label).drop("run")
            mine = mine.select([c for c in mine.columns if mine.get_column(c).null_count() < mine.height])
            key = "sample_id" if "sample_id" in mine.columns else (mine.columns[0] if mine.columns else None)
            if key is not None:
                items = mine.filter(pl.col(key).cast(pl.Utf8) == sample_id).to_dicts()
        scored = {}
        if self.scores is not None and "run" in self.scores.columns:
            got = self.scores.filter((pl.col("run") == label) & (pl.col("sample_id") == sample_id)).to_dicts()
            scored = {k: v for k, v in got[0].items()
                      if k == "score" or (k.startswith("c_") and v is not None)} if got else {}
        return {
            "config": label, "sample_id": sample_id, "task": self.records.get(label, {}).get("task"),
            "input": _loads(self.text([rec["input"]])) if rec.get("input") else None,
            "target": _loads(self.text([rec["target"]])) if rec.get("target") else None,
            "prediction": _loads(rec.get("prediction")),
            "status": rec.get("status") or ("ok" if latest.get("ok") else "failed" if latest else "missing"),
            "reason": rec.get("reason") or latest.get("reason") or (None if rec or latest else NOT_SOLVED),
            "replica": latest.get("replica"),
            "stats": _loads(latest.get("stats")), "attempts": len(att),
            "calls": self.attempt_calls(label, sample_id, latest.get("attempt")), "judge": judge, "items": items,
            "scores": scored, "prompts": latest.get("prompts", True),
        }

    def attempt_calls(self, label: str, sample_id: str, attempt: str | None) -> list[dict[str, Any]]:
        """The calls of one attempt (a sample's solve, or its judge's line), in order, their texts resolved."""
        calls = self.calls(label).filter((pl.col("sample_id") == sample_id)
                                         & (pl.col("attempt") == (attempt or ""))).sort("seq")
        return [{**{k: c[k] for k in ("seq", "step", "retry", "start", "latency", "text", "error", "parse_error",
                                      "prompt_tokens", "generated_tokens", "cached", "repaired")},
                 "messages": [{"role": m["role"], "content": self.text(m["text"])} for m in c["messages"] or []],
                 "schema": _loads(self.text(c["schema"])), "sampling": _loads(c["sampling"]),
                 "parsed": _loads(c["parsed"])} for c in calls.to_dicts()]
