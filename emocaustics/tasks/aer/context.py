"""The documents a question is asked with, attached before solving (`AerTask.prepare`, on the driver): few-shot
examples, the full or retrieved context of each question, and the trim record; approximate token counts, the
full-context trim rule and retrieval chunks. After this a sample carries everything its prompt needs, so the solver
next to the engine reads no files.

meta keys written: `shots` (few-shot: the topic's examples), `context` (the documents or passages text, one string
object per topic under `full`), `context_kind`, `trim` (what the budget kept), `prompt_tokens_est`.

Few-shot examples: k questions with gold from another split (`shots_from`, default dev, or sample when the run is on
dev), never of the question's own topic (topic ids are shared across splits: dev topics 1-10 are the sample topics),
chosen by a seeded draw per topic (`data.pick_shots`, as `AerTask.load` reads that split), so that all questions of a
topic share one prompt prefix.

Token counts are approximate (no tokenizer in the driver): the text is split into pieces -- a run of letters, one
digit, one CJK character, one other non-space symbol -- and a letter run of n characters counts ceil(n /
chars_per_token) tokens, every other piece 1. `chars_per_token` 4 errs high for English vocabularies (on the test
documents the estimate is 1.42x a 30k WordPiece count; BPE vocabularies of 100k+ are leaner still); byte-level models
trained on other text need less: the `smoke` model (~0.9 characters per token on English) takes 0.8, where real /
estimated prompt tokens measured 0.81-0.84. Texts are only ever cut between pieces, never inside one.

Full-context trim rule (TRIM_RULE): the documents of a topic are laid out in their published order, each as its title
and its content (its snippet when it has no content). The document budget is the model's context
(`max_context_tokens`) minus the answer's token budget, minus the largest rest-of-prompt (instructions, examples and
question) over the topic's questions, minus a margin of 5% of the context; so every question of a topic gets the
same document prefix. Whole documents are kept while they fit; the first that does not is cut at the last piece
that fits and marked `[... cut]`; the rest are left out. The trim is recorded per question. (The rule's text,
TRIM_RULE, and the document/passage templates live in prompts.py and are part of PROMPTS_VERSION.)
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from emocaustics.core.errors import UsageError
from emocaustics.core.task import Sample, ScoreContext
from emocaustics.tasks.aer import prompts
from emocaustics.tasks.aer.data import Topic, shots_split
from emocaustics.tasks.aer.prompts import CUT_MARK, DOCUMENT_ITEM, PASSAGE_ITEM

if TYPE_CHECKING:
    from emocaustics.models.cacheplace import CacheChoice

MARGIN = 0.05  # of the context, for the chat template and the estimate's error
_PIECE = re.compile(r"[^\W\d_\u3000-\u9fff\uac00-\ud7af]+|\d|[\u3000-\u9fff\uac00-\ud7af]|[^\w\s]|_", re.UNICODE)


def _length_tokens(length: int, chars_per_token: float) -> int:  # a piece's count depends on its length alone
    return math.ceil(length / chars_per_token) if length > 1 else 1  # a letter run; other pieces are one character


def approx_tokens(text: str, chars_per_token: float = 4.0) -> int:
    by_length = Counter(map(len, _PIECE.findall(text)))  # counted by length in C, not piece by piece
    return sum(n * _length_tokens(k, chars_per_token) for k, n in by_length.items())


def cut_to_tokens(text: str, budget: int, chars_per_token: float = 4.0) -> tuple[str, int]:
    """The longest prefix of `text` ending after a whole piece whose approximate count is <= budget, with its count."""
    used, end = 0, 0
    for m in _PIECE.finditer(text):
        t = _length_tokens(m.end() - m.start(), chars_per_token)
        if used + t > budget:
            break
        used, end = used + t, m.end()
    return text[:end], used


def document_text(index: int, title: str, body: str) -> str:
    return DOCUMENT_ITEM.substitute(index=index, title=title, body=body).rstrip()


def doc_body(doc) -> str:  # noqa: ANN001 (data.Document; its snippet stands in for missing content)
    return doc.content or doc.snippet


@dataclass(frozen=True)
class Trim:
    """What the full-context rule kept of a topic's documents (recorded in every question's metadata)."""

    budget: int  # approximate tokens allowed for the documents
    tokens_total: int  # approximate tokens of all documents
    tokens_kept: int
    docs_total: int
    docs_kept: int  # whole documents kept
    cut_doc: int | None  # 1-based index of the document cut part-way, if any
    chars_per_token: float
    rule: str = "full"


def render_full(topic: Topic, budget: int, chars_per_token: float) -> tuple[str, Trim]:
    """The topic's documents within `budget` approximate tokens, by the trim rule, and what was kept."""
    parts: list[str] = []
    used = total = kept = 0
    cut: int | None = None
    stopped = False
    sep = 1  # the blank line between documents
    for i, doc in enumerate(topic.docs, 1):
        text = document_text(i, doc.title, doc_body(doc))
        need = approx_tokens(text, chars_per_token) + sep
        total += need
        if stopped:
            continue  # past the budget: counted only
        if used + need <= budget:
            parts.append(text)
            used += need
            kept += 1
            continue
        stopped = True
        mark = approx_tokens(CUT_MARK, chars_per_token)
        room = budget - used - sep - mark
        if room > 0:
            head, n = cut_to_tokens(text, room, chars_per_token)
            if head.strip():
                parts.append(head + CUT_MARK)
                used += n + mark + sep
                cut = i
    trim = Trim(budget, total, used, len(topic.docs), kept, cut, chars_per_token)
    return "\n\n".join(parts), trim


