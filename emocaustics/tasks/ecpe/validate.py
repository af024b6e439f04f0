"""Checking submissions, with every problem named by file, conversation and pair (gold files: `gold.py`).

Where the official scorer exits with one terse line or crashes, we report a named error and score nothing:
`unknown_emotion` (categories are case-sensitive: `Joy` is not `joy`), `repeated_conversation`,
`missing_conversation` (a gold conversation absent from the prediction; `score ecpe` scores it as predicting no
pair, a failed sample as in a job), `cause_text` (the cause is text instead of indices), `u_prefix` (`U2` instead of
`2`), `malformed_pair`, `malformed_conversation`, `missing_pairs`.
Problems the official scorer scores silently are warnings: `index_out_of_range` (span outside the cause utterance's
tokens), `empty_span` (start >= end), `emotion_contradicts_label`, `utterance_out_of_range`, `duplicate_pair`
(dropped, as officially), `neutral_pair` (costs nothing), `unknown_conversation` (not in the gold: ignored, as
officially), `string_conversation_id` (we key conversations by `int(conversation_ID)`; the official scorer compares
raw values and would report the conversation missing). Gold data defects use the same record: `span_not_found` (the
gold span becomes `[0, 0]`, as officially), `utterance_ids` (ids not 1..n: positions are used, as officially).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from emocaustics.core.errors import DataError
from emocaustics.core.textfile import shown
from emocaustics.tasks.ecpe.spans import EMOTION_INDEX, EMOTIONS

Severity = Literal["error", "warning"]
PAIRS_KEY = "emotion-cause_pairs"
_U_RE = re.compile(r"[Uu]\d+(_-?\d+_-?\d+)?")
_INT_RE = re.compile(r"[+-]?\d+")


@dataclass(frozen=True)
class Problem:
    kind: str
    severity: Severity
    file: str
    conversation: Any = None  # the conversation_ID as written
    pair: int | None = None  # 1-based position in emotion-cause_pairs
    value: Any = None  # the pair as written
    message: str = ""
    field: str | None = None  # the record's field at fault when it is not a pair (conversation_ID, ...)

    def __str__(self) -> str:
        where = [self.file]
        if self.conversation is not None:
            where.append(f"conversation {self.conversation}")
        if self.pair is not None:
            where.append(f"pair {self.pair} {_as_written(self.value)}")
        elif self.field is not None:
            where.append(f"field {self.field!r}")
        return f"{', '.join(where)}: {self.severity} {self.kind}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k != "field"}

    def as_error(self, more: str = "") -> DataError:
        """The problem as the one-line error of the command line: file, record (conversation), field (the pair)."""
        value = f" {_as_written(self.value)}" if self.pair is not None else ""
        return DataError(f"{self.kind}: {self.message}{value}{more}", file=self.file,
                         record=None if self.conversation is None else f"conversation {self.conversation}",
                         field=self.field if self.pair is None else f"{PAIRS_KEY}[{self.pair}]")


def _as_written(value: Any, limit: int = 120) -> str:
    """A pair as JSON, cut short: an error line never echoes a huge record."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


class SubmissionError(DataError):
    """A file that cannot be scored: the first error names file, conversation and pair; `problems` has them all
    (`errors` the ones that stop scoring)."""

    def __init__(self, problems: list[Problem]) -> None:
        errors = [p for p in problems if p.severity == "error"]
        first = errors[0].as_error(f" (and {len(errors) - 1} more error(s))" if len(errors) > 1 else "")
        super().__init__(first.detail, file=first.file, record=first.record, field=first.field)
        self.kind = errors[0].kind
        self.problems = problems
        self.errors = errors


class _Bad(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind, self.message = kind, message


@dataclass
class GoldConversation:
    id: int
    texts: list[str]
    speakers: list[str]
    emotions: list[str | None]
    pairs: list[tuple[int, ...]]  # Pair1 or Pair2, duplicates dropped
    raw_pairs: list[Any]


@dataclass
class Gold:
    subtask: int
    file: str
    conversations: dict[int, GoldConversation]  # file order
    problems: list[Problem] = field(default_factory=list)  # data defects (warnings)


@dataclass
class Checked:
    subtask: int
    file: str
    pairs: dict[int, list[tuple[int, ...]]]  # per conversation, duplicates dropped, pair order kept
    problems: list[Problem] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]


