"""Typed records shared by every stage: dialogues, sextuples, emotion chains, and defect reports.

These are plain frozen dataclasses inside the system; validation happens where data enters: `emocaustics.tasks.longdialogue.data.io`
for dataset and prediction files, `emocaustics.tasks.longdialogue.extract.parse` (pydantic) for LLM answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# The five labels of the spec, for sextuple sentiment and emotion-chain state alike.
LABELS: tuple[str, ...] = ("positive", "negative", "neutral", "ambiguous", "doubt")

SEXTUPLE_FIELDS: tuple[str, ...] = ("target", "aspect", "opinion", "sentiment", "rationale")


def normalise_label(raw: str) -> str:
    """The one comparison form of a label: trimmed and lower-cased, no other mapping (the spec's rule)."""
    return raw.strip().lower()


@dataclass(frozen=True, slots=True)
class Sextuple:
    """One opinion of an utterance; the holder is the utterance's speaker and is not predicted."""

    target: str = ""
    aspect: str = ""
    opinion: str = ""
    sentiment: str = ""
    rationale: str = ""

    def is_empty(self) -> bool:
        """The spec's 'no sextuple': target, aspect, opinion and rationale all empty (sentiment alone does not count)."""
        return not any(s.strip() for s in (self.target, self.aspect, self.opinion, self.rationale))

    def to_json(self) -> dict[str, str]:
        return {name: getattr(self, name) for name in SEXTUPLE_FIELDS}


@dataclass(frozen=True, slots=True)
class Utterance:
    index: int  # 0-based position in the dialogue
    sentence: str
    holder: str
    gt: Sextuple | None = None  # None when the ground truth has no sextuple for this utterance


@dataclass(frozen=True, slots=True)
class Emotion:
    state: str
    reason: str
    source_ids: tuple[str, ...] = ()  # parsed ids; may be empty when source_raw held none
    source_raw: str = ""  # the text as published, kept for reports

    def to_json(self) -> dict[str, str]:
        return {"state": self.state, "reason": self.reason, "source_id": self.source_raw or ",".join(self.source_ids)}


@dataclass(frozen=True, slots=True)
class Event:
    event: str
    emotions: tuple[Emotion, ...] = ()

    def to_json(self) -> dict:
        return {"event": self.event, "emotions": [e.to_json() for e in self.emotions]}


# holder id -> that holder's events, in order
Chains = dict[str, tuple[Event, ...]]


def chains_to_json(chains: Chains) -> dict:
    """The published (and reference prediction) shape: {holder: {"events": [...]}}."""
    return {holder: {"events": [e.to_json() for e in events]} for holder, events in chains.items()}


@dataclass(frozen=True, slots=True)
class Dialogue:
    """One distinct dialogue with its annotations.

    `id` is the canonical id: the paper's id (the emo-file numbering) for the published data, or the
    sample's own id. `chat_files` lists every file the same content is published under (duplicates).
    """

    id: int
    utterances: tuple[Utterance, ...]
    chat_files: tuple[str, ...]
    emo_files: tuple[str, ...] = ()
    chains: Chains | None = None  # None when no usable emotion-chain annotation exists
    source: str = "published"  # "published" or "sample"

    @property
    def holders(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(u.holder for u in self.utterances))  # in order of first appearance

    def __len__(self) -> int:
        return len(self.utterances)


@dataclass(frozen=True, slots=True)
class Defect:
    """A problem found in input data. Never silent: every defect is reported and counted."""

    kind: str  # malformed | missing_field | wrong_type | label_noise | source_id | duplicate | mispaired | unpaired | empty
    file: str
    message: str
    record: int | None = None  # record index inside the file, when it applies
    field: str | None = None
    line: int | None = None
    column: int | None = None

    def where(self) -> str:
        parts = [self.file]
        if self.record is not None:
            parts.append(f"record {self.record}")
        if self.field is not None:
            parts.append(f"field {self.field!r}")
        if self.line is not None:
            parts.append(f"line {self.line} column {self.column}")
        return ", ".join(parts)

    def __str__(self) -> str:
        return f"{self.where()}: {self.message}"


@dataclass(slots=True)
class Corpus:
    """A loaded dataset: the distinct dialogues by canonical id, and every defect found while loading."""

    dialogues: dict[int, Dialogue]
    defects: list[Defect] = field(default_factory=list)
    root: str = ""
    pairing: str = "verified"  # "verified" (default) or "published" (pair by file number, as the reference code)
