"""Reading and validating the SemEval-2026 Task 12 data: questions, topic documents and gold answers of one split.

A split folder `<split>_data/` holds `questions.jsonl` (`id, topic_id, target_event, option_A..D[, golden_answer]`)
and usually `docs.json` (`[{topic_id, topic, docs: [{title, content, snippet, ...}]}]`). Test gold comes from
`reference.jsonl` (`{"id", "answer"}`) at the data root or in `test_data/`. Each split is parsed once per process
(`load_split` is cached); documents are kept per topic, without `imageUrl` (base64 data URLs never reach a prompt or
an output).

Validation, nothing dropped:
- errors (a `DataError` naming file, line and field; the first problems are listed): a line that is not a JSON
  object, a missing id / topic_id / target_event, an option missing or empty, a duplicate id, a gold answer with a
  letter outside A-D, a test reference that names an unknown id or misses a question, and -- unless the run is
  context-free (`require_documents`) -- a question whose topic has no documents (all of dev in the public snapshot);
- defects (reported with the samples): options that repeat within a question, documents without content, a gold
  answer not in sorted form, a question repeated within the split (same event and options), and -- in context-free
  runs -- topics without documents.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emocaustics.core.errors import DataError, UsageError
from emocaustics.core.task import Defect, Sample
from emocaustics.core.textfile import json_lines, read_text, shown
from emocaustics.tasks.aer.fetch import SOURCE, SPLIT_DIRS

LETTERS = ("A", "B", "C", "D")
SPLITS = tuple(SPLIT_DIRS)
MAX_LISTED = 10  # problems spelled out in one DataError


@dataclass(frozen=True)
class Document:
    title: str
    content: str
    snippet: str = ""


@dataclass(frozen=True)
class Topic:
    topic_id: int
    title: str
    docs: tuple[Document, ...]


@dataclass(frozen=True)
class Question:
    id: str
    topic_id: int
    target_event: str
    options: dict[str, str]
    gold: tuple[str, ...] | None  # sorted letters; None when the split has no gold


@dataclass
class SplitData:
    split: str
    root: Path
    questions: list[Question]
    topics: dict[int, Topic]  # topics that have documents
    defects: list[Defect] = field(default_factory=list)
    errors: list[DataError] = field(default_factory=list)  # raised by `check`, after the defects are known
    files: dict[str, str] = field(default_factory=dict)

    def missing_topics(self) -> dict[int, list[str]]:
        """Topic id -> ids of its questions, for topics without documents."""
        out: dict[int, list[str]] = defaultdict(list)
        for q in self.questions:
            if q.topic_id not in self.topics:
                out[q.topic_id].append(q.id)
        return dict(sorted(out.items()))

    def check(self, *, require_documents: bool) -> list[Defect]:
        """Raise the first errors as one DataError; return the defects (plus, in context-free runs, one per topic
        without documents)."""
        errors = list(self.errors)
        qfile = self.files.get("questions", "questions.jsonl")
        missing = self.missing_topics()
        if missing and require_documents:
            n = sum(len(ids) for ids in missing.values())
            listed = ", ".join(f"{t} ({ids[0]}{' ...' if len(ids) > 1 else ''})" for t, ids in missing.items())
            docs = self.files.get("docs")  # None: the split has no docs.json (dev in the public snapshot)
            absent = "" if docs else f" (there is no {self.root / SPLIT_DIRS[self.split] / 'docs.json'})"
            errors.insert(0, DataError(
                f"split {self.split}: {len(missing)} topic(s) with {n} question(s) have no documents{absent} -- "
                f"topic(s) {listed}; run with context: none (the baseline's --no-context), or supply the documents",
                file=docs or qfile, field="docs"))
        extra = [] if require_documents else [
            Defect("topic-without-documents", f"{qfile}: topic {topic}",
                   f"split {self.split}: topic {topic} has no documents ({len(ids)} question(s))")
            for topic, ids in missing.items()]
        if errors:
            more = f" (and {len(errors) - MAX_LISTED} more)" if len(errors) > MAX_LISTED else ""
            first = errors[0]
            if len(errors) == 1:
                raise first
            listed = "; ".join(str(e) for e in errors[1:MAX_LISTED])
            raise DataError(f"{first.detail}; also: {listed}{more}", file=first.file, record=first.record,
                            field=first.field)
        return self.defects + extra


def parse_gold(raw: Any) -> tuple[tuple[str, ...] | None, str | None]:
    """("A,C" | ["A","C"]) -> (sorted letters, problem). A letter outside A-D or an empty answer is a problem."""
    if isinstance(raw, str):
        parts = [p.strip() for p in raw.split(",")]
    elif isinstance(raw, list) and all(isinstance(p, str) for p in raw):
        parts = [p.strip() for p in raw]
    else:
        return None, f"not a string of letters: {shown(raw)}"
    bad = [p for p in parts if p not in LETTERS]
    if bad or not parts:
        listed = ", ".join(repr(p) for p in bad) or repr(raw)
        return None, f"letter(s) outside A-D: {listed if len(listed) <= 80 else listed[:80] + '...'}"
    return tuple(sorted(set(parts))), None


def _questions(path: Path, errors: list[DataError], defects: list[Defect]) -> list[Question]:
    name = str(path)
    seen: dict[str, int] = {}
    out: list[Question] = []
    for n, obj, problem in json_lines(read_text(path, what="JSON-lines file")):
        if problem or not isinstance(obj, dict):
            errors.append(DataError(problem or "not a JSON object", file=name, record=f"line {n}"))
            continue
        qid = obj.get("id")
        where = f"line {n}" + (f" ({qid})" if isinstance(qid, str) else "")
        bad = False
        for key in ("id", "target_event"):
            if not isinstance(obj.get(key), str) or not obj[key].strip():
                errors.append(DataError("missing or empty", file=name, record=where, field=key))
                bad = True
        topic = obj.get("topic_id")
        if isinstance(topic, str) and topic.strip().isdigit():
            topic = int(topic)
        if not isinstance(topic, int) or isinstance(topic, bool):
            errors.append(DataError(f"not an integer: {shown(topic)}", file=name, record=where, field="topic_id"))
            bad = True
        options: dict[str, str] = {}
        for letter in LETTERS:
            text = obj.get(f"option_{letter}")
            if not isinstance(text, str) or not text.strip():
                errors.append(DataError("option missing or empty", file=name, record=where, field=f"option_{letter}"))
                bad = True
            else:
                options[letter] = text.strip()
        if isinstance(qid, str) and qid in seen:
            errors.append(DataError(f"duplicate id {qid!r} (first on line {seen[qid]})", file=name, record=where,
                                    field="id"))
            bad = True
        gold: tuple[str, ...] | None = None
        if "golden_answer" in obj:
            gold, gproblem = parse_gold(obj["golden_answer"])
            if gproblem:
                errors.append(DataError(gproblem, file=name, record=where, field="golden_answer"))
                bad = True
            elif obj["golden_answer"] != ",".join(gold or ()):
                defects.append(Defect("gold-not-normalised", f"{name}: {where}",
                                      f"golden_answer {obj['golden_answer']!r} read as {','.join(gold or ())}"))
        if bad:
            continue
        seen[qid] = n
        groups: dict[str, list[str]] = defaultdict(list)
        for letter, text in options.items():
            groups[" ".join(text.lower().split())].append(letter)
        for letters in groups.values():
            if len(letters) > 1:
                defects.append(Defect("repeated-option", f"{name}: {where}",
                                      f"options {', '.join(letters)} have the same text: {options[letters[0]]!r}"))
        out.append(Question(qid, topic, obj["target_event"].strip(), options, gold))
    return out


def _repeats(questions: list[Question], name: str) -> list[Defect]:
    first: dict[tuple[str, tuple[str, ...]], str] = {}
    out = []
    for q in questions:
        key = (q.target_event.lower(), tuple(sorted(t.lower() for t in q.options.values())))
        if key in first:
            out.append(Defect("repeated-question", f"{name}: {q.id}",
                              f"same target event and options as {first[key]}"))
        else:
            first[key] = q.id
    return out


def _topics(path: Path, errors: list[DataError], defects: list[Defect]) -> dict[int, Topic]:
    name = str(path)
    try:
        raw = json.loads(read_text(path, what="documents file (docs.json)"))
    except json.JSONDecodeError as exc:
        errors.append(DataError(f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})", file=name))
        return {}
    if not isinstance(raw, list):
        errors.append(DataError("expected a list of topics", file=name))
        return {}
    topics: dict[int, Topic] = {}
    for i, rec in enumerate(raw):
        tid = rec.get("topic_id") if isinstance(rec, dict) else None
        if not isinstance(tid, int) or not isinstance(rec.get("docs"), list):
            errors.append(DataError("expected {topic_id: int, topic, docs: [...]}", file=name, record=f"topic {i}"))
            continue
        if tid in topics:
            errors.append(DataError(f"topic {tid} appears twice", file=name, record=f"topic {i}", field="topic_id"))
            continue
        docs = []
        for j, d in enumerate(rec["docs"]):
            if not isinstance(d, dict):
                errors.append(DataError("document is not an object", file=name, record=f"topic {tid}, document {j}"))
                continue
            content = d.get("content") if isinstance(d.get("content"), str) else ""
            snippet = next((d[k] for k in ("snippet", "summary") if isinstance(d.get(k), str) and d[k].strip()), "")
            title = d.get("title") if isinstance(d.get("title"), str) else ""
            if not content.strip():
                defects.append(Defect("document-without-content", f"{name}: topic {tid}, document {j} "
                                      f"({d.get('id', '?')})", f"no content (title {title[:60]!r}); "
                                      + ("its snippet stands in" if snippet else "nothing to show")))
            docs.append(Document(title.strip(), content.strip(), snippet.strip()))
        topics[tid] = Topic(tid, str(rec.get("topic") or "").strip(), tuple(docs))
    return topics


def _references(root: Path) -> tuple[Path, Path]:  # where the test gold may be, in the order it is looked for
    return root / "reference.jsonl", root / SPLIT_DIRS["test"] / "reference.jsonl"


def _join_reference(path: Path, questions: list[Question], errors: list[DataError]) -> list[Question]:
    name = str(path)
    gold: dict[str, tuple[str, ...]] = {}
    known = {q.id for q in questions}
    for n, obj, problem in json_lines(read_text(path, what="JSON-lines file")):
        if problem or not isinstance(obj, dict) or not isinstance(obj.get("id"), str):
            errors.append(DataError(problem or "expected {\"id\", \"answer\"}", file=name, record=f"line {n}"))
            continue
        qid = obj["id"]
        letters, gproblem = parse_gold(obj.get("answer"))
        if gproblem:
            errors.append(DataError(gproblem, file=name, record=f"line {n} ({qid})", field="answer"))
        elif qid not in known:
            errors.append(DataError(f"id {qid!r} is not a test question", file=name, record=f"line {n}", field="id"))
        elif qid in gold:
            errors.append(DataError(f"duplicate id {qid!r}", file=name, record=f"line {n}", field="id"))
        else:
            gold[qid] = letters or ()
    lacking = [q.id for q in questions if q.id not in gold]
    if lacking:
        errors.append(DataError(f"{len(lacking)} test question(s) have no reference answer: {', '.join(lacking[:5])}",
                                file=name))
    return [Question(q.id, q.topic_id, q.target_event, q.options, gold.get(q.id)) for q in questions]


@functools.lru_cache(maxsize=16)
def _load_cached(root: str, split: str, stamp: tuple[float, ...]) -> SplitData:
    base = Path(root)
    folder = base / SPLIT_DIRS[split]
    qpath = folder / "questions.jsonl"
    errors: list[DataError] = []
    defects: list[Defect] = []
    questions = _questions(qpath, errors, defects)
    if not questions and not errors:
        errors.append(DataError("no question in the file (an empty split)", file=str(qpath)))
    files = {"questions": str(qpath)}
    if split == "test" and (ref := next((p for p in _references(base) if p.is_file()), None)) is not None:
        questions = _join_reference(ref, questions, errors)
        files["reference"] = str(ref)
    defects += _repeats(questions, str(qpath))
    topics: dict[int, Topic] = {}
    if (folder / "docs.json").exists():  # a folder in its place is an error, not "no documents"
        topics = _topics(folder / "docs.json", errors, defects)
        files["docs"] = str(folder / "docs.json")
    return SplitData(split, base, questions, topics, defects, errors, files)


def load_split(root: Path | str | None, split: str) -> SplitData:
    """Parse one split (cached per process by path and file times); call `.check(require_documents=...)` on it."""
    if split not in SPLIT_DIRS:
        raise UsageError(f"unknown AER split {split!r}; choose one of {', '.join(SPLITS)}")
    base = SOURCE.locate(root).resolve()  # the cache's key and the samples' root: one spelling of the folder
    folder = base / SPLIT_DIRS[split]
    if not (folder / "questions.jsonl").is_file():
        raise UsageError(f"{base}: split {split!r} is not there (no {SPLIT_DIRS[split]}/questions.jsonl)")
    paths = [folder / "questions.jsonl", folder / "docs.json", *_references(base)]
    stamp = tuple(p.stat().st_mtime if p.exists() else -1.0 for p in paths)
    return _load_cached(str(base), split, stamp)


def shots_split(split: str, shots_from: str | None) -> str:
    """The split a run's few-shot examples come from: `shots_from`, by default dev (sample for a run on dev)."""
    return shots_from or ("sample" if split == "dev" else "dev")


