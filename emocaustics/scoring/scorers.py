"""Reusable scorers: a prediction against the sample's target, one long score row per (sample, metric).

A scorer is a small object: `metrics` (names, the first is the primary), `score(samples, predictions, ctx) ->
Scored` (rows through `core.task.rows_frame`; the summary holds each metric's mean over the rows that count).
Every one treats a sample the same way: a `Failure` (or no prediction) is status `failed`, value 0, with the reason;
a sample whose target is None is `unscored` (value null, outside the means). `field` picks a key out of a prediction
that is a dict (e.g. `answer` of a multiple-choice prediction); a prediction without it fails, naming the key.

- `ExactMatch`: 1 when the two texts are equal after normalisation (`normalize`: Unicode NFKC, case folded, runs of
  whitespace as one space, ends stripped), else 0. `normalize=False` compares `str(value)` as is.
- `SetMatch`: prediction and target as sets (a list, or a text split on commas, each item normalised as above):
  `jaccard` = |P & G| / |P | G| (1 when both are empty) and `exact_set` = 1 when P == G.
- `TokenF1`: SQuAD's answer normalisation (lower case, punctuation removed, the articles a/an/the removed, split on
  whitespace), then F1 of the two token multisets; 1 when both have no token, 0 when only one has none.
- `LLMJudge`: a judge model (the job's `scoring.judge`, or the model given) is asked, per sample, the prompt filled
  with `{question}` (the sample's input as text, or its field `question`), `{target}` and `{prediction}`, and answers
  a schema-constrained `Verdict` (`correct`, a bounded `reason`); metric `judge` is 1 when correct. It asks through
  the models layer (`models.factory.make_llm`: with `EMOCAUSTICS_CACHE` set, the response cache under it; a remote
  judge behind the budget, breaker and rate limit), re-asks an unparseable verdict on a new seed, and a verdict
  still bad is that sample's `failed` row with the reason. Each verdict and its reason are the scorer's `items`.
"""

from __future__ import annotations

import json
import re
import string
import unicodedata
from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from emocaustics.core.task import Failure, Sample, ScoreContext, Scored, SolveFailed, rows_frame
from emocaustics.models.spec import LLMSpec

_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize(text: Any) -> str:
    return " ".join(unicodedata.normalize("NFKC", str(text)).casefold().split())


def squad_tokens(text: Any) -> list[str]:
    """SQuAD's normalisation: lower case, punctuation out, articles out, whitespace split."""
    lowered = "".join(ch for ch in str(text).lower() if ch not in set(string.punctuation))
    return _ARTICLES.sub(" ", lowered).split()


def as_set(value: Any) -> set[str]:
    items = value.split(",") if isinstance(value, str) else value if isinstance(value, (list, tuple, set)) else [value]
    return {normalize(v) for v in items if normalize(v)}


class PerSample:
    """The shared walk: each sample's prediction and target to `values(pred, target) -> {metric: value}`."""

    metrics: tuple[str, ...] = ("score",)

    def __init__(self, field: str | None = None) -> None:
        self.field = field

    def values(self, pred: Any, target: Any) -> dict[str, float]:
        raise NotImplementedError

    def _pick(self, pred: Any) -> Any:
        if self.field is None or not isinstance(pred, dict):
            return pred
        if self.field not in pred:
            raise KeyError(f"the prediction has no field {self.field!r} (its fields: {', '.join(sorted(pred))})")
        return pred[self.field]

    def rows_of(self, s: Sample, pred: Any) -> list[dict[str, Any]]:
        if s.target is None:
            return [{"sample_id": s.id, "metric": m, "value": None, "status": "unscored",
                     "reason": "no target for this sample"} for m in self.metrics]
        reason = f"failed: {pred}" if isinstance(pred, Failure) else "no prediction" if pred is None else None
        if reason is None:
            try:
                got = self.values(self._pick(pred), s.target)
                return [{"sample_id": s.id, "metric": m, "value": got[m]} for m in self.metrics]
            except KeyError as exc:
                reason = str(exc.args[0])
        return [{"sample_id": s.id, "metric": m, "value": 0.0, "status": "failed", "reason": reason}
                for m in self.metrics]

    def score(self, samples: list[Sample], predictions: dict[str, Any], ctx: ScoreContext | None = None) -> Scored:
        return summarized(rows_frame([r for s in samples for r in self.rows_of(s, predictions.get(s.id))]))


def summarized(frame: Any, items: Any = None) -> Scored:
    """Scored with each metric's mean over its rows that count (ok and failed)."""
    import polars as pl

    counted = frame.filter(pl.col("status") != "unscored")
    summary = {m: counted.filter(pl.col("metric") == m)["value"].mean() for m in frame["metric"].unique(
        maintain_order=True)}
    return Scored(frame, summary, items=items)


