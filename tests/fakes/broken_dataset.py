"""A dataset folder (`chat/` + `emo/`) with every kind of damage the reliability tests throw at the loader.

Built from the repository's own sample dialogues (datasets/emocaustics/sample, written by us), so nothing published is copied.
Good dialogues keep their sample ids; each bad one is a named case with the file it breaks and what is wrong, so a
test can check that the reports name that file (and record / field where there is one).

    cases = build_broken_dataset(tmp_path / "data")
    cases.good      -> ids that must load and score 1.0 with the oracle
    cases.bad       -> {case name: BadCase(file, record, field, what)}
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[2] / "datasets" / "emocaustics" / "sample"
BIG_UTTERANCE_BYTES = 10 * 1024 * 1024  # "a 10 MB utterance"


@dataclass(frozen=True)
class BadCase:
    file: str  # e.g. chat/chat_4.json
    what: str
    record: int | None = None  # 0-based record index inside the file, where one is to blame
    field: str | None = None


@dataclass
class BrokenDataset:
    root: Path
    good: list[int]
    bad: dict[str, BadCase] = field(default_factory=dict)
    big_id: int | None = None  # the dialogue holding the 10 MB utterance (loads; it is large, not malformed)


def _chat(n: int) -> list[dict]:
    return json.loads((SAMPLE / "chat" / f"chat_{n}.json").read_text(encoding="utf-8"))


def _emo_bytes(n: int) -> bytes:
    return (SAMPLE / "emo" / f"emo_{n}.json").read_bytes()


def _dump(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=1)


def build_broken_dataset(root: Path, *, big_bytes: int = BIG_UTTERANCE_BYTES) -> BrokenDataset:
    chat, emo = root / "chat", root / "emo"
    chat.mkdir(parents=True)
    emo.mkdir(parents=True)
    good = [1, 2, 3]
    for n in good:
        shutil.copy(SAMPLE / "chat" / f"chat_{n}.json", chat / f"chat_{n}.json")
        shutil.copy(SAMPLE / "emo" / f"emo_{n}.json", emo / f"emo_{n}.json")
    out = BrokenDataset(root, good)

    # 4: broken JSON (the file stops in the middle of a record, as an interrupted download would)
    text = _dump(_chat(4))
    (chat / "chat_4.json").write_text(text[: len(text) // 2], encoding="utf-8")
    (emo / "emo_4.json").write_bytes(_emo_bytes(4))
    out.bad["broken_json"] = BadCase("chat/chat_4.json", "malformed JSON")

    # 5: a record without its Holder
    recs = _chat(5)
    del recs[2]["Holder"]
    (chat / "chat_5.json").write_text(_dump(recs), encoding="utf-8")
    (emo / "emo_5.json").write_bytes(_emo_bytes(5))
    out.bad["missing_field"] = BadCase("chat/chat_5.json", "missing field", record=2, field="Holder")

    # 6: a sentence that is a number, not a string
    recs = _chat(6)
    recs[1]["sentence"] = 12345
    (chat / "chat_6.json").write_text(_dump(recs), encoding="utf-8")
    (emo / "emo_6.json").write_bytes(_emo_bytes(6))
    out.bad["wrong_type"] = BadCase("chat/chat_6.json", "wrong type", record=1, field="sentence")

    # 7: a duplicated dialogue: chat_7/emo_7 are byte copies of chat_1/emo_1 (the same dialogue under two ids)
    shutil.copy(SAMPLE / "chat" / "chat_1.json", chat / "chat_7.json")
    shutil.copy(SAMPLE / "emo" / "emo_1.json", emo / "emo_7.json")
    out.bad["duplicate"] = BadCase("chat/chat_7.json", "byte-identical to chat_1.json")

    # 8: an empty dialogue
    (chat / "chat_8.json").write_text("[]", encoding="utf-8")
    (emo / "emo_8.json").write_text("{}", encoding="utf-8")
    out.bad["empty"] = BadCase("chat/chat_8.json", "no utterances")

    # 9: one utterance of ~10 MB (valid data, just huge): must neither crash nor stall the loader and scorer
    recs = _chat(7)
    filler = "很长的一句话。"
    recs[0]["sentence"] = filler * (big_bytes // len(filler.encode("utf-8")))
    (chat / "chat_9.json").write_text(_dump(recs), encoding="utf-8")
    (emo / "emo_9.json").write_bytes(_emo_bytes(7))
    out.big_id = 9

    # 10: non-UTF-8 bytes (the whole file in GBK, as a Windows editor would save it)
    (chat / "chat_10.json").write_bytes(_dump(_chat(8)).encode("gbk"))
    (emo / "emo_10.json").write_bytes(_emo_bytes(8))
    out.bad["non_utf8"] = BadCase("chat/chat_10.json", "not UTF-8")
    return out
