"""The in-process scoring path: failures triaged, distinct texts embedded once, judge asked in batches, rows scored.

`ascore(task, dialogues, predictions, *, embedder, judge=None, compat="spec", on_judge_error="zero")` ->
`ScoreResult(items, dialogues, summary)` (`score_sextuples` / `score_chains` outside an event loop).
`predictions` maps dialogue id -> parsed prediction (`list[list[Sextuple]]` / `Chains`) or a failure reason (str);
a dialogue absent from it is a failure "missing prediction". `embedder` is an `Embedder` or a spec string; `judge`
an `EventJudge`, any `LLM`, a parsed `LLMSpec`, or None / "none" (embedding only). The sextuple rules use no judge (the spec scores them by embeddings only).
The Ray Data path (`emocaustics.tasks.longdialogue.score.plan`) runs the same `triage` / `collect_pairs` / `score_ok` in its stages.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from emocaustics.tasks.longdialogue.data.schema import Dialogue
from emocaustics.models.base import Embedder
from emocaustics.models.spec import LLMSpec
from emocaustics.tasks.longdialogue.score.chains import ChainRules, event_pairs, judge_prefetch, reason_pairs, score_dialogue_chains
from emocaustics.tasks.longdialogue.score.judge import EventJudge, make_judge
from emocaustics.tasks.longdialogue.score.sextuple import LengthMismatch, dialogue_points, pairs_needed, score_dialogue_sextuples
from emocaustics.score.similarity import SimilarityTable, similarity_table
from emocaustics.tasks.longdialogue.score.tables import (
    ScoreResult,
    build_result,
    chain_dialogue_components,
    chain_item_rows,
    dialogue_row,
    sextuple_dialogue_components,
    sextuple_item_rows,
)

TASKS = ("sextuple", "emotion")
MAX_JUDGE_ROUNDS = 64  # each round settles at least one pending event per holder; real data needs 1-2


def resolve_embedder(embedder: Embedder | str) -> Embedder:
    if isinstance(embedder, str):
        from emocaustics.models.embedders import make_embedder

        return make_embedder(embedder)
    return embedder


def resolve_judge(judge: Any) -> EventJudge | None:
    if judge is None or judge == "none" or isinstance(judge, EventJudge):
        return None if judge == "none" else judge
    if isinstance(judge, LLMSpec):  # parsed where it was given (a job's judge_spec, `--judge`)
        return make_judge(judge)
    return EventJudge(judge)  # any LLM


def _failure(d: Dialogue, reason: str, weight: float, status: str = "failed") -> dict[str, Any]:
    return dialogue_row(d, status, reason, weight, None if status == "no_gt" else 0.0)


def triage(task: str, dialogues: Sequence[Dialogue], predictions: Mapping[int, Any]
           ) -> tuple[list[tuple[Dialogue, Any]], list[dict[str, Any]]]:
    """(scorable (dialogue, prediction) pairs, dialogue rows of the failures: missing / malformed / mismatched)."""
    ok: list[tuple[Dialogue, Any]] = []
    failed: list[dict[str, Any]] = []
    for d in dialogues:
        pred = predictions.get(d.id)
        weight = float(len(d.utterances)) if task == "sextuple" else float(len(d.chains or {}))
        if not d.utterances:  # an empty or unreadable chat file: nothing to score, said so (never a silent 0)
            failed.append(_failure(d, "the dialogue has no utterances (empty or unreadable chat file); not scored",
                                   0.0, "no_gt"))
        elif task == "emotion" and not d.chains:
            failed.append(_failure(d, "ground truth has no usable emotion chains; not scored", weight, "no_gt"))
        elif pred is None:
            failed.append(_failure(d, "missing prediction", weight))
        elif isinstance(pred, str):
            failed.append(_failure(d, pred, weight))
        elif task == "sextuple" and len(pred) != len(d.utterances):
            failed.append(_failure(d, f"length mismatch: {LengthMismatch(len(d.utterances), len(pred))}", weight))
        else:
            ok.append((d, pred))
    return ok, failed


def collect_pairs(task: str, ok: Iterable[tuple[Dialogue, Any]]) -> set[tuple[str, str]]:
    pairs: set[tuple[str, str]] = set()
    for d, pred in ok:
        if task == "sextuple":
            pairs |= pairs_needed(d.utterances, pred)
        else:
            pairs |= event_pairs(d.chains or {}, pred) | reason_pairs(d.chains or {}, pred)
    return pairs


async def score_ok(task: str, ok: Sequence[tuple[Dialogue, Any]], table: SimilarityTable,
                   judge: EventJudge | None = None, rules: ChainRules | None = None,
                   notes: Mapping[int, int] | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Score the scorable dialogues: (item rows, dialogue rows)."""
    notes = notes or {}
    items: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    if task == "sextuple":
        for d, pred in ok:
            scored = score_dialogue_sextuples(d.utterances, pred, table.sim)
            items += sextuple_item_rows(d.id, scored)
            rows.append(dialogue_row(d, "ok", None, float(len(d.utterances)), dialogue_points(scored), 0,
                                     notes.get(d.id, 0), **sextuple_dialogue_components(scored)))
        return items, rows
    rules = rules or ChainRules(judge=judge is not None)
    verdicts: dict[tuple[str, str], bool | None] = {}
    if judge is not None:
        prefetch = set().union(*(judge_prefetch(d.chains or {}, p, table.sim, rules) for d, p in ok)) if ok else set()
        verdicts.update(await judge.decide(sorted(prefetch)))
    for _ in range(MAX_JUDGE_ROUNDS):
        outcomes = [score_dialogue_chains(d.chains or {}, p, table.sim, verdicts, rules) for d, p in ok]
        missing = set().union(*(o.missing for o in outcomes)) if outcomes else set()
        if not missing:
            break
        if judge is None:  # cannot happen: without a judge no verdict is ever needed
            raise RuntimeError("verdicts needed but no judge")
        verdicts.update(await judge.decide(sorted(missing)))
    else:
        raise RuntimeError(f"judge verdicts still missing after {MAX_JUDGE_ROUNDS} rounds")
    for (d, _), o in zip(ok, outcomes):
        items += chain_item_rows(d.id, o.items)
        rows.append(dialogue_row(d, "ok" if o.score is not None else "unscored",
                                 None if o.score is not None else "every event unscored (judge failures)",
                                 float(sum(s is not None for s in o.holder_scores.values())), o.score,
                                 o.judge_failures, notes.get(d.id, 0), **chain_dialogue_components(o.items)))
    return items, rows


