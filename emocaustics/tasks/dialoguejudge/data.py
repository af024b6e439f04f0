"""A round's conversations for `dialogue-judge`, one record per rated conversation (the fields the data's SOURCE.md
describes), the same from either form of the data folder (`-D data=`, $EMOCAUSTICS_HUMANEVAL_DATA, the fetch cache):
- `dialogues_<round>.jsonl`, one record per line, beside the round's normative `hits_data_<round>.json`, whose
  metadata (criteria, systems, the qc system) they are rated by (the team's copy, ../shared/datasets/humaneval);
- else the round's folder (`<round>/`, or the upstream's name `free(run1)`) of the upstream HIT_detail files, what
  `data fetch dialogue-judge` keeps: one `(flag)ASSIGNMENT_HIT_WORKER.txt` per assignment, each system's
  conversation, persona, topic, topic change and ratings in a block between `#` lines; no hits_data file there, so
  the metadata is read off the files (`metadata_of`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from emocaustics.core.datasource import DataSource
from emocaustics.core.errors import DataError, UsageError
from emocaustics.core.task import Sample
from emocaustics.core.textfile import json_lines, read_text, shown
from emocaustics.tasks.human.data import COMMIT, ENV_VAR, REPO, URL, Metadata, parse_metadata, read_hits

FOLDERS = {"FreeTopicRound1": "free(run1)", "FreeTopicRound2": "free(run2)"}  # upstream dialogue_data/HIT_detail/
ROUNDS = tuple(FOLDERS)
KEYS = ("hit", "assignment", "worker", "model", "turns", "scores")
QC = "qc"  # the degraded quality-control system, as the HIT_detail files name it
Entry = tuple[str, str, Any]  # (file, record: "line N", the record) of one conversation, for errors that name both

SOURCE = DataSource(
    name="humaneval-dialogues", fetch_as="dialogue-judge", env_var=ENV_VAR, urls=(URL,),
    title="Conversations of the human assessment of open-domain dialogue systems (ACL 2022)",
    keep={"LICENSE": "LICENSE", **{f"dialogue_data/HIT_detail/{up}/": f"{r}/" for r, up in FOLDERS.items()}},
    required=tuple(f"dialogue_data/HIT_detail/{up}/*.txt" for up in FOLDERS.values()), what="conversations folder",
    notes=(f"Repository: https://github.com/{REPO}, folders `dialogue_data/HIT_detail/free(run1|run2)/` (here "
           f"named by the round), commit {COMMIT}", "License: MIT (LICENSE beside this note)"))

SEP = "#" * 20  # above the first: the worker's feedback (left out); then one block per system, each ended by one
SECTIONS = {"Conversation:": "turns", "Persona:": "persona", "Topic and Human Opinion:": "topic",
            "Topic Change and Chatbot Opinion:": "topic_change", "Revised avg score:": "scores"}  # in this order
FILE_NAME = re.compile(r"\((\w+)\)(\w+?)_(\w+?)_(\w+)\.txt")
TURN = re.compile(r"User\((\d+)\): ?(.*)\nBot\(\1\): ?(.*)")  # one round: the user's line, the bot's answer
RATING = re.compile(r"(\w[\w ]*?)(\(↓\))?: (\d+(?:\.\d+)?)")  # (↓): a negative criterion, reversed by the method


def hit_detail(folder: Path, split: str, positive: dict[str, bool]) -> list[Entry]:
    """The records of every HIT_detail file of `folder`, in file-name order (the shared jsonl's), each system's in
    the file's order; `positive` gathers the criteria (name -> not marked (↓)) in the order the files give them."""
    out: list[Entry] = []
    for path in sorted(folder.glob("*.txt")):
        ids = FILE_NAME.fullmatch(path.name)
        if ids is None:
            raise DataError("not a HIT_detail file name, (flag)ASSIGNMENT_HIT_WORKER.txt", file=str(path))
        blocks: list[list[tuple[int, str]]] = []  # the non-blank lines (number, text) of each block
        for n, line in enumerate(read_text(path, what="HIT_detail file").split("\n"), 1):
            if line == SEP:
                blocks.append([])
            elif line and blocks:
                blocks[-1].append((n, line))
        out += [(str(path), f"line {b[0][0]}", _record(path, b, split, ids.groups(), positive)) for b in blocks if b]
    return out


def _record(path: Path, block: list[tuple[int, str]], split: str, ids: tuple[str, ...],
            positive: dict[str, bool]) -> dict[str, Any]:
    """One system's block as the record the jsonl holds (`model` with `_p` where a persona was shown)."""
    where = lambda n: {"file": str(path), "record": f"line {n}"}  # noqa: E731
    (at, head), got = block[0], {}  # section -> its lines
    if not head.startswith("Model: "):
        raise DataError(f"expected 'Model: NAME', got {shown(head)}", **where(at))
    for n, line in block[1:]:
        if len(got) < len(SECTIONS) and line.startswith(list(SECTIONS)[len(got)]):
            got[list(SECTIONS.values())[len(got)]] = []
        elif not got:
            raise DataError(f"expected 'Conversation:', got {shown(line)}", **where(n))
        else:
            got[list(got)[-1]].append((n, line))
    if len(got) < len(SECTIONS):
        raise DataError(f"system {head[7:]!r} has no {list(SECTIONS)[len(got)]!r} section", **where(at))
    turns: list[dict[str, Any]] = []
    for k, (n, _) in enumerate(got["turns"][::2], 1):  # each User(k) line, then its Bot(k)
        pair = "\n".join(line for _, line in got["turns"][2 * k - 2:2 * k])
        if (turn := TURN.fullmatch(pair)) is None or turn[1] != str(k):
            raise DataError(f"expected User({k}): TEXT and Bot({k}): TEXT, got {shown(pair)}", **where(n))
        turns.append({"round": k, "user": turn[2], "bot": turn[3]})
    scores: dict[str, float] = {}
    for n, line in got["scores"]:
        rating = RATING.fullmatch(line)
        if rating is None:
            raise DataError(f"expected a rating 'Criterion: 0-100', got {shown(line)}", **where(n))
        scores[rating[1].lower()] = json.loads(rating[3])  # an int where the file has one, as the jsonl
        positive.setdefault(rating[1].lower(), rating[2] is None)
    text = {key: [line for _, line in got[key]] for key in ("persona", "topic", "topic_change")}
    persona = [] if text["persona"] == ["None"] else text["persona"]
    flag, assignment, hit, worker = ids
    return {"round": split, "hit": hit, "assignment": assignment, "worker": worker,
            "file_flag": {"True": True, "False": False}.get(flag, flag),  # True: the worker passed QC
            "model": head[7:] + ("_p" if persona and head[7:] != QC else ""), "turns": turns, "persona": persona,
            "topic": "\n".join(text["topic"]),
            "topic_change": "" if text["topic_change"] == ["None"] else "\n".join(text["topic_change"]),
            "scores": scores}


def metadata_of(entries: list[Entry], positive: dict[str, bool], folder: Path) -> Metadata:
    """A HIT_detail round's metadata, as the free-topic rounds' normative files have it: the criteria in the files'
    order on 0-100 sliders, those marked (↓) negative, the positive ones tested by quality control and shown first;
    the systems found (sorted) beside the qc system `qc`; no fixed ranking (round 2's normative file carries round
    1's order, for the self-replication tables of `human replicate`, which this task does not make)."""
    return parse_metadata({"score": {n: {"positive": p, "qc": p, "max": 100} for n, p in positive.items()},
                           "model": sorted({e[2]["model"] for e in entries} - {QC}), "qc-model": QC,
                           "sorted_scores": sorted(positive, key=lambda n: not positive[n])}, file=str(folder))


def load_round(data: str | None, split: str) -> tuple[Metadata, list[Sample], Path]:
    """The round's metadata and one Sample per conversation (id `<assignment>#<position>`; input: topic and turns;
    target: the worker's raw ratings; meta: hit, assignment, worker, model, the metadata, cluster = assignment)."""
    root = SOURCE.locate(data)
    folder = root if root.is_dir() else root.parent
    origin, hits = folder / f"dialogues_{split}.jsonl", folder / f"hits_data_{split}.json"
    txt = next((p for p in (folder / split, folder / FOLDERS[split]) if p.is_dir()), None)
    entries: list[Entry] = []
    if origin.is_file():
        for n, obj, problem in json_lines(read_text(origin, what="conversations file")):
            if problem:
                raise DataError(problem, file=str(origin), record=f"line {n}")
            entries.append((str(origin), f"line {n}", obj))
        meta = read_hits(hits).metadata  # a missing one: "<its path>: no such ratings file"
    elif txt is not None:
        positive: dict[str, bool] = {}
        origin, entries = txt, hit_detail(txt, split, positive)
        meta = metadata_of(entries, positive, txt)
    else:
        raise UsageError(f"{origin}: no such file, nor a folder {split}/ of the round's HIT_detail files "
                         f"({SOURCE.hint()})")
    meta_json = meta.to_json()
    known = set(meta.models) | {meta.qc_model}
    samples: list[Sample] = []
    seen: dict[str, int] = {}
    for file, record, obj in entries:
        if not isinstance(obj, dict):
            raise DataError("must be an object", file=file, record=record)
        for key in KEYS:
            if key not in obj:
                raise DataError(f"has no {key!r}", file=file, record=record, field=key)
        if obj["model"] not in known:
            raise DataError(f"system {shown(obj['model'])} is not in the round's metadata", file=file,
                            record=record, field="model")
        if not isinstance(obj["turns"], list) or not all(isinstance(t, dict) for t in obj["turns"]):
            raise DataError("must be a list of turns", file=file, record=record, field="turns")
        scores = obj["scores"] if isinstance(obj["scores"], dict) else {}
        for spec in meta.scores:
            value = scores.get(spec.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= spec.max:
                raise DataError(f"must be a number in [0, {spec.max:g}], got {shown(value)}", file=file,
                                record=record, field=f"scores.{spec.name}")
        aid = str(obj["assignment"])
        seen[aid] = seen.get(aid, 0) + 1
        samples.append(Sample(f"{aid}#{seen[aid]}", {"topic": obj.get("topic"), "turns": obj["turns"]},
                              {s.name: float(scores[s.name]) for s in meta.scores},
                              {"hit": str(obj["hit"]), "assignment": aid, "worker": str(obj["worker"]),
                               "model": obj["model"], "metadata": meta_json, "cluster": aid}))
    if not samples:
        raise UsageError(f"{origin}: no conversations")
    return meta, samples, origin
