"""Driver-side work before solving (`AerTask.prepare`): few-shot examples, the full or retrieved context of each
question, and the trim record. After this a sample carries everything its prompt needs, so the solver next to the
engine reads no files.

meta keys written: `shots` (few-shot: the topic's examples), `context` (the documents or passages text, one string
object per topic under `full`), `context_kind`, `trim` (what the budget kept), `prompt_tokens_est`.

Few-shot examples: k questions with gold from another split (`shots_from`, default dev, or sample when the run is on
dev), never of the question's own topic (topic ids are shared across splits: dev topics 1-10 are the sample topics),
chosen by a seeded draw per topic, so that all questions of a topic share one prompt prefix.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections import defaultdict
from dataclasses import asdict
from typing import Any

from emocaustics.core.errors import UsageError
from emocaustics.core.task import Sample, ScoreContext
from emocaustics.tasks.aer import prompts
from emocaustics.tasks.aer.context import approx_tokens, render_full, render_passages
from emocaustics.tasks.aer.data import SplitData, load_split, shots_split
from emocaustics.tasks.aer.retrieve import query_text, run_sync, top_chunks
from emocaustics.tasks.aer.solver import ANSWER_BUDGETS

MARGIN = 0.05  # of the context, for the chat template and the estimate's error


def pick_shots(pool: SplitData, topic_id: int, k: int, seed: int, split: str) -> list[dict[str, Any]]:
    """k solved examples of `pool` (another split than `split`: `AerTask.load` checks it) outside topic `topic_id`,
    by a draw seeded with (seed, split, topic)."""
    cands = [q for q in pool.questions if q.gold and q.topic_id != topic_id]
    if not cands:
        raise UsageError(f"split {pool.split!r} has no solved questions outside topic {topic_id} for few-shot examples")
    rng = random.Random(hashlib.sha256(f"{seed}:{split}:{topic_id}".encode()).digest())
    chosen = sorted(rng.sample(range(len(cands)), min(k, len(cands))))
    return [{"id": cands[i].id, "topic_id": cands[i].topic_id, "target_event": cands[i].target_event,
             "options": cands[i].options, "answer": list(cands[i].gold or ())} for i in chosen]


def prepare_samples(samples: list[Sample], opts: Any, ctx: ScoreContext | None = None) -> list[Sample]:
    """Attach shots and context to every sample (see the module docstring); one pass per (data root, split)."""
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, s in enumerate(samples):
        groups[(s.meta["root"], s.meta["split"])].append(i)
    metas: list[dict[str, Any]] = [dict(s.meta) for s in samples]
    # the context less the answer's bound and the margin: a question's documents get this less the rest of its prompt
    room = opts.max_context_tokens - ANSWER_BUDGETS[opts.prompt] - math.ceil(MARGIN * opts.max_context_tokens)
    for (root, split), idxs in groups.items():
        data = load_split(root, split)
        cpt = opts.chars_per_token
        shots_by_topic: dict[int, list[dict[str, Any]]] = {}
        if opts.prompt == "few-shot":
            pool = load_split(root, shots_split(split, opts.shots_from))
            shots_by_topic = {t: pick_shots(pool, t, opts.shots, opts.seed, split)  # a draw per topic, seeded by it
                              for t in dict.fromkeys(samples[i].input["topic_id"] for i in idxs)}
        rest: dict[int, int] = {}
        for i in idxs:
            s = samples[i]
            shots = shots_by_topic.get(s.input["topic_id"], [])
            rest[i] = approx_tokens(prompts.rest_of_prompt(
                topic=s.meta.get("topic"), context_kind=opts.context, shots=shots, target_event=s.input["target_event"],
                options=s.input["options"], prompt=opts.prompt), cpt)
            metas[i]["shots"] = shots
            metas[i]["context_kind"] = opts.context
            metas[i]["context"] = ""
        if opts.context == "full":
            _attach_full(samples, idxs, data, rest, room, metas, opts)
        elif opts.context == "retrieve":
            _attach_retrieved(samples, idxs, data, rest, room, metas, opts, ctx)
        for i in idxs:
            metas[i]["prompt_tokens_est"] = rest[i] + metas[i].get("trim", {}).get("tokens_kept", 0)
    return [Sample(s.id, s.input, s.target, m) for s, m in zip(samples, metas)]


def _topic_of(data: SplitData, s: Sample):  # noqa: ANN202
    topic = data.topics.get(s.input["topic_id"])
    if topic is None:
        raise UsageError(f"split {data.split}: topic {s.input['topic_id']} ({s.id}) has no documents; "
                         "use context: none")
    return topic


def _attach_full(samples: list[Sample], idxs: list[int], data: SplitData, rest: dict[int, int], room: int,
                 metas: list[dict[str, Any]], opts: Any) -> None:
    by_topic: dict[int, list[int]] = defaultdict(list)
    for i in idxs:
        by_topic[samples[i].input["topic_id"]].append(i)
    for tid, members in by_topic.items():
        topic = _topic_of(data, samples[members[0]])
        worst = max(rest[i] for i in members)  # one budget per topic: all its questions share the document prefix
        budget = room - worst
        if budget <= 0:
            raise UsageError(f"max_context_tokens={opts.max_context_tokens} leaves no room for documents of topic "
                             f"{tid} (answer budget {ANSWER_BUDGETS[opts.prompt]}, rest of prompt ~{worst} tokens)")
        text, trim = render_full(topic, budget, opts.chars_per_token)
        record = asdict(trim)
        for i in members:
            metas[i]["context"] = text
            metas[i]["trim"] = record


def _attach_retrieved(samples: list[Sample], idxs: list[int], data: SplitData, rest: dict[int, int], room: int,
                      metas: list[dict[str, Any]], opts: Any, ctx: ScoreContext | None) -> None:
    if ctx is None or ctx.embedder is None:
        raise UsageError("context: retrieve needs the job's embedder (scoring.embedder), none was given")
    queries = [(_topic_of(data, samples[i]), query_text(samples[i].input["target_event"], samples[i].input["options"]))
               for i in idxs]
    ranked = run_sync(top_chunks(ctx.embedder, queries, opts.top_k, opts.chunk_tokens, opts.chars_per_token,
                                 ctx.cache))
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
