"""Which chat file does each emo file annotate? Derived from content, never from file numbers alone.

Evidence per (emo, chat) pair: TF-IDF cosine over character unigrams+bigrams between the emo's event names and
reasons and the chat's sentences and sextuple annotations, centred and scaled per chat (some long chats resemble
everything; scaling removes that pull), plus a bonus when the emo's holders are all speakers of the chat. Because
each distinct annotation belongs to one distinct dialogue, the pairs are chosen together as a one-to-one assignment
(Hungarian method), and each pair keeps its margin over the next best chat.

The published data holds near-twin dialogues (same sentences, annotated twice with small differences). Between
twins the text cannot decide; such pairs are marked `ambiguous`. When a numbering rule (same number, or the
renumbering by text-sorted names) agrees with nearly all confident pairs, it settles the ambiguous ones and they are
marked `inferred` -- reported as inferred, not verified.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

_WORD = re.compile(r"[\W_]+")

# z-units (per-chat standardised similarity) below which the best and the runner-up chat are not told apart
AMBIGUOUS_MARGIN = 1.0
# bonus (z-units) when every emo holder speaks in the chat
HOLDER_BONUS = 1.0
# share of confident pairs a numbering rule must agree with before it may settle ambiguous ones
RULE_AGREEMENT = 0.95
# two chats are twins when their sentence bigram sets overlap this much (Jaccard)
TWIN_JACCARD = 0.5
# an emo needs at least this many distinct character grams to be matched on content at all
MIN_GRAMS = 4


@dataclass(frozen=True, slots=True)
class Evidence:
    """What pairing looks at for one distinct file content."""

    text: str
    holders: frozenset[str]
    numbers: tuple[int, ...]  # the file numbers this content is published under
    sentences: str = ""  # chats only: the dialogue text alone, for twin detection


@dataclass(frozen=True, slots=True)
class Match:
    emo: int  # index into the emo evidence list
    chat: int  # index into the chat evidence list
    score: float
    margin: float  # score minus the best other chat's score (z-units)
    runner_up: int | None
    status: str  # verified | ambiguous | inferred | unverified
    note: str = ""


def _grams(text: str) -> set[str]:
    t = _WORD.sub("", text)
    return set(t) | {t[i : i + 2] for i in range(len(t) - 1)}


def similarity(emo_texts: Sequence[str], chat_texts: Sequence[str]) -> np.ndarray:
    """Cosine similarity of binary TF-IDF vectors (character unigrams and bigrams), shape (emos, chats)."""
    from scipy.sparse import csr_matrix

    chat_sets = [_grams(t) for t in chat_texts]
    emo_sets = [_grams(t) for t in emo_texts]
    vocab: dict[str, int] = {}
    for s in chat_sets:
        for g in s:
            vocab.setdefault(g, len(vocab))

    def matrix(sets: list[set[str]]) -> csr_matrix:
        rows, cols = [], []
        for i, s in enumerate(sets):
            js = [vocab[g] for g in s if g in vocab]
            rows.extend([i] * len(js))
            cols.extend(js)
        return csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(sets), max(len(vocab), 1)))

    c, e = matrix(chat_sets), matrix(emo_sets)
    df = np.asarray(c.sum(axis=0)).ravel()
    idf = np.log((len(chat_sets) + 1) / (df + 1)) + 1.0

    def unit(m: csr_matrix) -> csr_matrix:
        m = csr_matrix(m.multiply(idf))
        norms = np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())
        norms[norms == 0] = 1.0
        return csr_matrix(m.multiply(1.0 / norms[:, None]))

    return np.asarray((unit(e) @ unit(c).T).todense())


def _standardise(s: np.ndarray) -> np.ndarray:
    """Centre and scale each chat's column; with few emos the statistics mean nothing, so scale globally."""
    if s.shape[0] >= 5 and s.shape[1] >= 2:
        return (s - s.mean(axis=0)) / (s.std(axis=0) + 1e-9)
    return (s - s.mean()) / (s.std() + 1e-9) if s.size > 1 else s


def _twins(chats: Sequence[Evidence]) -> Callable[[int, int], bool]:
    sets = [{c.sentences[i : i + 2] for i in range(len(c.sentences) - 1)} for c in chats]

    def twin(a: int, b: int) -> bool:
        x, y = sets[a], sets[b]
        return bool(x and y) and len(x & y) / len(x | y) >= TWIN_JACCARD

    return twin


def text_sorted_rank(n: int) -> dict[int, int]:
    """k -> position (1-based) of the name "k" when "1".."n" are sorted as text (a common renumbering accident)."""
    return {int(s): i + 1 for i, s in enumerate(sorted(str(k) for k in range(1, n + 1)))}