class ExactMatch(PerSample):
    metrics = ("exact_match",)

    def __init__(self, field: str | None = None, normalize: bool = True) -> None:
        super().__init__(field)
        self.norm = normalize

    def values(self, pred: Any, target: Any) -> dict[str, float]:
        same = normalize(pred) == normalize(target) if self.norm else str(pred) == str(target)
        return {"exact_match": float(same)}


class SetMatch(PerSample):
    metrics = ("jaccard", "exact_set")

    def values(self, pred: Any, target: Any) -> dict[str, float]:
        p, g = as_set(pred), as_set(target)
        union = p | g
        return {"jaccard": len(p & g) / len(union) if union else 1.0, "exact_set": float(p == g)}


class TokenF1(PerSample):
    metrics = ("f1",)

    def values(self, pred: Any, target: Any) -> dict[str, float]:
        p, g = squad_tokens(pred), squad_tokens(target)
        if not p or not g:
            return {"f1": float(p == g)}
        common = sum((Counter(p) & Counter(g)).values())
        if common == 0:
            return {"f1": 0.0}
        precision, recall = common / len(p), common / len(g)
        return {"f1": 2 * precision * recall / (precision + recall)}


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    correct: bool
    reason: str = Field(max_length=200)


JUDGE_PROMPT = ("Question: {question}\nReference answer: {target}\nAnswer to grade: {prediction}\n"
                "Is the answer to grade correct, given the reference? Answer as JSON.")


class LLMJudge(PerSample):
    metrics = ("judge",)
    answer_models = (Verdict,)

    def __init__(self, field: str | None = None, prompt: str = JUDGE_PROMPT, *, model: Any = None,
                 system: str | None = "You grade answers against a reference answer.") -> None:
        super().__init__(field)
        self.prompt, self.model, self.system = prompt, model, system
        self.prompt_text = f"{system or ''}\n{prompt}"

    def values(self, pred: Any, target: Any) -> dict[str, float]:
        return {"judge": 0.0}  # a placeholder: the rows of the samples to ask are replaced by the verdicts

    def _llm(self, ctx: ScoreContext | None) -> tuple[Any, bool]:
        """The judge, and whether it was made here (and so is closed here)."""
        spec = self.model or (ctx.judge if ctx is not None else None)  # an LLMSpec is parsed where it was given
        if spec is not None and not isinstance(spec, LLMSpec):
            return spec, False  # an LLM handed in (a test's stand-in, or a model made by the caller, who closes it)
        if spec is None:
            from emocaustics.core.errors import UsageError

            raise UsageError("the llm_judge scorer needs a judge model: set scoring.judge in the job (or --judge "
                             "under eval)")
        from emocaustics.models.cacheplace import choose
        from emocaustics.models.factory import make_llm

        return make_llm(spec, cache_dir=choose("on")), True  # the shared response cache

    def score(self, samples: list[Sample], predictions: dict[str, Any], ctx: ScoreContext | None = None) -> Scored:
        from emocaustics.core import aio

        base = {s.id: self.rows_of(s, predictions.get(s.id)) for s in samples}  # failed / unscored as the others
        asked = [s for s in samples if base[s.id][0].get("status", "ok") == "ok"]
        verdicts = aio.run(self._ask(*self._llm(ctx), asked, predictions)) if asked else {}
        rows, items = [], []
        for s in samples:
            got = verdicts.get(s.id)
            if isinstance(got, Verdict):
                rows.append({"sample_id": s.id, "metric": "judge", "value": float(got.correct)})
                items.append({"sample_id": s.id, "correct": got.correct, "reason": got.reason})
            elif isinstance(got, SolveFailed):
                rows.append({"sample_id": s.id, "metric": "judge", "value": 0.0, "status": "failed",
                             "reason": f"judge: {got.reason}"})
            else:
                rows.extend(base[s.id])
        import polars as pl

        return summarized(rows_frame(rows), pl.DataFrame(items) if items else None)

    async def _ask(self, llm: Any, owned: bool, samples: list[Sample], predictions: dict[str, Any]) -> dict[str, Any]:
        import asyncio

        from emocaustics.solve.ask import Ask, Asker
        from emocaustics.solve.schema import schema_of

        schema = schema_of(Verdict)

        async def one(s: Sample) -> Any:
            inp = s.input.get("question", s.input) if isinstance(s.input, dict) else s.input
            user = self.prompt.format_map({"question": _text(inp), "target": _text(s.target),
                                           "prediction": _text(self._pick(predictions[s.id]))})
            try:
                return await Asker(llm, system=self.system, affinity=s.id).ask(Ask("judge", user, Verdict, schema))
            except SolveFailed as exc:
                return exc

        try:
            got = await asyncio.gather(*(one(s) for s in samples))
        finally:
            if owned:  # a judge made here holds an HTTP session (and a cache connection) bound to this loop
                await llm.aclose()
        return {s.id: g for s, g in zip(samples, got)}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
