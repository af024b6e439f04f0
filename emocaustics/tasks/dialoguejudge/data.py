"""A round's conversations for `dialogue-judge`: `dialogues_<round>.jsonl` (one line per rated conversation, see the
data's SOURCE.md) beside the round's normative `hits_data_<round>.json`, whose metadata (criteria, systems, the qc
system) the conversations are rated by. Both are found where the `human` task finds its ratings (`human.data.SOURCE`:
the `data` option, $EMOCAUSTICS_HUMANEVAL_DATA, or the fetch cache); a user's own round is a folder of the same shape.
`data fetch` brings the ratings but not the conversations (rebuilt from the upstream HIT_detail files), so the task
declares no data source of its own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from emocaustics.core.errors import DataError, UsageError
from emocaustics.core.task import Sample
from emocaustics.core.textfile import read_text, shown
from emocaustics.tasks.human.data import SOURCE, Metadata, read_hits

ROUNDS = ("FreeTopicRound1", "FreeTopicRound2")
KEYS = ("hit", "assignment", "worker", "model", "turns", "scores")


def round_files(data: str | None, split: str) -> tuple[Path, Path]:
    """(conversations, metadata file) of round `split`."""
    root = SOURCE.locate(data)
    folder = root if root.is_dir() else root.parent
    found = folder / f"dialogues_{split}.jsonl", folder / f"hits_data_{split}.json"
    for path in found:
        if not path.is_file():
            raise UsageError(f"{path}: no such file (round {split}'s conversations are built from the upstream "
                             "dialogue_data/HIT_detail files beside its hits_data file: see the data's SOURCE.md)")
    return found


def load_round(data: str | None, split: str) -> tuple[Metadata, list[Sample], Path]:
    """The round's metadata and one Sample per conversation (id `<assignment>#<position>`; input: topic and turns;
    target: the worker's raw ratings; meta: hit, assignment, worker, model, the metadata, cluster = assignment)."""
    convs, hits_file = round_files(data, split)
    meta = read_hits(hits_file).metadata
    meta_json = meta.to_json()
    known = set(meta.models) | {meta.qc_model}
    samples: list[Sample] = []
    seen: dict[str, int] = {}
    for n, line in enumerate(read_text(convs, what="conversations file").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj: Any = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"not JSON ({exc.msg})", file=str(convs), record=f"line {n}") from None
        if not isinstance(obj, dict):
            raise DataError("must be an object", file=str(convs), record=f"line {n}")
        for key in KEYS:
            if key not in obj:
                raise DataError(f"has no {key!r}", file=str(convs), record=f"line {n}", field=key)
        if obj["model"] not in known:
            raise DataError(f"system {shown(obj['model'])} is not in {hits_file.name}'s metadata", file=str(convs),
                            record=f"line {n}", field="model")
        if not isinstance(obj["turns"], list) or not all(isinstance(t, dict) for t in obj["turns"]):
            raise DataError("must be a list of turns", file=str(convs), record=f"line {n}", field="turns")
        scores = obj["scores"] if isinstance(obj["scores"], dict) else {}
        for spec in meta.scores:
            value = scores.get(spec.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= spec.max:
                raise DataError(f"must be a number in [0, {spec.max:g}], got {shown(value)}", file=str(convs),
                                record=f"line {n}", field=f"scores.{spec.name}")
        aid = str(obj["assignment"])
        seen[aid] = seen.get(aid, 0) + 1
        samples.append(Sample(f"{aid}#{seen[aid]}", {"topic": obj.get("topic"), "turns": obj["turns"]},
                              {s.name: float(scores[s.name]) for s in meta.scores},
                              {"hit": str(obj["hit"]), "assignment": aid, "worker": str(obj["worker"]),
                               "model": obj["model"], "metadata": meta_json, "cluster": aid}))
    if not samples:
        raise UsageError(f"{convs}: no conversations")
    return meta, samples, convs
