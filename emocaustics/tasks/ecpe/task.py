"""`ecpe`: SemEval-2024 Task 3 (emotion-cause pairs in conversations, ECF 2.0) on the cluster's task interface.

Methods: `direct` and `utterance` (LLM extraction, solver.py) and the calibration rows `oracle` and `baseline`
(predictors.py). Scoring is the official one (official.py) on the loaded conversations:

- long rows per conversation: `s1_strict_f1` first (the per-conversation micro F1 is the job's per-sample `score`,
  for intervals and paired tests; `unscored` where the conversation has neither a gold nor a predicted pair, as
  0 / 0 is no figure), `s1_strict_tp/fp/fn`, `s1_prop_f1`, `s1_prop_overlap/pred_tokens/gold_tokens` (summed over
  the conversations they give back the corpus micro figures), `s2_f1`, `s2_tp/fp/fn`, and for LLM methods
  `span_misses`; a failed conversation is scored as predicting nothing, its rows marked `failed` with
  the reason;
- `Scored.summary`: the primary metric first, then the official keys of each scored subtask in scores.txt order,
  computed on the whole set (not averaged over conversations);
- `Scored.tables`: the per-emotion tables of each subtask, the problems found (data defects, warnings) and
  `sample_info` (joined into the job's scores.parquet): each conversation's per-emotion counts as flat columns, from
  which the report rebuilds the official figures and the per-emotion tables exactly (report.py);
- `Scored.items`: each pair's outcome (correct / wrong / missed; strict for subtask 1).
`finalize` writes the official `Subtask_N_pred.json` files and `submission.zip` (checked by our validator first), and
beside them the official `scores.txt` and `per_emotion_subtaskN.csv` of the config.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any, ClassVar, Literal

import polars as pl
from pydantic import Field, field_validator

from emocaustics.core.errors import DataError, UsageError
from emocaustics.core.task import (DatasetOptions, Failure, Loaded, Methods, Options, Placement, Sample, ScoreContext,
                                   Scored, Task, rows_frame)
from emocaustics.tasks.ecpe import data, official, predictors, prompts
from emocaustics.tasks.ecpe.scoring import SubtaskResult, count_columns, score_records
from emocaustics.tasks.ecpe.validate import PAIRS_KEY, check_prediction
from emocaustics.tasks.parts import lazy


class EcpeOptions(Options):
    method: str = "direct"  # direct | utterance | oracle | baseline
    subtask: Literal[1, 2, "both"] = "both"  # which official files are scored and written
    retries: int = Field(2, ge=0, le=10)  # re-asks of an unreadable answer (new seed each)
    max_pairs: int = Field(40, ge=1, le=200)  # direct: most pairs one answer may list (the test set has <= 27)
    max_tokens_cap: int = Field(4096, ge=8, le=65536)  # cap of one answer's token budget (an answer cut there fails)
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
    methods = Methods(solver=("direct", "utterance"), calibration=("oracle", "baseline"))
    primary_metric = official.PRIMARY[1]
    prompts_version = prompts.PROMPTS_VERSION
    submission_files = ("submission.zip", "Subtask_1_pred.json", "Subtask_2_pred.json")  # finalize (core.submission)
    data_sources = (data.SOURCE,)
    # what the per-conversation metrics mean (the report's legend); the official corpus figures are in the ECPE
    # sections of the report, configs.json and each config's scores.txt
    metric_docs: ClassVar[dict[str, str]] = {
        "s1_strict_f1": "the conversation's own strict micro F1 over classes 1-6 (the per-sample score: its mean is "
                        "NOT the official figure; unscored when the conversation has no gold and no predicted pair)",
        "s1_strict_tp": "subtask 1: predicted pairs whose span, emotion and utterances match a gold pair exactly",
        "s1_strict_fp": "subtask 1: predicted pairs (classes 1-6) with no exact gold match",
        "s1_strict_fn": "subtask 1: gold pairs (classes 1-6) no prediction matched exactly",
        "s1_prop_f1": "the conversation's own proportional micro F1 (token overlap)",
        "s1_prop_overlap": "subtask 1: overlapping tokens of predicted and best-matching gold spans",
        "s1_prop_pred_tokens": "subtask 1: tokens of the predicted spans",
        "s1_prop_gold_tokens": "subtask 1: tokens of the gold spans (matched ones once per matching prediction)",
        "s2_f1": "the conversation's own subtask-2 (utterance-level) micro F1",
        "s2_tp": "subtask 2: predicted (emotion utterance, cause utterance, emotion) tuples in the gold",
        "s2_fp": "subtask 2: predicted tuples not in the gold",
        "s2_fn": "subtask 2: gold tuples not predicted",
        "span_misses": "LLM spans not found word for word in their cause utterance (the pair kept with the whole "
                       "utterance)",
    }

    def load(self, dataset: EcpeDataset, options: EcpeOptions) -> Loaded:
        return data.load(data.locate(dataset.data), options.subtasks, dataset.ids, dataset.max_samples)

    def check_ground_truth(self, loaded: Loaded, options: EcpeOptions) -> None:  # jobs.preflight.require_ground_truth
        """Gold files whose selected conversations hold no emotion-cause pair: every figure would be 0 or nan."""
        if any(s.target and s.target.get(f"subtask{st}") for s in loaded.samples for st in options.subtasks):
            return
        files = ", ".join(str(Path(loaded.info["root"]) / data.FILES[st]) for st in options.subtasks)
        raise UsageError(f"{files}: none of the {len(loaded.samples)} selected conversation(s) has an emotion-cause "
                         f"pair ({PAIRS_KEY!r} is empty): the ground truth is missing; nothing to score against")

    async def solve(self, llm: Any, sample: Sample, options: EcpeOptions) -> Any:
        from emocaustics.tasks.ecpe.solver import solve

        return await solve(llm, sample, options.method, retries=options.retries, max_pairs=options.max_pairs,
                           max_tokens=options.max_tokens_cap)

    def placement(self, sample: Sample, options: Options) -> Placement:
        # weight: expected answers, one per conversation (direct) or one per utterance; the utterance calls of one
        # conversation share its history as a prompt prefix (one affinity)
        return Placement(affinity=sample.id, weight=float(len(sample.input["utterances"]))
                         if options.method == "utterance" else 1.0)

    def predict(self, method: str, samples: list[Sample], options: EcpeOptions) -> dict[str, Any]:
        return predictors.predict(method, samples, options.subtasks, options.baseline_emotion)

    view_sample = lazy("emocaustics.tasks.ecpe.view", "view_sample")  # the conversation, pairs, cause spans

    def score(self, samples: list[Sample], predictions: dict[str, Any], options: EcpeOptions,
              ctx: ScoreContext) -> Scored:
        results = _score_subtasks(samples, predictions, options)
        rows: list[dict[str, Any]] = []
        info: dict[str, dict[str, Any]] = {s.id: {"sample_id": s.id, "n_utterances": len(s.input["utterances"])}
                                           for s in samples}
        by_cid = {s.input["conversation_ID"]: s for s in samples}
        for st, res in results.items():
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
                empty = counts.is_empty() and status == "ok"
                for k, v in counts.metric_values(st).items():
                    undefined = empty and k.endswith("_f1")
                    rows.append({"sample_id": sample.id, "metric": k, "value": None if undefined else v,
                                 "status": "unscored" if undefined else status,
                                 "reason": "no gold and no predicted pair: F1 is 0 / 0" if undefined else reason})
                info[sample.id].update(counts.emotion_counts(st))
        for s in samples:  # what the LLM solver counted on the way
            pred = predictions.get(s.id)
            if isinstance(pred, dict) and isinstance(pred.get("span_misses"), int | float):
                rows.append({"sample_id": s.id, "metric": "span_misses", "value": float(pred["span_misses"])})
        primary = official.PRIMARY[options.subtasks[0]]
        summary: dict[str, Any] = {primary: results[options.subtasks[0]].scores[primary]}
        for res in results.values():
            summary.update(res.scores)
        tables = {f"ecpe_subtask{st}_per_emotion": r.table for st, r in results.items()}
        columns = [c for st in results for c in count_columns(st)]
        tables["sample_info"] = pl.DataFrame(list(info.values()), schema={
            "sample_id": pl.Utf8, "n_utterances": pl.Int64, **{c: pl.Int64 for c in columns}})
        tables["ecpe_problems"] = pl.DataFrame(
            [{"subtask": st, **{k: (None if v is None else str(v)) for k, v in p.to_json().items()}}
             for st, r in results.items() for p in r.problems],
            schema={"subtask": pl.Int64, **{k: pl.Utf8 for k in ("kind", "severity", "file", "conversation", "pair",
                                                                  "value", "message")}})
        return Scored(rows_frame(rows), summary, tables, _items(results))

    report_sections = lazy("emocaustics.tasks.ecpe.report", "sections")

    def finalize(self, out: Path, samples: list[Sample], predictions: dict[str, Any],
                 options: EcpeOptions) -> list[Path]:
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
        if len(samples) < (of := samples[0].meta.get("set_size", 0) if samples else 0):  # --limit, ids, select
            print(f"{archive}: a partial submission: it covers {len(samples)} of the {of} test conversations (the "
                  "official scorer refuses it: `ecpe validate` lists the missing ones)", flush=True)
        # the config's official figures as the organisers' scorer writes them, and its per-emotion tables
        results = _score_subtasks(samples, predictions, options)
        scores_txt = out / "scores.txt"
        scores_txt.write_text("".join(official.scores_txt(r.scores) for r in results.values()), encoding="utf-8")
        tables = []
        for st, res in results.items():
            tables.append(out / f"per_emotion_subtask{st}.csv")
            res.table.write_csv(tables[-1])
        return [*written, archive, scores_txt, *tables]


def _score_subtasks(samples: list[Sample], predictions: dict[str, Any],
                    options: EcpeOptions) -> dict[int, SubtaskResult]:
    """Each asked subtask scored officially on the loaded gold (a failed or missing conversation predicts nothing)."""
    return {st: score_records(st, _gold_records(samples, st), _submission(samples, predictions, st),
                              gold_file=f"gold (subtask {st})", pred_file=f"predictions (subtask {st})")
            for st in options.subtasks}


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
