"""The ECF 2.0 test data of SemEval-2024 Task 3: where it is (`locate`), how to get it (`fetch`), and reading it into
samples (`load`).

A sample is one conversation: `id = str(conversation_ID)`, `input = {"conversation_ID", "utterances": [{"utterance_ID",
"speaker", "text"}]}` (no emotion labels: those are gold), `target = {"emotions", "subtask1", "subtask2"}` (the
utterance labels and the gold pairs as published; a subtask whose file is not loaded is None). Data defects (the gold
span of conversation 1821 that the official token rule cannot find, ...) are reported, never dropped.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from emocaustics.core.datasource import DataSource
from emocaustics.core.errors import UsageError
from emocaustics.core.task import Defect, Loaded, Sample
from emocaustics.core.textfile import read_json
from emocaustics.tasks.ecpe.gold import read_gold
from emocaustics.tasks.ecpe.validate import Gold

NAME = "ecac"
ENV = "EMOCAUSTICS_ECAC_DATA"
REPO = "NUSTM/SemEval-2024_ECAC"
COMMIT = "f6054366e358a9803fcd1ab92ae9921132816eb5"
URL = f"https://codeload.github.com/{REPO}/tar.gz/{COMMIT}"
FILES = {1: "Subtask_1_test.json", 2: "Subtask_2_test.json"}

SOURCE = DataSource(
    name=NAME, fetch_as="ecpe", title="SemEval-2024 Task 3 (ECF 2.0) evaluation data", env_var=ENV, urls=(URL,),
    # repository path (below the tarball's top folder) -> path in the dataset folder
    keep={"data/Subtask_1_test.json": "Subtask_1_test.json", "data/Subtask_2_test.json": "Subtask_2_test.json",
          "CodaLab/submission/Subtask_1_pred.json": "sample_submission/Subtask_1_pred.json",
          "CodaLab/submission/Subtask_2_pred.json": "sample_submission/Subtask_2_pred.json", "LICENSE": "LICENSE"},
    required=("data/Subtask_1_test.json", "data/Subtask_2_test.json"), marks=tuple(FILES.values()), marks_any=True,
    what="ECAC data folder", needs=" or ".join(FILES.values()),
    notes=(f"Repository: https://github.com/{REPO}, commit {COMMIT}: `data/Subtask_*_test.json`, "
           "`CodaLab/submission/` (as `sample_submission/`), `LICENSE`",
           "License: GNU GPL v3 (LICENSE beside this note); the organisers ask for research use only. Never commit "
           "these files to another repository."))


# The data folder (`data` if given, else $EMOCAUSTICS_ECAC_DATA, else the fetch cache) and its download: SOURCE's.
locate, fetch = SOURCE.locate, SOURCE.fetch


# -- samples ------------------------------------------------------------------------------------------------------
def load(root: Path, subtasks: tuple[int, ...] = (1, 2), ids: list[int] | None = None,
         max_samples: int | None = None) -> Loaded:
    """Conversations as samples, in file order; `ids` picks conversations (unknown ids are an error)."""
    golds: dict[int, Gold] = {}
    digest = hashlib.sha256()
    for st in subtasks:
        path = root / FILES[st]
        if not path.is_file():
            raise UsageError(f"{root}: no {FILES[st]} (needed for subtask {st})")
        digest.update(path.read_bytes())
        golds[st] = read_gold(read_json(path), st, str(path))
    first = golds[subtasks[0]]
    defects = [Defect(p.kind, _where(p), p.message) for g in golds.values() for p in g.problems]
    for st, g in golds.items():
        if g is first:
            continue
        if list(g.conversations) != list(first.conversations):
            defects.append(Defect("subtask_mismatch", g.file, f"conversation ids differ from {first.file}"))
        for cid, conv in g.conversations.items():
            other = first.conversations.get(cid)
            if other is not None and (other.texts != conv.texts or other.emotions != conv.emotions):
                defects.append(Defect("subtask_mismatch", f"{g.file}: conversation {cid}",
                                      f"utterance texts or labels differ from {first.file}"))
    order = list(first.conversations)
    if ids is not None:
        unknown = [i for i in ids if i not in first.conversations]
        if unknown:
            raise UsageError(f"conversation id(s) not in the test set: {', '.join(map(str, unknown))}")
        wanted = set(ids)
        order = [c for c in order if c in wanted]
    if max_samples is not None:
        order = order[:max_samples]
    samples = [_sample(cid, golds) for cid in order]
    future = sum(1 for g in golds.values() if g.subtask == 1 for c in g.conversations.values() for p in c.pairs
                 if p[1] > p[0])
    info = {"dataset": NAME, "split": "test", "root": str(root), "sha256": digest.hexdigest()[:16],
            "subtasks": list(subtasks), "conversations": len(first.conversations),
            "future_cause_pairs_subtask1": future, "cluster": "conversation"}
    return Loaded(samples, defects, info)


def _where(p: Any) -> str:
    where = f"{p.file}: conversation {p.conversation}"
    return where + (f", pair {p.pair}" if p.pair is not None else "")


def _sample(cid: int, golds: dict[int, Gold]) -> Sample:
    first = next(iter(golds.values()))  # set_size: finalize says when a submission covers fewer (a --limit run)
    conv = first.conversations[cid]
    utterances = [{"utterance_ID": i, "speaker": s, "text": t}
                  for i, (s, t) in enumerate(zip(conv.speakers, conv.texts), 1)]
    target = {"emotions": list(conv.emotions),
              "subtask1": golds[1].conversations[cid].raw_pairs if 1 in golds else None,
              "subtask2": golds[2].conversations[cid].raw_pairs if 2 in golds else None}
    return Sample(str(cid), {"conversation_ID": cid, "utterances": utterances}, target,  # a sample: one conversation
                  {"n_utterances": len(conv.texts), "cluster": str(cid), "set_size": len(first.conversations)})
