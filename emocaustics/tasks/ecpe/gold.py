"""Reading the organisers' gold files (official shape) into parsed, deduplicated pairs per conversation, with the
same named problems as a submission (`validate.py`): malformed gold is an error, data defects are warnings."""

from __future__ import annotations

from typing import Any

from emocaustics.tasks.ecpe.spans import EMOTIONS, gold_indices
from emocaustics.tasks.ecpe.validate import (Gold, GoldConversation, Problem, SubmissionError, _Bad, _cause_utterance,
                                             _conversations, _emotion_part, _pairs_list, _utterances, deduplicated)


def read_gold(records: Any, subtask: int, file: str) -> Gold:
    """A gold file (official shape) -> parsed, deduplicated pairs per conversation; malformed gold raises
    `SubmissionError`, data defects are returned as warnings."""
    problems: list[Problem] = []
    gold: dict[int, GoldConversation] = {}
    for cid, raw, rec in _conversations(records, file, problems):
        texts, speakers, emotions, ids_ok = _utterances(rec)
        if not texts:
            problems.append(Problem("malformed_conversation", "error", file, raw, None, None,
                                    "the gold conversation has no list of utterances with text", "conversation"))
            continue
        if not ids_ok:
            problems.append(Problem("utterance_ids", "warning", file, raw, None, None,
                                    "utterance_ID is not 1..n in order; positions are used, as officially"))
        pairs: list[tuple[int, ...]] = []
        raw_pairs = _pairs_list(rec, raw, file, problems)
        for n, x in enumerate(raw_pairs, 1):
            try:
                eu, emo = _emotion_part(x)
                if subtask == 1:
                    if not isinstance(x[1], str) or "_" not in x[1]:
                        raise _Bad("malformed_pair", "a gold cause must be '<utterance>_<span text>'")
                    cu_text, span = x[1].split("_", 1)
                    cu = int(cu_text)
                    if not 1 <= cu <= len(texts):
                        raise _Bad("utterance_out_of_range", f"cause utterance {cu} is not in 1..{len(texts)}")
                    start, end, found = gold_indices(span, texts[cu - 1])
                    if not found:
                        problems.append(Problem("span_not_found", "warning", file, raw, n, x,
                                                f"the span is not in utterance {cu}'s tokens; scored as [0, 0]"))
                    pairs.append((eu, cu, start, end, emo))
                else:
                    pairs.append((eu, _cause_utterance(x[1]), emo))
            except _Bad as bad:
                problems.append(Problem(bad.kind, "error", file, raw, n, x, bad.message))
            except ValueError:
                problems.append(Problem("malformed_pair", "error", file, raw, n, x,
                                        "the cause utterance is not an integer"))
            else:
                label = emotions[eu - 1] if 1 <= eu <= len(emotions) else None
                if label is not None and label != EMOTIONS[emo]:
                    problems.append(Problem("emotion_contradicts_label", "warning", file, raw, n, x,
                                            f"utterance {eu} is labelled {label!r}"))
        kept = deduplicated(pairs, file, raw, problems)
        gold[cid] = GoldConversation(cid, texts, speakers, emotions, kept, raw_pairs)
    if any(p.severity == "error" for p in problems):
        raise SubmissionError(problems)
    return Gold(subtask, file, gold, problems)
