"""Reading and validating the published JSON shapes (chat records, emotion chains), reporting every defect.

The same validators read prediction files of the same shapes (the scorer reuses them), so they never raise on bad
content: they return what is usable plus a list of `Defect`s naming file, record and field.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from emocaustics.tasks.longdialogue.data.schema import LABELS, Chains, Defect, Emotion, Event, Sextuple, Utterance, normalise_label

CHAT_FIELDS: tuple[str, ...] = ("sentence", "Holder", "Target", "Aspect", "Opinion", "Sentiment", "Rationale")
# published field name -> Sextuple attribute
_SEXTUPLE_MAP = {"Target": "target", "Aspect": "aspect", "Opinion": "opinion", "Sentiment": "sentiment",
                 "Rationale": "rationale"}

# Separators met in source_id values (",", the full-width "，") and ones annotators plausibly use ("、", ";", "/", "和").
_SOURCE_SPLIT = re.compile(r"\s*(?:,|，|、|;|；|/|\||和|&)\s*|\s+")
# Words that mean "the holder itself": they map to the holder whose chain holds the emotion.
SELF_WORDS = frozenset({"self", "myself", "自己", "本人", "自身"})


# ---------------------------------------------------------------------------------------------------------- reading

def decode(data: bytes, file: str, *, repair: bool = False) -> tuple[str | None, Defect | None]:
    """UTF-8 text (a BOM is accepted); other bytes are an `encoding` defect, or with `repair` a GB18030 reading."""
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        before = data[: exc.start].decode("utf-8", "replace")
        line = before.count("\n", 0, exc.start) + 1
        col = exc.start - (before.rfind("\n", 0, exc.start) + 1) + 1
        msg = f"not UTF-8: byte 0x{data[exc.start]:02x} at offset {exc.start}"
        if repair:
            try:
                text = data.decode("gb18030")
            except UnicodeDecodeError:
                pass
            else:
                return text, Defect("repaired", file, f"{msg}; decoded as GB18030", line=line, column=col)
        return None, Defect("encoding", file, msg, line=line, column=col)


def parse_json_text(text: str, file: str, *, repair: bool = False) -> tuple[Any | None, Defect | None]:
    """Parse JSON text; malformed -> `malformed` Defect with line/column, or with `repair` json-repair's reading
    reported as a `repaired` Defect (still carrying where the original broke)."""
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        broken = Defect("malformed", file, exc.msg, line=exc.lineno, column=exc.colno)
    if not repair:
        return None, broken
    import json_repair  # only paid for when repairing

    fixed = json_repair.repair_json(text, return_objects=True)
    # json-repair returns "" when nothing usable is left: that is not a repair.
    if fixed in ("", None) or not isinstance(fixed, (dict, list)):
        return None, broken
    return fixed, Defect("repaired", file, f"{broken.message}; repaired with json-repair",
                         line=broken.line, column=broken.column)


def read_json(path: str | Path, *, repair: bool = False) -> tuple[Any | None, Defect | None]:
    """Read one JSON file. Returns (object, None), (None, defect) or, with `repair`, (object, `repaired` defect)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        return None, Defect("unreadable", path.name, f"cannot read {path}: {exc.strerror or exc}")
    return parse_bytes(data, path.name, repair=repair)


def parse_bytes(data: bytes, file: str, *, repair: bool = False) -> tuple[Any | None, Defect | None]:
    text, enc_defect = decode(data, file, repair=repair)
    if text is None:
        return None, enc_defect
    obj, defect = parse_json_text(text, file, repair=repair)
    if enc_defect is not None and obj is not None:
        # both an encoding repair and maybe a JSON repair: report the encoding one, mention the other
        if defect is not None:
            enc_defect = Defect("repaired", file, f"{enc_defect.message}; {defect.message}",
                                line=enc_defect.line, column=enc_defect.column)
        return obj, enc_defect
    return obj, defect


# ------------------------------------------------------------------------------------------------------ chat records

