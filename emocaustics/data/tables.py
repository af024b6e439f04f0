"""Dialogues as tables: a Polars frame of utterances, and a Ray Dataset of one JSON-serialisable row per dialogue."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import polars as pl

from emocaustics.data.io import parse_chains, parse_chat_records
from emocaustics.data.schema import SEXTUPLE_FIELDS, Dialogue, chains_to_json

if TYPE_CHECKING:
    import ray.data

UTTERANCE_SCHEMA: dict[str, Any] = {
    "dialogue_id": pl.Int64, "source": pl.Utf8, "chat_file": pl.Utf8, "index": pl.Int64, "holder": pl.Utf8,
    "sentence": pl.Utf8, "has_sextuple": pl.Boolean, **{f: pl.Utf8 for f in SEXTUPLE_FIELDS},
}


def utterances_table(dialogues: Iterable[Dialogue]) -> pl.DataFrame:
    """One row per utterance; sextuple columns are '' where the ground truth has none (`has_sextuple` says which)."""
    rows = []
    for d in dialogues:
        for u in d.utterances:
            gt = u.gt
            rows.append({
                "dialogue_id": d.id, "source": d.source, "chat_file": d.chat_files[0] if d.chat_files else "",
                "index": u.index, "holder": u.holder, "sentence": u.sentence,
                "has_sextuple": gt is not None and not gt.is_empty(),
                **{f: (getattr(gt, f) if gt else "") for f in SEXTUPLE_FIELDS},
            })
    return pl.DataFrame(rows, schema=UTTERANCE_SCHEMA)


def dialogue_to_row(d: Dialogue) -> dict[str, Any]:
    """A flat, JSON-serialisable row; `utterances` and `chains` are JSON text in the published shapes."""
    utts = [{"sentence": u.sentence, "Holder": u.holder,
             **{f.capitalize(): (getattr(u.gt, f) if u.gt else "") for f in SEXTUPLE_FIELDS}} for u in d.utterances]
    return {
        "id": d.id, "source": d.source, "chat_files": list(d.chat_files), "emo_files": list(d.emo_files),
        "n_utterances": len(d.utterances), "holders": list(d.holders),
        "utterances": json.dumps(utts, ensure_ascii=False),
        "chains": None if d.chains is None else json.dumps(chains_to_json(d.chains), ensure_ascii=False),
    }


def dialogue_from_row(row: dict[str, Any]) -> Dialogue:
    """Inverse of `dialogue_to_row` (rows were written by us, so defects here are a bug: raise)."""
    name = (list(row["chat_files"]) or [f"dialogue {row['id']}"])[0]
    utts, defects = parse_chat_records(json.loads(row["utterances"]), name)
    chains = None
    if row.get("chains") is not None:
        chains, more = parse_chains(json.loads(row["chains"]), name)
        defects += [d for d in more if d.kind not in ("source_self", "source_id", "label_noise")]
    bad = [d for d in defects if d.kind not in ("label_noise", "empty")]
    if bad:
        raise ValueError(f"row {row['id']} does not round-trip: {bad[0]}")
    return Dialogue(int(row["id"]), tuple(utts), tuple(row["chat_files"]), tuple(row["emo_files"]), chains,
                    str(row["source"]))


def to_ray_dataset(dialogues: Iterable[Dialogue]) -> ray.data.Dataset:
    """A Ray Dataset with one row per dialogue (see `dialogue_to_row`); Ray must be initialised by the caller
    or it starts a local one."""
    import ray.data

    return ray.data.from_items([dialogue_to_row(d) for d in dialogues])
