"""The `--compat reference` policy of the one engine (`engine`): the published scripts' metrics, rules and
failures, for both tasks.

Predictions are scored in the JSON shape the reference reads: a prediction file read `raw` (`read_prediction_files`)
arrives as it is (`RawPrediction`); a parsed prediction (a job's, the oracle's) is turned back into the JSON we write
for it. The ground truth is our loaded dataset in its published shape (the published files hold strings throughout).
Texts are embedded once per distinct text (empty ones as " ", as the reference sends them) and each cosine is
computed as the reference computes it (float32 dot product over the product of the norms, 0 for a zero vector, no
clipping, identical texts included). Judge questions go out in batches (`judge.REFERENCE_JUDGE`).

Rows: one per dialogue with the reference's per-file metrics as `c_<name>` columns, and `score` (ours, for ranking;
the reference has no single number): the mean of the five scheme1 averages (sextuples), the mean of the state and
source_id rates (chains). A dialogue where the reference would raise is failed with the place named; the summary's
components are the reference's over-file averages of the dialogues it completes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from emocaustics.models.base import Embedder
from emocaustics.scoring.similarity import SimilarityTable
from emocaustics.tasks.longdialogue.data.schema import Dialogue, chains_to_json
from emocaustics.tasks.longdialogue.score import chains, refjson, sextuple
from emocaustics.tasks.longdialogue.score.policy import REFERENCE_CHAINS, Policy
from emocaustics.tasks.longdialogue.score.judge import (REFERENCE_JUDGE, Judge, ReferenceCrash,
                                                        answer_value_or_none)
from emocaustics.tasks.longdialogue.score.tables import ScoreResult, build_result, dialogue_row


@dataclass(frozen=True, slots=True)
class RawPrediction:
    """A prediction file's JSON, unparsed: the reference reads it with its own rules."""

    obj: Any
    file: str


def as_reference_json(task: str, pred: Any) -> Any:
    if isinstance(pred, RawPrediction):
        return pred.obj
    if task == "sextuple":
        return [{"final_model_response": [c.to_json() for c in cands]} for cands in pred]
    return chains_to_json(pred)


def reference_cosine(a: np.ndarray, b: np.ndarray) -> float:
    a = np.asarray(a, dtype=np.float32)
    b = np.asarray(b, dtype=np.float32)
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        return 0.0
    return float(np.dot(a, b) / (na * nb))


async def reference_sims(pairs: set[tuple[str, str]], embedder: Embedder) -> dict[tuple[str, str], float]:
    texts = list(dict.fromkeys(t for p in sorted(pairs) for t in p))
    if not texts:
        return {}
    vectors = await embedder.embed(texts)
    row = dict(zip(texts, vectors))
    return {(a, b): reference_cosine(row[a], row[b]) for a, b in pairs}


def _columns(task: str) -> tuple[str, ...]:
    return sextuple.COLUMNS if task == "sextuple" else chains.COLUMNS


def _row(d: Dialogue, status: str, reason: str | None, weight: float, score: float | None,
         metrics: Mapping[str, float | None], judge_failures: int = 0, notes: int = 0) -> dict[str, Any]:
    return dialogue_row(d, status, reason, weight, score, judge_failures, notes,
                        **{f"c_{k}": v for k, v in metrics.items()})