def match(emos: Sequence[Evidence], chats: Sequence[Evidence]) -> list[Match]:
    """Pair each distinct emo content with the distinct chat content it annotates (one-to-one where possible).

    An emo with (almost) no text is left out of the content match; only a confirmed numbering rule can pair it
    (status `inferred`), else it stays unpaired. The answer is kept on disk under a hash of the evidence and of this
    module's source ($EMOCAUSTICS_CACHE or ~/.cache/emocaustics): matching the published data takes 3-12 s on two
    cores, which every `extract`/`score` command paid before its first dialogue, for files that never change.
    """
    import hashlib
    import json
    import os
    from dataclasses import asdict
    from pathlib import Path

    from emocaustics.core.datasource import cache_root

    h = hashlib.sha256(Path(__file__).read_bytes())
    for side in (emos, chats):
        h.update(json.dumps([[e.text, sorted(e.holders), list(e.numbers), e.sentences] for e in side],
                            ensure_ascii=False).encode("utf-8"))
        h.update(b"\x00")
    path = cache_root() / "pairing" / f"{h.hexdigest()[:32]}.json"
    try:
        return [Match(**m) for m in json.loads(path.read_text(encoding="utf-8"))]
    except (OSError, ValueError, TypeError):
        pass
    found = _match(emos, chats)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps([asdict(m) for m in found]), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:  # a read-only cache only costs the time
        pass
    return found


def _match(emos: Sequence[Evidence], chats: Sequence[Evidence]) -> list[Match]:
    from scipy.optimize import linear_sum_assignment

    usable = [i for i, e in enumerate(emos) if len(_grams(e.text)) >= MIN_GRAMS]
    if not usable or not chats:
        return []
    z = _standardise(similarity([emos[i].text for i in usable], [c.text for c in chats]))
    holder_fit = np.array([[1.0 if emos[i].holders and emos[i].holders <= c.holders else 0.0 for c in chats]
                           for i in usable])
    score = z + HOLDER_BONUS * holder_fit
    rows, cols = linear_sum_assignment(-score)
    twin = _twins(chats)
    matches: list[Match] = []
    for r, j in zip(rows.tolist(), cols.tolist()):
        i = usable[r]
        others = np.where(np.arange(len(chats)) == j, -np.inf, score[r])
        runner = int(np.argmax(others)) if len(chats) > 1 else None
        margin = float(score[r, j] - others[runner]) if runner is not None else float("inf")
        ambiguous = runner is not None and margin < AMBIGUOUS_MARGIN and twin(j, runner)
        if ambiguous:
            status, note = "ambiguous", f"indistinguishable from its twin (margin {margin:.2f})"
        elif margin < 0:  # the one-to-one assignment forced it: another chat fits this annotation better
            status, note = "unverified", (f"forced by the one-to-one assignment; chat #{runner} fits better "
                                          f"(margin {margin:.2f}); check this pair")
        else:
            status, note = "verified", ""
        matches.append(Match(i, j, float(score[r, j]), margin, runner, status, note))
    matches.sort(key=lambda m: m.emo)
    unmatched = [i for i in range(len(emos)) if i not in {m.emo for m in matches}]
    return _settle_ambiguous(matches, unmatched, emos, chats)


def _settle_ambiguous(matches: list[Match], unmatched: list[int], emos: Sequence[Evidence],
                      chats: Sequence[Evidence]) -> list[Match]:
    """Let a numbering rule that the confident pairs confirm decide between twins, and pair emos without text."""
    ambiguous = [m for m in matches if m.status == "ambiguous"]
    confident = [m for m in matches if m.status == "verified"]
    if (not ambiguous and not unmatched) or len(confident) < 10:
        return matches
    by_number = {n: j for j, c in enumerate(chats) for n in c.numbers}
    ranks = text_sorted_rank(len(chats))
    rules: dict[str, Callable[[int], int | None]] = {"same number": lambda k: k,
                                                     "text-sorted renumbering": lambda k: ranks.get(k)}
    for rule_name, rule in rules.items():
        agree = sum(by_number.get(rule(min(emos[m.emo].numbers)) or -1) == m.chat for m in confident)
        if agree < RULE_AGREEMENT * len(confident):
            continue
        taken = {m.chat for m in confident}
        proposal = {m.emo: by_number.get(rule(min(emos[m.emo].numbers)) or -1) for m in ambiguous}
        targets = list(proposal.values())
        candidates_ok = all(t not in taken and t in (m.chat, m.runner_up) for m, t in zip(ambiguous, targets))
        if not candidates_ok or len(set(targets)) != len(targets):
            continue
        why = f"settled by the {rule_name} rule, which {agree}/{len(confident)} verified pairs follow"
        settled = {m.emo: Match(m.emo, proposal[m.emo], m.score, m.margin, m.runner_up, "inferred",
                                f"text cannot tell twins apart (margin {m.margin:.2f}); {why}") for m in ambiguous}
        out = [settled.get(m.emo, m) for m in matches]
        used = {m.chat for m in out}
        for i in unmatched:  # no text to compare: the rule alone pairs it, when its chat is still free
            t = by_number.get(rule(min(emos[i].numbers)) or -1)
            if t is not None and t not in used:
                used.add(t)
                out.append(Match(i, t, float("nan"), float("nan"), None, "inferred", f"no readable text; {why}"))
        return sorted(out, key=lambda m: m.emo)
    return matches
