"""The emotion categories and the token rule that turns a cause span's text into token indices.

The official scorer turns each gold subtask-1 span into `[start, end)` indices over `utterance.split()`: it strips
whitespace and leading/trailing ASCII punctuation repeatedly, splits the rest on whitespace and takes the FIRST place
where those tokens occur consecutively in the utterance; a span that is not found becomes `[0, 0]`. The LLM solver
locates the model's span text with the same rule, so that a model that copies the gold text gets the gold indices.
"""

from __future__ import annotations

import string

# Index 0 is the null class: it is excluded from every metric.
EMOTIONS: tuple[str, ...] = ("neutral", "anger", "disgust", "fear", "joy", "sadness", "surprise")
EMOTION_INDEX: dict[str, int] = {e: i for i, e in enumerate(EMOTIONS)}

_PUNCT = frozenset(string.punctuation)  # ASCII only, as the official scorer


def clean_span(span: str) -> str:
    """Strip whitespace, then one leading and one trailing ASCII punctuation character, until neither end has one.

    The trailing test is made on the text after the leading character went (so "!a" and "a!" both give "a").
    A span made only of punctuation ends up empty here; the official scorer crashes on it (IndexError).
    """
    while True:
        span = span.strip()
        if not span:
            return span
        head, tail = span[0] in _PUNCT, span[-1] in _PUNCT
        if not head and not tail:
            return span
        if head:
            span = span[1:]
        if span and span[-1] in _PUNCT:
            span = span[:-1]


def find_tokens(span: str, utterance: str) -> tuple[int, int] | None:
    """First `[start, end)` where `span.split()` occurs in `utterance.split()`; None when it does not occur.

    An empty span "occurs" at 0 (the official loop matches the empty token list at the first position); a span
    with no utterance tokens to search is not found.
    """
    want, toks = span.split(), utterance.split()
    n = len(want)
    for i in range(len(toks)):
        if i + n <= len(toks) and toks[i:i + n] == want:
            return i, i + n
    return None


def gold_indices(span: str, utterance: str, missed: tuple[int, int] = (0, 0)) -> tuple[int, int, bool]:
    """A gold span as the official scorer reads it: (start, end, found); not found (or nothing left after cleaning)
    -> (*missed, False)."""
    cleaned = clean_span(span)
    hit = find_tokens(cleaned, utterance) if cleaned else None
    return (*missed, False) if hit is None else (*hit, True)


def locate_span(span: str, utterance: str) -> tuple[int, int, bool]:
    """A predicted span's text located by the same rule; not found -> the whole utterance `(0, n_tokens, False)`,
    so the pair is kept and the miss can be counted."""
    return gold_indices(span, utterance, (0, len(utterance.split())))