def _text_field(rec: dict, key: str, file: str, idx: int, defects: list[Defect]) -> str:
    if key not in rec:
        defects.append(Defect("missing_field", file, f"field {key!r} is missing", record=idx, field=key))
        return ""
    value = rec[key]
    if isinstance(value, str):
        return value
    if value is None:
        defects.append(Defect("wrong_type", file, "null where a string is expected; read as ''", record=idx, field=key))
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        # Holder ids written as numbers: the meaning is unambiguous, so coerce and say so.
        defects.append(Defect("wrong_type", file, f"{type(value).__name__} {value!r} where a string is expected; "
                              f"read as {str(value)!r}", record=idx, field=key))
        return str(value)
    defects.append(Defect("wrong_type", file, f"{type(value).__name__} where a string is expected; read as ''",
                          record=idx, field=key))
    return ""


def label_noise(raw: str, file: str, *, record: int | None, field: str) -> Defect | None:
    """A `label_noise` Defect when `raw` is not one of LABELS after trimming and lower-casing."""
    if normalise_label(raw) in LABELS:
        return None
    return Defect("label_noise", file, f"label {raw!r} is not one of {'/'.join(LABELS)}", record=record, field=field)


def parse_chat_records(obj: Any, file: str) -> tuple[list[Utterance], list[Defect]]:
    """Validate a chat file (a list of `{sentence, Holder, Target, Aspect, Opinion, Sentiment, Rationale}`).

    Every record becomes an Utterance at its own index (so positions stay aligned with predictions), even when
    fields are missing or mistyped; each problem is a Defect. Labels are kept as published (the scorer normalises);
    noisy ones are reported. `gt` is None only when all five sextuple fields are empty.
    """
    defects: list[Defect] = []
    if not isinstance(obj, list):
        return [], [Defect("wrong_type", file, f"top level is {type(obj).__name__}, expected a list of records")]
    if not obj:
        defects.append(Defect("empty", file, "no utterances"))
    utterances: list[Utterance] = []
    for idx, rec in enumerate(obj):
        if not isinstance(rec, dict):
            defects.append(Defect("wrong_type", file, f"record is {type(rec).__name__}, expected an object; "
                                  "kept as an empty utterance", record=idx))
            utterances.append(Utterance(idx, "", ""))
            continue
        sentence = _text_field(rec, "sentence", file, idx, defects)
        if "sentence" in rec and not sentence.strip():
            defects.append(Defect("empty", file, "empty sentence", record=idx, field="sentence"))
        holder = _text_field(rec, "Holder", file, idx, defects).strip()
        values = {attr: _text_field(rec, key, file, idx, defects) for key, attr in _SEXTUPLE_MAP.items()}
        gt = Sextuple(**values)
        if "Sentiment" in rec:  # '' counts as noise too, with or without a sextuple (the spec lists it)
            noise = label_noise(gt.sentiment, file, record=idx, field="Sentiment")
            if noise:
                defects.append(noise)
        extra = sorted(set(rec) - set(CHAT_FIELDS))
        if extra:
            defects.append(Defect("extra_field", file, f"unexpected fields {extra} ignored", record=idx))
        has_any = any(getattr(gt, a).strip() for a in _SEXTUPLE_MAP.values())
        utterances.append(Utterance(idx, sentence, holder, gt if has_any else None))
    return utterances, defects


# ---------------------------------------------------------------------------------------------------- emotion chains

