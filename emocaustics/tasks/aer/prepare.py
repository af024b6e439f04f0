"""Driver-side work before solving (`AerTask.prepare`): few-shot examples, the full or retrieved context of each
question, and the trim record. After this a sample carries everything its prompt needs, so the solver next to the
engine reads no files.

meta keys written: `shots` (few-shot: the topic's examples), `context` (the documents or passages text, one string
object per topic under `full`), `context_kind`, `trim` (what the budget kept), `prompt_tokens_est`.

Few-shot examples: k questions with gold from another split (`shots_from`, default dev, or sample when the run is on
dev), never of the question's own topic (topic ids are shared across splits: dev topics 1-10 are the sample topics),
chosen by a seeded draw per topic (`data.pick_shots`, as `AerTask.load` reads that split), so that all questions of a
topic share one prompt prefix.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import asdict
from typing import Any

from emocaustics.core.errors import UsageError
from emocaustics.core.task import Sample, ScoreContext
from emocaustics.tasks.aer import prompts
from emocaustics.tasks.aer.context import approx_tokens, render_full, render_passages
from emocaustics.tasks.aer.data import Topic, shots_split
from emocaustics.tasks.aer.retrieve import query_text, run_sync, top_chunks
from emocaustics.tasks.aer.solver import ANSWER_BUDGETS

MARGIN = 0.05  # of the context, for the chat template and the estimate's error


def prepare_samples(samples: list[Sample], opts: Any, ctx: ScoreContext | None = None) -> list[Sample]:
    """Attach shots and context to every sample (see the module docstring), from what `AerTask.load` read: each
    question's documents (`meta["documents"]`) and, few-shot, its examples (`meta["shots"]`); one pass per (data root,
    split)."""
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, s in enumerate(samples):
        groups[(s.meta["root"], s.meta["split"])].append(i)
    metas: list[dict[str, Any]] = [{k: v for k, v in s.meta.items() if k != "documents"} for s in samples]
    # the context less the answer's bound and the margin: a question's documents get this less the rest of its prompt
    room = opts.max_context_tokens - ANSWER_BUDGETS[opts.prompt] - math.ceil(MARGIN * opts.max_context_tokens)
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
            _attach_full(samples, idxs, rest, room, metas, opts)
        elif opts.context == "retrieve":
            _attach_retrieved(samples, idxs, rest, room, metas, opts, ctx)
        for i in idxs:
            metas[i]["prompt_tokens_est"] = rest[i] + metas[i].get("trim", {}).get("tokens_kept", 0)
    return [Sample(s.id, s.input, s.target, m) for s, m in zip(samples, metas)]


def _topic_of(s: Sample) -> Topic:
    topic = s.meta.get("documents")
    if topic is None:
        raise UsageError(f"split {s.meta['split']}: topic {s.input['topic_id']} ({s.id}) has no documents; "
                         "use context: none")
    return topic


def _attach_full(samples: list[Sample], idxs: list[int], rest: dict[int, int], room: int, metas: list[dict[str, Any]],
                 opts: Any) -> None:
    by_topic: dict[int, list[int]] = defaultdict(list)
    for i in idxs:
        by_topic[samples[i].input["topic_id"]].append(i)
    for tid, members in by_topic.items():
        topic = _topic_of(samples[members[0]])
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


def _attach_retrieved(samples: list[Sample], idxs: list[int], rest: dict[int, int], room: int,
                      metas: list[dict[str, Any]], opts: Any, ctx: ScoreContext | None) -> None:
    if ctx is None or ctx.embedder is None:
        raise UsageError("context: retrieve needs the job's embedder (scoring.embedder), none was given")
    queries = [(_topic_of(samples[i]), query_text(samples[i].input["target_event"], samples[i].input["options"]))
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
