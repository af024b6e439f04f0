"""The eval log's Parquet tables: their schemas, and staged rows (one per finished sample attempt) made into them."""

from __future__ import annotations

from typing import Any

import polars as pl
import pyarrow as pa

from emocaustics.evallog.record import dumps

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


# calls' columns taken as they are from a staged call (the call's own `attempt` is the re-ask: column `retry`)
_CALL_FIELDS = [(k, "attempt" if k == "retry" else k) for k in CALL_SCHEMA
                if k not in ("sample_id", "attempt", "messages", "sampling", "schema")]


def _tables(rows: list[dict[str, Any]]) -> tuple[pl.DataFrame, list[dict[str, Any]], dict[str, str]]:
    """Staged rows -> the calls table, the attempts' rows and the chunks they carry. List columns (messages, schema)
    are built from flat values and offsets with pyarrow: polars makes a Series of every Python list it is given (30,000
    calls' 90,000 lists took 2 s)."""
    cols: dict[str, list[Any]] = {k: [] for k in CALL_SCHEMA if k not in ("messages", "schema")}
    msg_off, roles, ref_off, refs = [0], [], [0], []  # calls -> messages -> text hashes, flat
    msg_null, schema_off, schema_refs, schema_null = [], [0], [], []
    sampling: dict[Any, str] = {}
    attempts, texts = [], {}
    for row in rows:
        texts.update(row.get("texts") or {})
        row_calls = row.get("calls") or []
        n = len(row_calls)
        attempts.append({**{k: row.get(k) for k in ATTEMPT_SCHEMA}, "calls": n})
        cols["sample_id"] += [row["sample_id"]] * n
        cols["attempt"] += [row["attempt"]] * n
        for key, src in _CALL_FIELDS:
            cols[key] += [c.get(src) for c in row_calls]
        for c in row_calls:
            msgs = c.get("messages")
            msg_null.append(msgs is None)
            for r, t in msgs or ():
                roles.append(r)
                refs.extend(t)
                ref_off.append(len(refs))
            msg_off.append(len(roles))
            sch = c.get("schema")
            schema_null.append(sch is None)
            schema_refs.extend(sch or ())
            schema_off.append(len(schema_refs))
            s = c.get("sampling")
            key = tuple(s.items()) if isinstance(s, dict) else repr(s)
            if key not in sampling:
                sampling[key] = dumps(s, sort_keys=True)
            cols["sampling"].append(sampling[key])
    frame = pl.DataFrame(cols, schema={k: v for k, v in CALL_SCHEMA.items() if k in cols})
    text_lists = _arrow_lists(ref_off, refs, None)
    struct = pa.StructArray.from_arrays([_arrow(roles, pl.String), text_lists], names=["role", "text"])
    messages = pa.LargeListArray.from_arrays(_arrow(msg_off, pl.Int64), struct, mask=_arrow(msg_null, pl.Boolean))
    frame = frame.with_columns(pl.Series("messages", pl.from_arrow(messages)).cast(CALL_SCHEMA["messages"]),
                               pl.Series("schema", pl.from_arrow(_arrow_lists(schema_off, schema_refs, schema_null)))
                               .cast(CALL_SCHEMA["schema"]))
    return frame.select(list(CALL_SCHEMA)), attempts, texts


def _arrow(values: list[Any], dtype: Any) -> Any:
    """A flat Arrow array made by polars (pyarrow's own `pa.array` imports pandas, 0.3 s, the first time)."""
    got = pl.Series(values, dtype=dtype).to_arrow()
    return got.cast(pa.large_string()) if dtype == pl.String else got


def _arrow_lists(offsets: list[int], values: list[str], nulls: list[bool] | None) -> Any:
    return pa.LargeListArray.from_arrays(_arrow(offsets, pl.Int64), _arrow(values, pl.String),
                                         mask=None if nulls is None else _arrow(nulls, pl.Boolean))
