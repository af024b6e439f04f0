"""The documents a question is asked with: approximate token counts, the full-context trim rule and retrieval chunks.

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
from collections import Counter
from dataclasses import dataclass

from emocaustics.tasks.aer.data import Topic
from emocaustics.tasks.aer.prompts import CUT_MARK, DOCUMENT_ITEM, PASSAGE_ITEM

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
