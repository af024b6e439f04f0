"""The `--compat reference` scoring path: the published scripts' metrics, rules and failures, for both tasks.

Predictions are scored in the JSON shape the reference reads: a prediction file read with `read_raw_predictions`
arrives as it is (`RawPrediction`); a parsed prediction (a job's, the oracle's) is turned back into the JSON we write
for it. The ground truth is our loaded dataset in its published shape (the published files hold strings throughout).
Texts are embedded once per distinct text (empty ones as " ", as the reference sends them) and each cosine is
computed as the reference computes it (float32 dot product over the product of the norms, 0 for a zero vector, no
clipping, identical texts included). Judge questions go out in batches (`refjudge.ReferenceJudge`).

Rows: one per dialogue with the reference's per-file metrics as `c_<name>` columns, and `score` (ours, for ranking;
the reference has no single number): the mean of the five scheme1 averages (sextuples), the mean of the state and
source_id rates (chains). A dialogue where the reference would raise is failed with the place named; the summary's
components are the reference's over-file averages of the dialogues it completes.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import polars as pl

from emocaustics.models.base import LLM, Embedder
from emocaustics.score.similarity import SimilarityTable
from emocaustics.tasks.longdialogue.data.schema import Dialogue, chains_to_json
from emocaustics.tasks.longdialogue.score import refchains, refsextuple
from emocaustics.tasks.longdialogue.score.refjudge import Answer, ReferenceCrash, ReferenceJudge, answer_value
from emocaustics.tasks.longdialogue.score.tables import ScoreResult, dialogue_row, dialogues_frame, summarise

MAX_JUDGE_ROUNDS = 64  # chain questions depend on earlier answers; real data needs 2


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


def _row(d: Dialogue, status: str, reason: str | None, weight: float, score: float | None,
         metrics: Mapping[str, float | None], judge_failures: int = 0, notes: int = 0) -> dict[str, Any]:
    return dialogue_row(d, status, reason, weight, score, judge_failures, notes,
                        **{f"c_{k}": v for k, v in metrics.items()})


async def ascore_reference(task: str, dialogues: Sequence[Dialogue], predictions: Mapping[int, Any], *,
                           embedder: Embedder, llm: LLM | None, notes: Mapping[int, int] | None = None,
                           extra: Mapping[str, Any] | None = None) -> ScoreResult:
    t0 = time.perf_counter()
    notes = notes or {}
    judge = ReferenceJudge(llm) if llm is not None else None
    columns = refsextuple.COLUMNS if task == "sextuple" else refchains.COLUMNS
    blank = dict.fromkeys(columns)
    rows: list[dict[str, Any]] = []
    ok: list[tuple[Dialogue, Any]] = []
    for d in dialogues:
        pred = predictions.get(d.id)
        if task == "sextuple" and not d.utterances:
            rows.append(_row(d, "no_gt", "the dialogue has no utterances (empty or unreadable chat file); not scored",
                             0.0, None, blank))
        elif task == "emotion" and d.chains is None:
            rows.append(_row(d, "no_gt", "ground truth has no usable emotion chains; not scored", 0.0, None, blank))
        elif pred is None or isinstance(pred, str):
            rows.append(_row(d, "failed", pred or "missing prediction", 0.0, 0.0, blank))
        else:
            ok.append((d, as_reference_json(task, pred)))
    scorer = _score_sextuples if task == "sextuple" else _score_chains
    items, scored = await scorer(ok, embedder, judge, notes)
    rows += scored
    info = {"compat": "reference", "embedder": embedder.name, "judge": llm.name if llm is not None else "none",
            "judge_asked": judge.asked if judge is not None else 0, **(extra or {}),
            "seconds": round(time.perf_counter() - t0, 3), "path": "in-process"}
    return build_reference_result(task, items, rows, info)


async def _score_sextuples(ok: Sequence[tuple[Dialogue, Any]], embedder: Embedder, judge: ReferenceJudge | None,
                           notes: Mapping[int, int]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rows: list[dict[str, Any]] = []
    ready: list[tuple[Dialogue, list[dict[str, str]], Any, str]] = []
    pairs: set[tuple[str, str]] = set()
    for d, pred in ok:
        file = f"output_chat_{d.id}.json"
        gt = refsextuple.gt_records(d.utterances)
        try:
            pairs.update(refsextuple.needed_pairs(gt, refsextuple.prediction_lines(pred, file), file))
        except ReferenceCrash as exc:
            rows.append(_row(d, "failed", f"the reference raises: {exc}", 0.0, 0.0,
                             dict.fromkeys(refsextuple.COLUMNS), notes=notes.get(d.id, 0)))
            continue
        ready.append((d, gt, pred, file))
    sim = SimilarityTable(await reference_sims(pairs, embedder)).sim
    chosen = {d.id: refsextuple.score_file(gt, pred, sim, None, file) for d, gt, pred, file in ready}
    answers: dict[tuple[str, str], Answer] | None = None
    if judge is not None:
        questions = refsextuple.judge_questions([ln for lines in chosen.values() for ln in lines])
        answers = await judge.answers("sextuple", questions)
    items: list[dict[str, Any]] = []
    for d, gt, pred, file in ready:
        lines = chosen[d.id] if answers is None else refsextuple.score_file(gt, pred, sim, answers, file)
        metrics = refsextuple.file_means(lines, judged=answers is not None)
        bad = 0
        if answers is not None:
            bad = sum(_unreadable(answers[q]) for q in refsextuple.judge_questions(lines))
        n_pred = len(pred) if isinstance(pred, list) else 0
        reason = (f"prediction has {n_pred} lines, ground truth {len(gt)}: the first {len(lines)} are scored, "
                  "as the reference does" if n_pred != len(gt) else None)
        first5 = [metrics[f"scheme1_{m}"] for m in refsextuple.METRICS]
        rows.append(_row(d, "ok", reason, float(len(lines)), float(np.mean(first5)), metrics, bad,
                         notes.get(d.id, 0)))
        items += [_sextuple_item(d, ln) for ln in lines]
    return items, rows


def _unreadable(a: Answer) -> bool:
    try:
        answer_value(a, "")
    except ReferenceCrash:
        return True
    return False


def _sextuple_item(d: Dialogue, ln: refsextuple.RefLine) -> dict[str, Any]:
    out: dict[str, Any] = {"dialogue": d.id, "utterance": ln.index, "n_candidates": ln.n_candidates,
                           "chosen": ln.chosen}
    for f in refsextuple.FIELDS:
        out[f"gt_{f}"] = refchains.json_text(ln.gt[refsextuple.GT_KEYS[f]])
        out[f"pred_{f}"] = refchains.json_text(ln.pred[f])
    for f in refsextuple.EMBEDDED:
        out[f"{f}_similarity"] = ln.sims[f]
        out[f"judge_{f}"] = ln.judged[f] if ln.judged is not None else None
    out["sentiment_correct"] = ln.sentiment_correct
    return out


async def _score_chains(ok: Sequence[tuple[Dialogue, Any]], embedder: Embedder, judge: ReferenceJudge | None,
                        notes: Mapping[int, int]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    pairs: set[tuple[str, str]] = set()
    for d, pred in ok:
        pairs |= refchains.needed_pairs(d.chains or {}, pred)
    sim = SimilarityTable(await reference_sims(pairs, embedder)).sim
    answers: dict[tuple[str, str], Answer] | None = {} if judge is not None else None
    done: dict[int, refchains.RefChainOutcome | ReferenceCrash] = {}
    for _ in range(MAX_JUDGE_ROUNDS):
        missing: set[tuple[str, str]] = set()
        for d, pred in ok:
            if d.id in done:
                continue
            try:
                o = refchains.score_dialogue(d.chains or {}, pred, sim, answers)
            except ReferenceCrash as exc:
                done[d.id] = exc
                continue
            if o.missing:
                missing |= o.missing
            else:
                done[d.id] = o
        if not missing:
            break
        assert judge is not None and answers is not None  # without a judge nothing is ever missing
        answers.update(await judge.answers("emotion", missing))
    else:
        raise RuntimeError(f"judge answers still missing after {MAX_JUDGE_ROUNDS} rounds")
    items: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    for d, _ in ok:
        res = done[d.id]
        if isinstance(res, ReferenceCrash):
            rows.append(_row(d, "failed", f"the reference raises: {res}", 0.0, 0.0, dict.fromkeys(refchains.COLUMNS),
                             notes=notes.get(d.id, 0)))
            continue
        pct: dict[str, float | None] = dict(res.percentages())
        if judge is None:
            pct.update(dict.fromkeys(refchains.JUDGE_COLUMNS))
        score = (pct["total_state_score_percentage"] + pct["total_source_id_score_percentage"]) / 200  # type: ignore[operator]
        holders = float(sum(1 for evs in (d.chains or {}).values() if evs))
        rows.append(_row(d, "ok", None, holders, score, pct, notes=notes.get(d.id, 0)))
        items += [{"dialogue": d.id, **asdict(it)} for it in res.items]
    return items, rows


def reference_components(task: str, dialogues: pl.DataFrame) -> dict[str, float | None]:
    """The reference's over-file averages, over the dialogues it completes: numpy's mean of the file means
    (sextuples), the mean of the file percentages rounded to 2 places (chains)."""
    done = dialogues.filter(pl.col("status") == "ok")
    columns = refsextuple.COLUMNS if task == "sextuple" else refchains.COLUMNS
    out: dict[str, float | None] = {}
    for c in columns:
        vals = [v for v in done[f"c_{c}"].to_list() if v is not None]
        if not vals:
            out[c] = None if done.height else 0.0
        elif task == "sextuple":
            out[c] = float(np.mean(vals))
        else:
            out[c] = round(sum(vals) / len(vals), 2)
    return out


def build_reference_result(task: str, items: list[dict[str, Any]], rows: list[dict[str, Any]],
                           info: dict[str, Any]) -> ScoreResult:
    columns = refsextuple.COLUMNS if task == "sextuple" else refchains.COLUMNS
    dia = dialogues_frame(rows, [f"c_{c}" for c in columns])
    items_df = pl.DataFrame(items, infer_schema_length=None) if items else pl.DataFrame()
    weighted = dia.filter((pl.col("status") != "no_gt") & pl.col("score").is_not_null() & (pl.col("weight") > 0))
    micro = (float((weighted["score"] * weighted["weight"]).sum() / weighted["weight"].sum())
             if weighted.height else None)
    return ScoreResult(items_df, dia, summarise(task, dia, reference_components(task, dia), micro, info))