class ReferencePolicy(Policy):
    """The published scripts' rules at each point where the modes differ (see `policy.Policy`)."""

    name = "reference"
    judge_rules = REFERENCE_JUDGE
    judge_sextuples = True
    chain_rules = REFERENCE_CHAINS

    def triage(self, task: str, dialogues: Sequence[Dialogue], predictions: Mapping[int, Any]
               ) -> tuple[list[tuple[Dialogue, Any]], list[dict[str, Any]]]:
        """Only what stops the reference before it reads a prediction; the rest is read as it reads it."""
        blank = dict.fromkeys(_columns(task))
        ok: list[tuple[Dialogue, Any]] = []
        rows: list[dict[str, Any]] = []
        for d in dialogues:
            pred = predictions.get(d.id)
            if task == "sextuple" and not d.utterances:
                rows.append(_row(d, "no_gt", "the dialogue has no utterances (empty or unreadable chat file); not "
                                 "scored", 0.0, None, blank))
            elif task == "emotion" and d.chains is None:
                rows.append(_row(d, "no_gt", "ground truth has no usable emotion chains; not scored", 0.0, None,
                                 blank))
            elif pred is None or isinstance(pred, str):
                rows.append(_row(d, "failed", pred or "missing prediction", 0.0, 0.0, blank))
            else:
                ok.append((d, as_reference_json(task, pred)))
        return ok, rows

    def pairs(self, task: str, d: Dialogue, pred: Any) -> set[tuple[str, str]]:
        if task == "emotion":
            return refjson.needed_pairs(d.chains or {}, pred)
        file = f"output_chat_{d.id}.json"
        lines = sextuple.prediction_lines(pred, file)
        return set(sextuple.needed_pairs(sextuple.gt_records(d.utterances), lines, file))

    async def similarities(self, pairs: Iterable[tuple[str, str]], embedder: Embedder) -> SimilarityTable:
        return SimilarityTable(await reference_sims(set(pairs), embedder))

    def prefetch(self, task: str, ok: Sequence[tuple[Dialogue, Any]], table: SimilarityTable) -> set[tuple[str, str]]:
        return set()  # the chain questions depend on earlier answers; the sextuple ones on the chosen candidates

    ordered = staticmethod(list)

    def score(self, task: str, d: Dialogue, pred: Any, sim: Any, answers: Mapping[Any, Any] | None
              ) -> tuple[Any, Iterable[Any]]:
        if task == "emotion":  # the one chain walk, under the reference's rules
            return super().score(task, d, pred, sim, answers)
        # the candidates are chosen by cosine alone; the judge is then asked about each chosen one's four fields
        file, gt = f"output_chat_{d.id}.json", sextuple.gt_records(d.utterances)
        lines = sextuple.score_file(gt, pred, sim, None, file)
        missing = [q for q in sextuple.judge_questions(lines) if q not in answers] if answers is not None else []
        if answers is None or missing:
            return (lines, pred), missing
        return (sextuple.score_file(gt, pred, sim, answers, file), pred), set()

    def rows(self, task: str, d: Dialogue, o: Any, answers: Mapping[Any, Any] | None, notes: int
             ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        if task == "emotion":
            pct: dict[str, float | None] = dict(o.percentages())
            if answers is None:
                pct.update(dict.fromkeys(chains.JUDGE_COLUMNS))
            score = (pct["total_state_score_percentage"] + pct["total_source_id_score_percentage"]) / 200  # type: ignore[operator]
            holders = float(sum(1 for evs in (d.chains or {}).values() if evs))
            return chains.item_rows(d.id, o.items, self.rules), _row(d, "ok", None, holders, score, pct, notes=notes)
        lines, pred = o
        metrics = sextuple.file_means(lines, judged=answers is not None)
        bad = 0
        if answers is not None:
            bad = sum(answer_value_or_none(answers[q]) is None for q in sextuple.judge_questions(lines))
        n_pred, n_gt = (len(pred) if isinstance(pred, list) else 0), len(d.utterances)
        reason = (f"prediction has {n_pred} lines, ground truth {n_gt}: the first {len(lines)} are scored, "
                  "as the reference does" if n_pred != n_gt else None)
        first5 = [metrics[f"scheme1_{m}"] for m in sextuple.METRICS]
        return [_sextuple_item(d, ln) for ln in lines], _row(d, "ok", reason, float(len(lines)),
                                                               float(np.mean(first5)), metrics, bad, notes)

    def crashed(self, task: str, d: Dialogue, exc: ReferenceCrash, notes: int) -> dict[str, Any]:
        return _row(d, "failed", f"the reference raises: {exc}", 0.0, 0.0, dict.fromkeys(_columns(task)),
                    notes=notes)

    def info(self, emb: Embedder, judge: Judge | None, table: SimilarityTable, t_embed: float) -> dict[str, Any]:
        return {"compat": "reference", "embedder": emb.name, "judge": judge.name if judge is not None else "none",
                "judge_asked": judge.stats.asked if judge is not None else 0}

    def result(self, task: str, items: list[dict[str, Any]], rows: list[dict[str, Any]],
               info: dict[str, Any]) -> ScoreResult:
        return build_result(task, items, rows, info, _columns(task), reference_components)


def _sextuple_item(d: Dialogue, ln: sextuple.RefLine) -> dict[str, Any]:
    out: dict[str, Any] = {"dialogue": d.id, "utterance": ln.index, "n_candidates": ln.n_candidates,
                           "chosen": ln.chosen}
    for f in sextuple.FIELDS:
        out[f"gt_{f}"] = refjson.json_text(ln.gt[sextuple.GT_KEYS[f]])
        out[f"pred_{f}"] = refjson.json_text(ln.pred[f])
    for f in sextuple.EMBEDDED:
        out[f"{f}_similarity"] = ln.sims[f]
        out[f"judge_{f}"] = ln.judged[f] if ln.judged is not None else None
    out["sentiment_correct"] = ln.sentiment_correct
    return out


def reference_components(task: str, dialogues: pl.DataFrame) -> dict[str, float | None]:
    """The reference's over-file averages, over the dialogues it completes: numpy's mean of the file means
    (sextuples), the mean of the file percentages rounded to 2 places (chains)."""
    done = dialogues.filter(pl.col("status") == "ok")
    out: dict[str, float | None] = {}
    for c in _columns(task):
        vals = [v for v in done[f"c_{c}"].to_list() if v is not None]
        if not vals:
            out[c] = None if done.height else 0.0
        elif task == "sextuple":
            out[c] = float(np.mean(vals))
        else:
            out[c] = round(sum(vals) / len(vals), 2)
    return out
