"""`ecpe`: SemEval-2024 Task 3 (emotion-cause pairs in conversations, ECF 2.0) on the cluster's task interface.

Methods: `direct` and `utterance` (LLM extraction, solver.py) and the calibration rows `oracle` and `baseline`
(predictors.py). Scoring is the official one (official.py) on the loaded conversations:

- long rows per conversation: `s1_strict_tp/fp/fn`, `s1_prop_overlap/pred_tokens/gold_tokens` (summed over the
  conversations they give back the corpus micro figures), `s1_strict_f1`, `s1_prop_f1`, `s2_tp/fp/fn`, `s2_f1`
  (per-conversation micro F1, for intervals and paired tests), and for LLM methods `span_misses`, `unparseable`;
  a failed conversation is scored as predicting nothing, its rows marked `failed` with the reason;
- `Scored.summary`: the primary metric first, then the official keys of each scored subtask in scores.txt order,
  computed on the whole set (not averaged over conversations);
- `Scored.tables`: the per-emotion tables of each subtask and the problems found (data defects, warnings);
- `Scored.items`: each pair's outcome (correct / wrong / missed; strict for subtask 1).
`finalize` writes the official `Subtask_N_pred.json` files and `submission.zip` (checked by our validator first).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any, Literal

import polars as pl
from pydantic import Field, field_validator

from emocaustics.core.errors import DataError
from emocaustics.core.task import (DatasetOptions, Failure, Loaded, Options, Sample, ScoreContext, Scored, Task,
                                   rows_frame)
from emocaustics.tasks.ecpe import data, official, predictors, prompts
from emocaustics.tasks.ecpe.scoring import SubtaskResult, score_records
from emocaustics.tasks.ecpe.validate import PAIRS_KEY, check_prediction


class EcpeOptions(Options):
    method: str = "direct"  # direct | utterance | oracle | baseline
    subtask: Literal[1, 2, "both"] = "both"  # which official files are scored and written
    retries: int = Field(2, ge=0, le=10)  # re-asks of an unreadable answer (new seed each)
    max_pairs: int = Field(40, ge=1, le=200)  # direct: most pairs one answer may list (the test set has <= 27)
    baseline_emotion: Literal["anger", "disgust", "fear", "joy", "sadness", "surprise"] = "joy"

    @field_validator("subtask", mode="before")
    @classmethod
    def _subtask(cls, v: Any) -> Any:
        return int(v) if isinstance(v, str) and v.strip() in ("1", "2") else v

    @property
    def subtasks(self) -> tuple[int, ...]:
        return (1, 2) if self.subtask == "both" else (int(self.subtask),)


class EcpeDataset(DatasetOptions):
    split: Literal["test"] = "test"  # the organisers published gold for the test set only
    ids: list[int] | None = None  # only these conversation_IDs (file order)
    max_samples: int | None = Field(None, ge=1)  # the first N conversations


def _gold_records(samples: list[Sample], subtask: int) -> list[dict[str, Any]]:
    out = []
    for s in samples:
        emotions = (s.target or {}).get("emotions") or [None] * len(s.input["utterances"])
        out.append({"conversation_ID": s.input["conversation_ID"],
                    "conversation": [{**u, "emotion": e} for u, e in zip(s.input["utterances"], emotions)],
                    PAIRS_KEY: (s.target or {}).get(f"subtask{subtask}") or []})
    return out


def _pairs(pred: Any, subtask: int) -> list[Any] | None:
    if isinstance(pred, dict) and isinstance(pred.get(f"subtask{subtask}"), list):
        return pred[f"subtask{subtask}"]
    return None


def _submission(samples: list[Sample], predictions: dict[str, Any], subtask: int) -> list[dict[str, Any]]:
    """Official prediction records (a failed or missing conversation predicts no pair)."""
    return [{"conversation_ID": s.input["conversation_ID"], "conversation": s.input["utterances"],
             PAIRS_KEY: _pairs(predictions.get(s.id), subtask) or []} for s in samples]


class EcpeTask(Task):
    name = "ecpe"
    description = "SemEval-2024 Task 3: emotion-cause pairs in conversations (ECF 2.0), official strict/proportional"
    Options = EcpeOptions
    Dataset = EcpeDataset
    solver_methods = ("direct", "utterance")
    calibration_methods = ("oracle", "baseline")
    primary_metric = official.PRIMARY[1]
    prompts_version = prompts.PROMPTS_VERSION

    def load(self, dataset: DatasetOptions, options: Options) -> Loaded:
        assert isinstance(dataset, EcpeDataset) and isinstance(options, EcpeOptions)
        return data.load(data.locate(dataset.data), options.subtasks, dataset.ids, dataset.max_samples)

    async def solve(self, llm: Any, sample: Sample, options: Options) -> Any:
        from emocaustics.tasks.ecpe.solver import solve

        assert isinstance(options, EcpeOptions)
        return await solve(llm, sample, options.method, retries=options.retries, max_pairs=options.max_pairs)

    def weight(self, sample: Sample, options: Options) -> float:
        # expected answers: one per conversation (direct) or one per utterance
        return float(len(sample.input["utterances"])) if options.method == "utterance" else 1.0

    def affinity(self, sample: Sample, options: Options) -> str:
        return sample.id  # the utterance calls of one conversation share its history as a prompt prefix

    def predict(self, method: str, samples: list[Sample], options: Options) -> dict[str, Any]:
        assert isinstance(options, EcpeOptions)
        return predictors.predict(method, samples, options.subtasks, options.baseline_emotion)

    def score(self, samples: list[Sample], predictions: dict[str, Any], options: Options,
              ctx: ScoreContext) -> Scored:
        assert isinstance(options, EcpeOptions)
        results: dict[int, SubtaskResult] = {}
        rows: list[dict[str, Any]] = []
        by_cid = {s.input["conversation_ID"]: s for s in samples}
        for st in options.subtasks:
            res = score_records(st, _gold_records(samples, st), _submission(samples, predictions, st),
                                gold_file=f"gold (subtask {st})", pred_file=f"predictions (subtask {st})")
            results[st] = res
            for cid, counts in res.conversations.items():
                sample = by_cid[cid]
                pred = predictions.get(sample.id)
                status, reason = "ok", None
                if isinstance(pred, Failure):
                    status, reason = "failed", str(pred)
                elif pred is None:
                    status, reason = "failed", "no prediction"
                elif _pairs(pred, st) is None:
                    status, reason = "failed", f"the prediction has no subtask{st} pair list"
                rows.extend({"sample_id": sample.id, "metric": k, "value": v, "status": status, "reason": reason}
                            for k, v in counts.metric_values(st).items())
        for s in samples:  # what the LLM solver counted on the way
            pred = predictions.get(s.id)
            if isinstance(pred, dict):
                rows.extend({"sample_id": s.id, "metric": k, "value": float(pred[k])}
                            for k in ("span_misses", "unparseable") if isinstance(pred.get(k), int | float))
        summary: dict[str, Any] = {}
        primary = official.PRIMARY[options.subtasks[0]]
        summary[primary] = results[options.subtasks[0]].scores[primary]
        for res in results.values():
            summary.update(res.scores)
        tables = {f"ecpe_subtask{st}_per_emotion": r.table for st, r in results.items()}
        tables["ecpe_problems"] = pl.DataFrame(
            [{"subtask": st, **{k: (None if v is None else str(v)) for k, v in p.to_json().items()}}
             for st, r in results.items() for p in r.problems],
            schema={"subtask": pl.Int64, **{k: pl.Utf8 for k in ("kind", "severity", "file", "conversation", "pair",
                                                                  "value", "message")}})
        return Scored(rows_frame(rows), summary, tables, _items(results))

    def finalize(self, out: Path, samples: list[Sample], predictions: dict[str, Any], options: Options) -> list[Path]:
        assert isinstance(options, EcpeOptions)
        out.mkdir(parents=True, exist_ok=True)
        written: list[Path] = []
        for st in options.subtasks:
            records = _submission(samples, predictions, st)
            path = out / f"Subtask_{st}_pred.json"
            checked = check_prediction(records, st, str(path))
            if checked.errors:
                raise DataError(f"our own submission does not pass the validator: {checked.errors[0]}", file=str(path))
            path.write_text(json.dumps(records, ensure_ascii=False, indent=1), encoding="utf-8")
            written.append(path)
        archive = out / "submission.zip"
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
            for path in written:  # at the archive's root, where CodaLab looks for them
                zf.write(path, path.name)
        return [*written, archive]


def _items(results: dict[int, SubtaskResult]) -> pl.DataFrame:
    rows = []
    for st, res in results.items():
        for cid, pair, outcome in res.outcomes:
            span = (pair[2], pair[3]) if st == 1 else (None, None)
            rows.append({"sample_id": str(cid), "subtask": st, "emotion_utterance": pair[0],
                         "emotion": official.EMOTIONS[pair[-1]], "cause_utterance": pair[1], "start": span[0],
                         "end": span[1], "outcome": outcome})
    return pl.DataFrame(rows, schema={"sample_id": pl.Utf8, "subtask": pl.Int64, "emotion_utterance": pl.Int64,
                                      "emotion": pl.Utf8, "cause_utterance": pl.Int64, "start": pl.Int64,
                                      "end": pl.Int64, "outcome": pl.Utf8})
