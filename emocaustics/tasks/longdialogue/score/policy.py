"""The spec's rules at each point where the two scoring modes differ, as the policy the one engine (`engine`) runs;
`reference.ReferencePolicy` overrides them with the published scripts' behaviour. Also the spec's triage (which
dialogues fail before scoring, and why) and the text pairs it embeds, which the Ray Data plan runs in its stages.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, replace
from typing import Any

from emocaustics.models.base import Embedder
from emocaustics.scoring.similarity import SimilarityTable, similarity_table
from emocaustics.tasks.longdialogue.data.schema import Dialogue
from emocaustics.tasks.longdialogue.score.chains import (ChainRules, item_rows, judge_prefetch, needed_pairs,
                                                         score_dialogue_chains)
from emocaustics.tasks.longdialogue.score.judge import SPEC_JUDGE, Judge, JudgeRules, ReferenceCrash
from emocaustics.tasks.longdialogue.score.sextuple import LengthMismatch, dialogue_points, pairs_needed, score_dialogue_sextuples
from emocaustics.tasks.longdialogue.score.tables import (
    build_result,
    chain_dialogue_components,
    dialogue_row,
    sextuple_dialogue_components,
    sextuple_item_rows,
)

# each mode's chain rules, read by the one walk (`chains`); the judge and its failures are set per run
SPEC_CHAINS = ChainRules()
REFERENCE_CHAINS = ChainRules(event_threshold=0.3, published=True, reuse_events=True, either_matches=True)


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


def collect_pairs(task: str, d: Dialogue, pred: Any) -> set[tuple[str, str]]:
    """The text pairs whose cosines scoring `d` may need."""
    if task == "sextuple":
        return pairs_needed(d.utterances, pred)
    return needed_pairs(d.chains or {}, pred)


class Policy:
    """The spec's rules at each point where the modes differ; `reference.ReferencePolicy` overrides them."""

    name = "spec"
    judge_rules: JudgeRules = SPEC_JUDGE
    judge_sextuples = False  # the spec asks its judge on chains only; the reference on both tasks
    chain_rules = SPEC_CHAINS

    def __init__(self, on_judge_error: str = "zero", judge: bool = False) -> None:
        self.on_judge_error = on_judge_error
        self.rules = replace(self.chain_rules, judge=judge, on_judge_error=on_judge_error)

    triage = staticmethod(triage)  # (scorable (dialogue, prediction) pairs, dialogue rows of the failures)
    # one dialogue's text pairs; the reference raises `ReferenceCrash` on a shape it cannot read (failed unembedded)
    pairs = staticmethod(collect_pairs)
    similarities = staticmethod(similarity_table)  # (pairs, embedder) -> SimilarityTable
    ordered = staticmethod(sorted)  # the order a round's questions are asked in (the reference: its walk's)
    result = staticmethod(build_result)  # (task, items, dialogue rows, info) -> ScoreResult

    def prefetch(self, task: str, ok: Sequence[tuple[Dialogue, Any]], table: SimilarityTable) -> set[tuple[str, str]]:
        """Judge questions worth asking in one batch before the first round."""
        return set().union(*(judge_prefetch(d.chains or {}, p, table.sim, self.rules) for d, p in ok)) if ok else set()

    def score(self, task: str, d: Dialogue, pred: Any, sim: Any, answers: Mapping[Any, Any] | None
              ) -> tuple[Any, Iterable[Any]]:
        """(one dialogue's outcome, the judge questions it still needs: then the outcome is incomplete). `answers`
        is None without a judge. A `ReferenceCrash` raised here fails the dialogue by name."""
        if task == "sextuple":
            return score_dialogue_sextuples(d.utterances, pred, sim), set()
        o = score_dialogue_chains(d.chains or {}, pred, sim, answers, self.rules)
        return o, o.missing

    def rows(self, task: str, d: Dialogue, o: Any, answers: Mapping[Any, Any] | None, notes: int
             ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """(item rows, the dialogue row) of a scored dialogue."""
        if task == "sextuple":
            return sextuple_item_rows(d.id, o), dialogue_row(d, "ok", None, float(len(d.utterances)),
                                                             dialogue_points(o), 0, notes,
                                                             **sextuple_dialogue_components(o))
        return item_rows(d.id, o.items, self.rules), dialogue_row(
            d, "ok" if o.score is not None else "unscored",
            None if o.score is not None else "every event unscored (judge failures)",
            float(sum(s is not None for s in o.holder_scores.values())), o.score, o.judge_failures, notes,
            **chain_dialogue_components(o.items))

    def crashed(self, task: str, d: Dialogue, exc: ReferenceCrash, notes: int) -> dict[str, Any]:
        raise exc  # the spec's rules never raise one

    def info(self, emb: Embedder, judge: Judge | None, table: SimilarityTable, t_embed: float) -> dict[str, Any]:
        extra: dict[str, Any] = {
            "compat": self.name, "embedder": emb.name, "judge": judge.name if judge else "none",
            "on_judge_error": self.on_judge_error, "texts_requested": table.texts_requested,
            "distinct_texts": table.distinct_texts, "embed_seconds": round(t_embed, 3)}
        if judge is not None:
            extra["judge_stats"] = asdict(judge.stats)
        return extra