# -- the parts of a pair ------------------------------------------------------------------------------------------
def _emotion_part(pair: Any) -> tuple[int, int]:
    """A pair (two parts) whose first part is `"5_surprise"` -> (5, 6)."""
    if not isinstance(pair, list | tuple) or len(pair) != 2:
        raise _Bad("malformed_pair", "a pair must be a list of two strings")
    value = pair[0]
    if not isinstance(value, str):
        raise _Bad("malformed_pair", f"the emotion part must be a string '<utterance>_<emotion>', not {shown(value)}")
    parts = value.split("_")
    if len(parts) != 2:
        raise _Bad("malformed_pair", f"the emotion part must be '<utterance>_<emotion>', not {shown(value)}")
    utt, emotion = parts
    if emotion not in EMOTION_INDEX:
        hint = f" (categories are lower case: did you mean {emotion.lower()!r}?)" if emotion.lower() in EMOTION_INDEX \
            else ""
        raise _Bad("unknown_emotion", f"{shown(emotion)} is not one of {', '.join(EMOTIONS)}{hint}")
    if _U_RE.fullmatch(utt.strip()):
        raise _Bad("u_prefix", f"utterance ids are plain numbers: {shown(utt)} should be {shown(utt.strip()[1:])}")
    try:
        return int(utt), EMOTION_INDEX[emotion]
    except ValueError:
        raise _Bad("malformed_pair", f"the emotion utterance {shown(utt)} is not an integer") from None


def _cause_indices(value: Any) -> tuple[int, int, int]:
    """Subtask 1 prediction: `"2_0_3"` -> (2, 0, 3)."""
    if not isinstance(value, str):
        raise _Bad("malformed_pair", f"the cause must be a string '<utterance>_<start>_<end>', not {shown(value)}")
    text = value.strip()
    if any(c.isalpha() for c in value):
        if _U_RE.fullmatch(text):
            raise _Bad("u_prefix", f"utterance ids are plain numbers: {shown(text)} should be {shown(text[1:])}")
        raise _Bad("cause_text", "the cause must be '<utterance>_<start>_<end>' token indices, not the span's text")
    parts = value.split("_")
    if len(parts) != 3:
        raise _Bad("malformed_pair", f"the cause must be '<utterance>_<start>_<end>', not {shown(value)}")
    try:
        cu, start, end = (int(x) for x in parts)
    except ValueError:
        raise _Bad("malformed_pair", f"the cause {shown(value)} is not three integers") from None
    return cu, start, end


def _cause_utterance(value: Any) -> int:
    """Subtask 2 prediction: `"2"` (or 2) -> 2."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str):
        raise _Bad("malformed_pair", f"the cause must be an utterance id, not {shown(value)}")
    text = value.strip()
    if _U_RE.fullmatch(text):
        raise _Bad("u_prefix", f"utterance ids are plain numbers: {shown(text)} should be {shown(text[1:])}")
    if any(c.isalpha() for c in text):
        raise _Bad("cause_text", "the subtask-2 cause must be the cause utterance's id, not text")
    if not _INT_RE.fullmatch(text):
        # int() would read "1_0_4" as 104 (digit grouping), and so does the official scorer: an error here
        hint = " (that is the subtask-1 format)" if text.count("_") == 2 else ""
        raise _Bad("malformed_pair", f"the cause {shown(value)} is not an utterance id{hint}")
    return int(text)


def _conversations(records: Any, file: str, problems: list[Problem]) -> list[tuple[int, Any, dict[str, Any]]]:
    """(int id, id as written, record) for each readable conversation; repeated ids and bad records are errors."""
    if not isinstance(records, list):
        raise DataError("expected a JSON list of conversations", file=file)
    out: list[tuple[int, Any, dict[str, Any]]] = []
    seen: set[int] = set()
    for n, rec in enumerate(records, 1):
        raw = rec.get("conversation_ID") if isinstance(rec, dict) else None
        try:
            if raw is None or isinstance(raw, bool):
                raise ValueError
            cid = int(raw)
        except (TypeError, ValueError):
            problems.append(Problem("malformed_conversation", "error", file, f"#{n}", None, None,
                                    f"record {n} has no integer conversation_ID", "conversation_ID"))
            continue
        if cid in seen:
            problems.append(Problem("repeated_conversation", "error", file, raw, None, None,
                                    f"conversation_ID {raw} appears more than once", "conversation_ID"))
            continue
        seen.add(cid)
        if isinstance(raw, str):
            problems.append(Problem("string_conversation_id", "warning", file, raw, None, None,
                                    "conversation_ID is a string; the official scorer would not match it to the "
                                    "gold's integer id"))
        out.append((cid, raw, rec))
    return out


def _pairs_list(rec: dict[str, Any], raw: Any, file: str, problems: list[Problem]) -> list[Any]:
    """The record's pair list; a missing or non-list one is a `missing_pairs` error (and counts as empty)."""
    pairs = rec.get(PAIRS_KEY)
    if isinstance(pairs, list):
        return pairs
    what = "has no" if PAIRS_KEY not in rec else "has a non-list"
    problems.append(Problem("missing_pairs", "error", file, raw, None, None, f"{what} '{PAIRS_KEY}'", PAIRS_KEY))
    return []


def _utterances(rec: dict[str, Any]) -> tuple[list[str], list[str], list[str | None], bool]:
    utts = rec.get("conversation")
    if not isinstance(utts, list) or not all(isinstance(u, dict) and isinstance(u.get("text"), str) for u in utts):
        return [], [], [], False
    ids_ok = [u.get("utterance_ID") for u in utts] == list(range(1, len(utts) + 1))
    return ([u["text"] for u in utts], [str(u.get("speaker", "")) for u in utts], [u.get("emotion") for u in utts],
            ids_ok)