def split_source_ids(raw: str, *, self_id: str | None = None,
                     known: frozenset[str] | set[str] = frozenset()) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Split a source_id value into (ids, unparsed tokens).

    A token is an id when it is a number (leading zeros dropped) or one of `known` (holder ids such as "妈妈");
    "self"/"自己" become `self_id` when it is given. Everything else is returned as unparsed, for reporting.
    """
    ids: list[str] = []
    rest: list[str] = []
    for token in _SOURCE_SPLIT.split(raw.strip()):
        if not token:
            continue
        if token.isdigit():
            tid = str(int(token))
        elif token in known:
            tid = token
        elif token.lower() in SELF_WORDS and self_id is not None:
            tid = self_id
        else:
            rest.append(token)
            continue
        if tid not in ids:
            ids.append(tid)
    return tuple(ids), tuple(rest)


def _emotion(obj: Any, file: str, holder: str, where: str, known: frozenset[str],
             defects: list[Defect]) -> Emotion | None:
    if not isinstance(obj, dict):
        defects.append(Defect("wrong_type", file, f"{where}: emotion is {type(obj).__name__}, expected an object"))
        return None
    vals: dict[str, str] = {}
    for key in ("state", "reason", "source_id"):
        if key not in obj:
            defects.append(Defect("missing_field", file, f"{where}: field {key!r} is missing", field=key))
            vals[key] = ""
            continue
        v = obj[key]
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            defects.append(Defect("wrong_type", file, f"{where}: number {v!r} read as {str(v)!r}", field=key))
            v = str(v)
        elif isinstance(v, list) and key == "source_id" and all(isinstance(x, (str, int)) for x in v):
            defects.append(Defect("wrong_type", file, f"{where}: list {v!r} read as one comma-joined value", field=key))
            v = ",".join(str(x) for x in v)
        elif not isinstance(v, str):
            defects.append(Defect("wrong_type", file, f"{where}: {type(v).__name__} where a string is expected",
                                  field=key))
            v = ""
        vals[key] = v
    noise = label_noise(vals["state"], file, record=None, field="state")
    if noise:
        defects.append(Defect("label_noise", file, f"{where}: {noise.message}", field="state"))
    ids, rest = split_source_ids(vals["source_id"], self_id=holder, known=known)
    if any(t.lower() in SELF_WORDS for t in _SOURCE_SPLIT.split(vals["source_id"].strip())):
        defects.append(Defect("source_self", file, f"{where}: source_id {vals['source_id']!r} read as holder "
                              f"{holder!r} (the holder itself)", field="source_id"))
    if rest or not ids:
        what = f"unparsed {list(rest)}" if rest else "no id"
        defects.append(Defect("source_id", file, f"{where}: source_id {vals['source_id']!r}: {what}",
                              field="source_id"))
    return Emotion(vals["state"], vals["reason"], ids, vals["source_id"])


def parse_chains(obj: Any, file: str) -> tuple[Chains, list[Defect]]:
    """Validate an emotion-chain file `{holder: {"events": [{"event", "emotions": [{state, reason, source_id}]}]}}`.

    What counts as an id in source_id: numbers and the chain's own holder keys. Unusable parts are left out and each
    one is a Defect that says where it was.
    """
    defects: list[Defect] = []
    if not isinstance(obj, dict):
        return {}, [Defect("wrong_type", file, f"top level is {type(obj).__name__}, expected an object of holders")]
    known = frozenset(str(h) for h in obj)
    chains: Chains = {}
    for holder_key, body in obj.items():
        holder = str(holder_key).strip()
        if isinstance(body, list):  # {"1": [events]}: the events list without its wrapper; unambiguous
            defects.append(Defect("wrong_type", file, f"holder {holder}: a list where {{'events': [...]}} is expected; "
                                  "read as the events", field="events"))
            body = {"events": body}
        if not isinstance(body, dict) or "events" not in body:
            kind = "missing_field" if isinstance(body, dict) else "wrong_type"
            defects.append(Defect(kind, file, f"holder {holder}: no 'events' list", field="events"))
            chains[holder] = ()
            continue
        events_raw = body["events"]
        if not isinstance(events_raw, list):
            defects.append(Defect("wrong_type", file, f"holder {holder}: 'events' is {type(events_raw).__name__}",
                                  field="events"))
            chains[holder] = ()
            continue
        events: list[Event] = []
        for ei, ev in enumerate(events_raw):
            where = f"holder {holder} event {ei}"
            if not isinstance(ev, dict):
                defects.append(Defect("wrong_type", file, f"{where}: {type(ev).__name__}, expected an object"))
                continue
            name = ev.get("event")
            if not isinstance(name, str):
                kind = "missing_field" if name is None and "event" not in ev else "wrong_type"
                defects.append(Defect(kind, file, f"{where}: field 'event' is not a string", field="event"))
                name = "" if name is None else str(name)
            ems_raw = ev.get("emotions")
            if not isinstance(ems_raw, list):
                kind = "missing_field" if "emotions" not in ev else "wrong_type"
                defects.append(Defect(kind, file, f"{where}: no 'emotions' list", field="emotions"))
                ems_raw = []
            ems = [_emotion(em, file, holder, f"{where} emotion {mi}", known, defects) for mi, em in enumerate(ems_raw)]
            events.append(Event(name, tuple(e for e in ems if e is not None)))
        chains[holder] = tuple(events)
    return chains, defects