def pick_shots(pool: SplitData, topic_id: int, k: int, seed: int, split: str) -> list[dict[str, Any]]:
    """k solved examples of `pool` (another split than `split`: `AerTask.load` checks it) outside topic `topic_id`,
    by a draw seeded with (seed, split, topic); none when `pool` has no solved question outside it
    (`context.prepare_samples` says so)."""
    cands = [q for q in pool.questions if q.gold and q.topic_id != topic_id]
    rng = random.Random(hashlib.sha256(f"{seed}:{split}:{topic_id}".encode()).digest())
    chosen = sorted(rng.sample(range(len(cands)), min(k, len(cands))))
    return [{"id": cands[i].id, "topic_id": cands[i].topic_id, "target_event": cands[i].target_event,
             "options": cands[i].options, "answer": list(cands[i].gold or ())} for i in chosen]


def to_sample(q: Question, data: SplitData) -> Sample:
    topic = data.topics.get(q.topic_id)
    return Sample(
        id=q.id,
        input={"target_event": q.target_event, "options": dict(q.options), "topic_id": q.topic_id},
        target=list(q.gold) if q.gold is not None else None,
        meta={"split": data.split, "root": str(data.root), "topic": topic.title if topic else None,
              "cluster": str(q.topic_id),  # questions of a topic share its documents: not independent
              "documents": topic},  # the Topic read here, for `context.prepare_samples` (its prepared meta drops it)
    )
