"""Load a dataset folder (`chat/` + `emo/`) into a Corpus of distinct dialogues, reporting every defect on the way.

Steps: read every file once; group byte-identical files (duplicates are counted once, every name is kept); parse and
validate each distinct content; pair annotations with dialogues from content (`pairing.py`) or, on request, by file
number as the reference code does; key dialogues by the canonical id (the emo numbering = the paper's ids).
What a load found is kept on disk (`loadcache.py`): while the folder is unchanged, a load reads only the files of
the dialogues asked for.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emocaustics.core.errors import UsageError
from emocaustics.tasks.longdialogue.data import loadcache
from emocaustics.tasks.longdialogue.data.fetch import SOURCE
from emocaustics.tasks.longdialogue.data.io import parse_bytes, parse_chains, parse_chat_records
from emocaustics.tasks.longdialogue.data.schema import Chains, Corpus, Defect, Dialogue, Utterance

if TYPE_CHECKING:  # pairing (numpy, scipy) is imported when a load pairs: a cache hit needs neither
    from emocaustics.tasks.longdialogue.data import pairing as pairing_mod

log = logging.getLogger(__name__)

PAIRINGS = ("verified", "published")
_NAME = re.compile(r"^(chat|emo)_(\d+)\.json$")
SAMPLE_ROOT = Path(__file__).resolve().parents[4] / "datasets" / "emocaustics" / "sample"


class DataDefectError(UsageError):
    """`strict=True` and the data has malformed files: one line naming them."""


# ------------------------------------------------------------------------------------------------------ file groups

@dataclass(slots=True)
class Group:
    """One distinct file content of a folder, under every name it is published as."""

    kind: str  # chat | emo
    files: list[str]  # names, by number
    numbers: list[int]
    data: bytes
    obj: Any = None
    defect: Defect | None = None  # malformed / repaired / encoding

    @property
    def name(self) -> str:
        return self.files[0]


def _read_groups(folder: Path, kind: str, repair: bool, defects: list[Defect]) -> list[Group]:
    groups: dict[str, Group] = {}
    entries = []
    for path in folder.iterdir():
        m = _NAME.match(path.name)
        if not m or m.group(1) != kind:
            if path.is_file():
                defects.append(Defect("unexpected_file", f"{kind}/{path.name}", f"not named {kind}_N.json; ignored"))
            continue
        entries.append((int(m.group(2)), path))
    for number, path in sorted(entries):
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        g = groups.get(digest)
        if g is None:
            groups[digest] = Group(kind, [path.name], [number], data)
        else:
            g.files.append(path.name)
            g.numbers.append(number)
            defects.append(Defect("duplicate", path.name, f"byte-identical to {g.name}; counted once"))
    for g in groups.values():
        g.obj, g.defect = parse_bytes(g.data, g.name, repair=repair)
        if g.defect is not None:
            # each published name of a broken content is a broken file of its own
            defects.extend(replace(g.defect, file=f) for f in g.files)
    return list(groups.values())


# ------------------------------------------------------------------------------------------------------------ evidence

def _chat_evidence(g: Group, utts: list[Utterance]) -> pairing_mod.Evidence:
    from emocaustics.tasks.longdialogue.data import pairing as pairing_mod

    sentences = "".join(u.sentence for u in utts)
    notes = "".join(f"{u.gt.target}{u.gt.aspect}{u.gt.opinion}{u.gt.rationale}" for u in utts if u.gt)
    return pairing_mod.Evidence(sentences + notes, frozenset(u.holder for u in utts), tuple(g.numbers), sentences)


_RAW_HOLDER = re.compile(r'"([^"]+)"\s*:\s*\{\s*"events"')


def _emo_evidence(g: Group, chains: Chains | None) -> pairing_mod.Evidence:
    from emocaustics.tasks.longdialogue.data import pairing as pairing_mod

    if chains is not None:
        text = "".join(ev.event + "".join(em.reason for em in ev.emotions) for evs in chains.values() for ev in evs)
        holders = frozenset(chains)
    else:
        # unreadable JSON still carries its words: pair on the raw text so that the dialogue keeps its id
        raw = g.data.decode("utf-8", "replace")
        text = " ".join(re.findall(r"[^\x00-\x7f]+", raw))
        holders = frozenset(_RAW_HOLDER.findall(raw))
    return pairing_mod.Evidence(text, holders, tuple(g.numbers))


# ------------------------------------------------------------------------------------------------------------- loading

def load_corpus(root: Path | str | None = None, *, pairing: str = "verified", repair: bool = False,
                strict: bool = False, source: str = "published") -> Corpus:
    """Load the dataset at `root` (default: $EMOCAUSTICS_DATA, else the fetch cache: `fetch.SOURCE.locate`) into
    distinct dialogues keyed by canonical id."""
    if pairing not in PAIRINGS:
        raise UsageError(f"unknown pairing {pairing!r}; choose one of {', '.join(PAIRINGS)}")
    root = SOURCE.locate(root)
    probe = loadcache.probe(root, pairing=pairing, repair=repair, source=source)
    hit = loadcache.lookup(probe)
    if hit is not None:
        if strict:
            _refuse_broken(hit.defects[: hit.n_read])
        if pairing == "published":
            _warn_published(hit.defects)
        files = hit.files
        dialogues = loadcache.LazyDialogues(
            list(files), lambda did: _one_dialogue(root, did, *files[did], repair=repair, source=source))
        return Corpus(dialogues, hit.defects, str(root), pairing)  # type: ignore[arg-type]  # a read-only mapping
    defects: list[Defect] = []
    chats = _read_groups(root / "chat", "chat", repair, defects)
    emos = _read_groups(root / "emo", "emo", repair, defects)
    n_read = len(defects)
    if strict:
        _refuse_broken(defects)

    chat_utts: list[list[Utterance]] = []
    for g in chats:
        utts, errs = parse_chat_records(g.obj, g.name) if g.obj is not None else ([], [])
        chat_utts.append(utts)
        defects.extend(errs)
    emo_chains: list[Chains | None] = []
    for g in emos:
        chains = None
        if g.obj is not None:
            chains, errs = parse_chains(g.obj, g.name)
            defects.extend(errs)
        emo_chains.append(chains)

    from emocaustics.tasks.longdialogue.data import pairing as pairing_mod

    matches = pairing_mod.match([_emo_evidence(g, c) for g, c in zip(emos, emo_chains)],
                                [_chat_evidence(g, u) for g, u in zip(chats, chat_utts)])
    annotates = {m.emo: m for m in matches}
    for m in matches:
        e, c = emos[m.emo], chats[m.chat]
        for f, n in zip(e.files, e.numbers):
            if n not in c.numbers:
                defects.append(Defect("mispaired", f, f"annotates {c.name}, not chat_{n}.json "
                                      f"({m.status}, margin {m.margin:.2f})"))
        if m.status != "verified":
            defects.append(Defect(f"pairing_{m.status}", e.name, f"pairs with {c.name}: {m.note}"))
    for i, g in enumerate(emos):
        if i not in annotates:
            defects.append(Defect("unpaired", g.name, "no dialogue left for this annotation"))

    if pairing == "published":
        _warn_published(defects)
        dialogues = _by_number(chats, chat_utts, emos, emo_chains, defects, source)
    else:
        dialogues = _by_content(chats, chat_utts, emos, emo_chains, annotates, defects, source)
    corpus = Corpus(dict(sorted(dialogues.items())), defects, str(root), pairing)
    loadcache.store(probe, corpus, n_read)
    return corpus


def _refuse_broken(read_defects: list[Defect]) -> None:
    broken = [d for d in read_defects if d.kind in ("malformed", "encoding", "unreadable")]
    if broken:
        raise DataDefectError(f"{len(broken)} malformed file(s) under --strict: "
                              + "; ".join(f"{d.file} line {d.line} column {d.column}: {d.message}" for d in broken))


def _warn_published(defects: list[Defect]) -> None:
    log.warning("PAIRING BY FILE NUMBER (--pairing published): chat_N is scored against emo_N as the reference "
                "code does; %d emo files annotate another dialogue, so ids and chains follow the reference, "
                "not the paper", sum(d.kind == "mispaired" for d in defects))


def _one_dialogue(root: Path, did: int, chat_files: tuple[str, ...], emo_files: tuple[str, ...], *, repair: bool,
                  source: str) -> Dialogue:
    """One dialogue of a cache hit, read and validated as a full load does (its defects are already known):
    the utterances from its first chat file, the chains from its first emo file (the others are byte-identical)."""
    obj, _ = parse_bytes((root / "chat" / chat_files[0]).read_bytes(), chat_files[0], repair=repair)
    utts = parse_chat_records(obj, chat_files[0])[0] if obj is not None else []
    chains = None
    if emo_files:
        obj, _ = parse_bytes((root / "emo" / emo_files[0]).read_bytes(), emo_files[0], repair=repair)
        chains = parse_chains(obj, emo_files[0])[0] if obj is not None else None
    return Dialogue(did, tuple(utts), chat_files, emo_files, chains, source)


def _by_content(chats: list[Group], chat_utts: list[list[Utterance]], emos: list[Group],
                emo_chains: list[Chains | None], annotates: dict[int, pairing_mod.Match], defects: list[Defect],
                source: str) -> dict[int, Dialogue]:
    dialogues: dict[int, Dialogue] = {}
    used: set[int] = set()
    for ei, m in sorted(annotates.items(), key=lambda kv: min(emos[kv[0]].numbers)):
        did = min(emos[ei].numbers)  # canonical id: the emo numbering (the paper's ids)
        dialogues[did] = Dialogue(did, tuple(chat_utts[m.chat]), tuple(chats[m.chat].files), tuple(emos[ei].files),
                                  emo_chains[ei], source)
        used.add(m.chat)
    for ci, g in enumerate(chats):
        if ci in used:
            continue
        did = min(g.numbers)
        if did in dialogues:
            did = max(dialogues) + 1
        defects.append(Defect("unpaired", g.name, f"no emotion-chain annotation belongs to it; kept as id {did} "
                              "with chains=None"))
        dialogues[did] = Dialogue(did, tuple(chat_utts[ci]), tuple(g.files), (), None, source)
    return dialogues


def _by_number(chats: list[Group], chat_utts: list[list[Utterance]], emos: list[Group],
               emo_chains: list[Chains | None], defects: list[Defect], source: str) -> dict[int, Dialogue]:
    emo_at = {n: i for i, g in enumerate(emos) for n in g.numbers}
    dialogues: dict[int, Dialogue] = {}
    for ci, g in enumerate(chats):
        did = min(g.numbers)
        ei = emo_at.get(did)
        if ei is None:
            defects.append(Defect("unpaired", g.name, f"no emo_{did}.json; chains=None"))
        dialogues[did] = Dialogue(did, tuple(chat_utts[ci]), tuple(g.files),
                                  (f"emo_{did}.json",) if ei is not None else (),
                                  emo_chains[ei] if ei is not None else None, source)
    return dialogues


def load_sample() -> Corpus:
    """The repo's own sample dialogues (`datasets/emocaustics/sample/`), ids 1..N of their own, `source="sample"`."""
    return load_corpus(SAMPLE_ROOT, source="sample")