# -- predictions --------------------------------------------------------------------------------------------------
def check_prediction(records: Any, subtask: int, file: str, gold: Gold | None = None) -> Checked:
    """Every problem of a prediction file (never raises for its content). Without `gold` only the format and the
    prediction's own utterances are checked; with it, also missing conversations, ranges and labels."""
    problems: list[Problem] = []
    out: dict[int, list[tuple[int, ...]]] = {}
    for cid, raw, rec in _conversations(records, file, problems):
        ref = gold.conversations.get(cid) if gold is not None else None
        if gold is not None and ref is None:
            problems.append(Problem("unknown_conversation", "warning", file, raw, None, None,
                                    "not in the gold file: ignored, as officially"))
            continue
        texts, _, labels, _ = _utterances(rec)
        if ref is not None:
            texts, labels = ref.texts, ref.emotions
        pairs = _pairs_list(rec, raw, file, problems)
        parsed: list[tuple[int, ...]] = []
        for n, x in enumerate(pairs, 1):
            try:
                eu, emo = _emotion_part(x)
                pair: tuple[int, ...] = (eu, *_cause_indices(x[1]), emo) if subtask == 1 \
                    else (eu, _cause_utterance(x[1]), emo)
            except _Bad as bad:
                problems.append(Problem(bad.kind, "error", file, raw, n, x, bad.message))
                continue
            problems.extend(Problem(kind, "warning", file, raw, n, x, msg)
                            for kind, msg in _pair_warnings(pair, texts, labels))
            parsed.append(pair)
        out[cid] = deduplicated(parsed, file, raw, problems)
    if gold is not None:
        for cid, conv in gold.conversations.items():
            if cid not in out:
                problems.append(Problem("missing_conversation", "error", file, cid, None, None,
                                        "this gold conversation is missing from the prediction"))
        out = {cid: out[cid] for cid in gold.conversations if cid in out}  # gold order, as officially
    return Checked(subtask, file, out, problems)


def deduplicated(pairs: list[tuple[int, ...]], file: str, raw: Any, problems: list[Problem]) -> list[tuple[int, ...]]:
    """Exact duplicates dropped, first occurrence kept in order (as the official scorer), their count a warning."""
    kept = list(dict.fromkeys(pairs))
    if len(kept) < len(pairs):
        problems.append(Problem("duplicate_pair", "warning", file, raw, None, None,
                                f"{len(pairs) - len(kept)} exact duplicate pair(s) dropped, as officially"))
    return kept


def _pair_warnings(pair: tuple[int, ...], texts: list[str], labels: list[str | None]) -> list[tuple[str, str]]:
    eu, cu, emo = pair[0], pair[1], pair[-1]
    found: list[tuple[str, str]] = []
    if emo == 0:
        found.append(("neutral_pair", "neutral is the null class: this pair is ignored by every metric"))
    if not texts:
        return found
    for role, u in (("emotion", eu), ("cause", cu)):
        if not 1 <= u <= len(texts):
            found.append(("utterance_out_of_range", f"{role} utterance {u} is not in 1..{len(texts)}"))
    if len(pair) == 5:
        start, end = pair[2], pair[3]
        if start >= end:
            found.append(("empty_span", f"start {start} >= end {end}: the span has no token"))
        if 1 <= cu <= len(texts):
            n_tokens = len(texts[cu - 1].split())
            if start < 0 or end > n_tokens:
                found.append(("index_out_of_range",
                              f"[{start}, {end}) is outside utterance {cu}'s {n_tokens} tokens"))
    label = labels[eu - 1] if 1 <= eu <= len(labels) else None
    if label is not None and emo != 0 and label != EMOTIONS[emo]:
        found.append(("emotion_contradicts_label", f"utterance {eu} is labelled {label!r}, not {EMOTIONS[emo]!r}"))
    return found


def grouped(problems: list[Problem], shown: int = 3) -> list[str]:
    """Each problem as its line, but problems alike but for the place (one file, kind and message: the 642
    conversations a partial submission lacks) as one line counting them, with the first places."""
    alike: dict[tuple[str, str, str, str], list[Problem]] = {}
    for p in problems:
        alike.setdefault((p.file, p.severity, p.kind, p.message), []).append(p)
    lines = []
    for (file, severity, kind, message), same in alike.items():
        places = [str(p.conversation) + ("" if p.pair is None else f" pair {p.pair}") for p in same[:shown]]
        unit = "conversations" if all(p.pair is None for p in same) else "pairs"
        lines.append(str(same[0]) if len(same) == 1 else f"{file}: {severity} {kind}: {message}: {len(same)} {unit}, "
                     f"e.g. {', '.join(places)}{' ...' if len(same) > shown else ''}")
    return lines