# -- retrieval chunks ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Chunk:
    doc: int  # 1-based document index in the topic
    title: str
    text: str
    tokens: int


_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")


def chunk_topic(topic: Topic, chunk_tokens: int, chars_per_token: float) -> list[Chunk]:
    """Each document cut into chunks of at most ~chunk_tokens approximate tokens, at sentence ends where possible
    (a sentence longer than a chunk is cut between pieces); chunks never span two documents."""
    out: list[Chunk] = []
    for i, doc in enumerate(topic.docs, 1):
        sentences = [s.strip() for s in _SENTENCE_END.split(doc_body(doc)) if s.strip()]
        buf: list[str] = []
        used = 0
        for sent in sentences:
            n = approx_tokens(sent, chars_per_token)
            if used + n > chunk_tokens and buf:  # it does not fit (an over-long one never does): the chunk is done
                out.append(Chunk(i, doc.title, " ".join(buf), used))
                buf, used = [], 0
            while n > chunk_tokens:  # an over-long sentence: cut into pieces of a chunk each, the rest kept
                head, k = cut_to_tokens(sent, chunk_tokens, chars_per_token)
                if not head:
                    break
                out.append(Chunk(i, doc.title, head.strip(), k))
                sent = sent[len(head):].strip()
                n = approx_tokens(sent, chars_per_token)
            if not sent:
                continue
            buf.append(sent)
            used += n
        if buf:
            out.append(Chunk(i, doc.title, " ".join(buf), used))
    return out


def chunk_text(c: Chunk) -> str:  # what a chunk is embedded as
    return f"{c.title}\n{c.text}" if c.title else c.text


def query_text(target_event: str, options: dict[str, str]) -> str:
    return target_event + "\n" + "\n".join(options[k] for k in sorted(options))


def top_chunks(embedder: Any, queries: list[tuple[Topic, str]], top_k: int, chunk_tokens: int,
               chars_per_token: float, cache: CacheChoice | None = None) -> list[list[tuple[Chunk, float]]]:
    """For each (topic, query text): the top_k chunks of that topic by similarity, best first (ties: document order),
    ranked on the job's embedder by retrieve.py; `cache`: the run's, whose embedding store is read and added to
    (None: nothing kept)."""
    from emocaustics.tasks.aer.retrieve import ranked, run_sync  # numpy, the embedding store: a retrieve run's alone

    topics = list({t.topic_id: t for t, _ in queries}.values())
    chunks = {t.topic_id: chunk_topic(t, chunk_tokens, chars_per_token) for t in topics}
    group = {tid: g for g, tid in enumerate(chunks)}
    hits = run_sync(ranked(embedder, [[chunk_text(c) for c in cs] for cs in chunks.values()],
                           [(group[t.topic_id], q) for t, q in queries], top_k, cache,
                           f"embed documents of {len(topics)} topic(s)"))
    return [[(chunks[t.topic_id][i], sim) for i, sim in h] for (t, _), h in zip(queries, hits)]


def render_passages(chunks: list[Chunk], budget: int, chars_per_token: float) -> tuple[str, int, int]:
    """Passages in rank order while they fit `budget`: (text, passages kept, approximate tokens used)."""
    parts: list[str] = []
    used = 0
    for rank, c in enumerate(chunks, 1):
        text = PASSAGE_ITEM.substitute(rank=rank, doc=c.doc, title=c.title, text=c.text)
        need = approx_tokens(text, chars_per_token) + 1
        if used + need > budget:
            break
        parts.append(text)
        used += need
    return "\n\n".join(parts), len(parts), used


def _mean(values: list[float]) -> str:
    return f"{sum(values) / len(values):.1f}".removesuffix(".0")


def cut_summary(kind: str, trims: list[dict | None]) -> str:
    """What the questions were asked with, in one cell of the summary (`context_kept`): the documents with any text
    in the prompt of the topic's documents and the approximate tokens, means per question, from each question's trim
    record (a `full` run's kept prefix, a `retrieve` run's passages and the documents they come from)."""
    records = [t for t in trims if t]
    if kind == "none" or not records:
        return "none: no documents" if kind == "none" else f"{kind}: no trim recorded"
    if kind == "full":
        kept = [t["docs_kept"] + (t.get("cut_doc") is not None) for t in records]
    else:  # the documents the passages kept come from
        kept = [len({p["doc"] for p in t.get("passages", [])}) for t in records]
    total = [t["docs_total"] for t in records if t.get("docs_total") is not None]
    of_total = f" of {_mean(total)}" if len(total) == len(records) else ""
    tokens = round(sum(t["tokens_kept"] for t in records) / len(records))
    text = f"{kind}: {_mean(kept)}{of_total} documents, ~{tokens:,} tokens"
    if kind == "retrieve":
        text += f" ({_mean([t['passages_kept'] for t in records])} passages)"
    return text + (" per question (mean)" if len(records) > 1 else "")


