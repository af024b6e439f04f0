"""The one scoring engine of both modes: failures triaged, distinct texts embedded once, judge asked in batches,
rows scored. What differs between the spec and `--compat reference` is a policy: `policy.Policy` (the spec's) and
`reference.ReferencePolicy` (the published scripts' behaviour, quirks included).

`ascore(task, dialogues, predictions, *, embedder, judge=None, compat="spec", on_judge_error="zero")` ->
`ScoreResult(items, dialogues, summary)` (run outside an event loop by `plan.score_with_ray`, either engine).
`predictions` maps dialogue id -> parsed prediction (`list[list[Sextuple]]` / `Chains`) or a failure reason (str);
a dialogue absent from it is a failure "missing prediction". `embedder` is an `Embedder` or a spec string; `judge`
a `Judge`, any `LLM`, a parsed `LLMSpec`, or None / "none" (embedding only). The spec's sextuple rules use no judge (the spec scores them by embeddings only).
The Ray Data path (`emocaustics.tasks.longdialogue.score.plan`) runs the same `policy.triage` / `policy.collect_pairs` / `score_ok` in its stages.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from emocaustics.tasks.longdialogue.data.schema import Dialogue
from emocaustics.models.base import Embedder
from emocaustics.models.spec import LLMSpec
from emocaustics.tasks.longdialogue.score.judge import SPEC_JUDGE, Judge, JudgeRules, ReferenceCrash
from emocaustics.tasks.longdialogue.score.policy import Policy
from emocaustics.scoring.similarity import SimilarityTable
from emocaustics.tasks.longdialogue.score.tables import ScoreResult

TASKS = ("sextuple", "emotion")
MAX_JUDGE_ROUNDS = 64  # each round settles at least one pending question per dialogue; real data needs 1-2


def policy_class(compat: str) -> type[Policy]:
    if compat == "reference":
        from emocaustics.tasks.longdialogue.score.reference import ReferencePolicy

        return ReferencePolicy
    if compat != "spec":
        raise ValueError(f"compat must be 'spec' or 'reference', not {compat!r}")
    return Policy


def resolve_embedder(embedder: Embedder | str) -> Embedder:
    if isinstance(embedder, str):
        from emocaustics.models.embedders import make_embedder

        return make_embedder(embedder)
    return embedder


def resolve_judge(judge: Any, rules: JudgeRules = SPEC_JUDGE) -> Judge | None:
    """A `Judge` asking with `rules` (a given judge's LLM is asked with them too), or None."""
    if judge is None or judge == "none":
        return None
    if isinstance(judge, LLMSpec):  # parsed where it was given (a job's judge_spec, `--judge`): its model
        from emocaustics.models.factory import make_llm

        judge = make_llm(judge)
    if isinstance(judge, Judge):
        return judge if judge.rules is rules else Judge(judge.llm, rules)
    return Judge(judge, rules)  # any LLM


async def score_ok(task: str, ok: Sequence[tuple[Dialogue, Any]], table: SimilarityTable,
                   judge: Judge | None, policy: Policy,
                   notes: Mapping[int, int]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Score the scorable dialogues in rounds (whether a later question is asked depends on earlier answers):
    (item rows, dialogue rows)."""
    answers: dict[Any, Any] | None = None
    if judge is not None:
        answers = await judge.ask(sorted(policy.prefetch(task, ok, table)), task)
    done: dict[int, Any] = {}
    for _ in range(MAX_JUDGE_ROUNDS):
        missing: dict[Any, None] = {}  # insertion-ordered
        for d, pred in ok:
            if d.id in done:
                continue
            try:
                outcome, needed = policy.score(task, d, pred, table.sim,
                                               answers if judge is None else judge.reads(answers, d, task))
            except ReferenceCrash as exc:
                outcome, needed = exc, ()
            if needed:
                missing.update(dict.fromkeys(needed))
            else:
                done[d.id] = outcome
        if not missing:
            break
        if judge is None or answers is None:  # cannot happen: without a judge no answer is ever needed
            raise RuntimeError("judge answers needed but no judge")
        answers.update(await judge.ask(policy.ordered(missing), task))
    else:
        raise RuntimeError(f"judge answers still missing after {MAX_JUDGE_ROUNDS} rounds")
    items: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    for d, _ in ok:
        o = done[d.id]
        if isinstance(o, ReferenceCrash):
            rows.append(policy.crashed(task, d, o, notes.get(d.id, 0)))
        else:
            its, row = policy.rows(task, d, o, answers, notes.get(d.id, 0))
            items += its
            rows.append(row)
        if judge is not None:  # the judge calls its scoring read, to the eval log
            judge.emit(str(d.id))
    return items, rows


async def ascore(task: str, dialogues: Sequence[Dialogue], predictions: Mapping[int, Any], *,
                 embedder: Embedder | str = "minilm", judge: Any = None, compat: str = "spec",
                 on_judge_error: str = "zero", notes: Mapping[int, int] | None = None) -> ScoreResult:
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, not {task!r}")
    mode = policy_class(compat)
    t0 = time.perf_counter()
    notes = notes or {}
    emb = resolve_embedder(embedder)
    jdg = resolve_judge(judge, mode.judge_rules) if task == "emotion" or mode.judge_sextuples else None
    policy = mode(on_judge_error, judge=jdg is not None)
    try:
        ok, failed = policy.triage(task, dialogues, predictions)
        pairs: set[tuple[str, str]] = set()
        ready: list[tuple[Dialogue, Any]] = []
        for d, pred in ok:
            try:
                pairs |= policy.pairs(task, d, pred)
            except ReferenceCrash as exc:
                failed.append(policy.crashed(task, d, exc, notes.get(d.id, 0)))
                continue
            ready.append((d, pred))
        table = await policy.similarities(sorted(pairs), emb)  # sorted: a set's order follows the hash seed
        t_embed = time.perf_counter() - t0
        items, rows = await score_ok(task, ready, table, jdg, policy, notes)
    finally:
        if jdg is not None and isinstance(judge, LLMSpec):  # made here from a spec: its HTTP session ends with this loop
            await jdg.llm.aclose()
    info = {**policy.info(emb, jdg, table, t_embed), "seconds": round(time.perf_counter() - t0, 3), "path": "in-process"}
    return policy.result(task, items, rows + failed, info)