async def ascore(task: str, dialogues: Sequence[Dialogue], predictions: Mapping[int, Any], *,
                 embedder: Embedder | str = "minilm", judge: Any = None, compat: str = "spec",
                 on_judge_error: str = "zero", notes: Mapping[int, int] | None = None) -> ScoreResult:
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, not {task!r}")
    if compat not in ("spec", "reference"):
        raise ValueError(f"compat must be 'spec' or 'reference', not {compat!r}")
    t0 = time.perf_counter()
    emb = resolve_embedder(embedder)
    # the reference asks its judge on both tasks (with the judge's bare LLM: `refengine`); the spec on chains only
    jdg = resolve_judge(judge) if task == "emotion" or compat == "reference" else None
    try:
        if compat == "reference":
            from emocaustics.tasks.longdialogue.score.refengine import ascore_reference

            return await ascore_reference(task, dialogues, predictions, embedder=emb,
                                          llm=jdg.llm if jdg is not None else None, notes=notes)
        rules = ChainRules(judge=jdg is not None, on_judge_error=on_judge_error)
        ok, failed = triage(task, dialogues, predictions)
        table = await similarity_table(collect_pairs(task, ok), emb)
        t_embed = time.perf_counter() - t0
        items, rows = await score_ok(task, ok, table, jdg, rules, notes)
    finally:
        if jdg is not None and isinstance(judge, LLMSpec):  # made here from a spec: its HTTP session ends with this loop
            await jdg.llm.aclose()
    extra = {"compat": compat, "embedder": emb.name, "judge": jdg.name if jdg else "none",
             "on_judge_error": on_judge_error, "texts_requested": table.texts_requested,
             "distinct_texts": table.distinct_texts, "embed_seconds": round(t_embed, 3),
             "seconds": round(time.perf_counter() - t0, 3), "path": "in-process"}
    if jdg is not None:
        extra["judge_stats"] = {"asked": jdg.stats.asked, "retried": jdg.stats.retried,
                                "failures": jdg.stats.failures, "cache_hits": jdg.stats.cache_hits}
    return build_result(task, items, rows + failed, extra)


def _run(coro: Any) -> ScoreResult:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    coro.close()
    raise RuntimeError("score_* called inside a running event loop: await ascore(task, ...) instead")


def score_sextuples(dialogues: Sequence[Dialogue], predictions: Mapping[int, Any], **kw: Any) -> ScoreResult:
    return _run(ascore("sextuple", dialogues, predictions, **kw))


def score_chains(dialogues: Sequence[Dialogue], predictions: Mapping[int, Any], **kw: Any) -> ScoreResult:
    return _run(ascore("emotion", dialogues, predictions, **kw))