def prepare_samples(samples: list[Sample], opts: Any, ctx: ScoreContext | None = None) -> list[Sample]:
    """Attach shots and context to every sample (see the module docstring), from what `AerTask.load` read: each
    question's documents (`meta["documents"]`) and, few-shot, its examples (`meta["shots"]`); one pass per (data root,
    split)."""
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, s in enumerate(samples):
        groups[(s.meta["root"], s.meta["split"])].append(i)
    metas: list[dict[str, Any]] = [{k: v for k, v in s.meta.items() if k != "documents"} for s in samples]
    from emocaustics.tasks.aer.solver import ANSWER_BUDGETS  # not when the task is imported: a solver run needs it

    answer = ANSWER_BUDGETS[opts.prompt]
    # the context less the answer's bound and the margin: a question's documents get this less the rest of its prompt
    room = opts.max_context_tokens - answer - math.ceil(MARGIN * opts.max_context_tokens)
    for (root, split), idxs in groups.items():
        cpt = opts.chars_per_token
        rest: dict[int, int] = {}
        for i in idxs:
            s = samples[i]
            shots = s.meta.get("shots", [])
            if opts.prompt == "few-shot" and not shots:
                raise UsageError(f"split {shots_split(split, opts.shots_from)!r} has no solved questions outside "
                                 f"topic {s.input['topic_id']} for few-shot examples")
            rest[i] = approx_tokens(prompts.rest_of_prompt(
                topic=s.meta.get("topic"), context_kind=opts.context, shots=shots, target_event=s.input["target_event"],
                options=s.input["options"], prompt=opts.prompt), cpt)
            metas[i]["shots"] = shots
            metas[i]["context_kind"] = opts.context
            metas[i]["context"] = ""
        if opts.context == "full":
            _attach_full(samples, idxs, rest, room, answer, metas, opts)
        elif opts.context == "retrieve":
            _attach_retrieved(samples, idxs, rest, room, metas, opts, ctx)
        for i in idxs:
            metas[i]["prompt_tokens_est"] = rest[i] + metas[i].get("trim", {}).get("tokens_kept", 0)
    return [Sample(s.id, s.input, s.target, m) for s, m in zip(samples, metas)]


def _attach_full(samples: list[Sample], idxs: list[int], rest: dict[int, int], room: int, answer: int,
                 metas: list[dict[str, Any]], opts: Any) -> None:
    by_topic: dict[int, list[int]] = defaultdict(list)
    for i in idxs:
        by_topic[samples[i].input["topic_id"]].append(i)
    for tid, members in by_topic.items():
        topic = samples[members[0]].meta["documents"]  # every topic has them: `AerTask.load` checks it
        worst = max(rest[i] for i in members)  # one budget per topic: all its questions share the document prefix
        budget = room - worst
        if budget <= 0:
            raise UsageError(f"max_context_tokens={opts.max_context_tokens} leaves no room for documents of topic "
                             f"{tid} (answer budget {answer}, rest of prompt ~{worst} tokens)")
        text, trim = render_full(topic, budget, opts.chars_per_token)
        record = asdict(trim)
        for i in members:
            metas[i]["context"] = text
            metas[i]["trim"] = record


def _attach_retrieved(samples: list[Sample], idxs: list[int], rest: dict[int, int], room: int,
                      metas: list[dict[str, Any]], opts: Any, ctx: ScoreContext | None) -> None:
    if ctx is None or ctx.embedder is None:
        raise UsageError("context: retrieve needs the job's embedder (scoring.embedder), none was given")
    queries = [(samples[i].meta["documents"], query_text(samples[i].input["target_event"], samples[i].input["options"]))
               for i in idxs]
    ranked = top_chunks(ctx.embedder, queries, opts.top_k, opts.chunk_tokens, opts.chars_per_token, ctx.cache)
    for i, (topic, _), hits in zip(idxs, queries, ranked):
        budget = room - rest[i]
        if budget <= 0:
            raise UsageError(f"max_context_tokens={opts.max_context_tokens} leaves no room for passages "
                             f"({samples[i].id})")
        text, kept, used = render_passages([c for c, _ in hits], budget, opts.chars_per_token)
        metas[i]["context"] = text
        metas[i]["trim"] = {"rule": "retrieve", "budget": budget, "top_k": opts.top_k, "passages_kept": kept,
                            "tokens_kept": used, "docs_total": len(topic.docs), "chars_per_token": opts.chars_per_token,
                            "passages": [{"doc": c.doc, "score": round(sc, 4)} for c, sc in hits[:kept]]}
