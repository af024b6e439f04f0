"""`aer`: SemEval-2026 Task 12 (abductive event reasoning) on the cluster's task interface.

Methods: `llm` (prompt x context x self-consistency, see prompts.py, context.py, solver.py) and the calibration rows
`oracle`, `random`, `all-options`. A prediction is `{"answer": [letters], ...}`; failures are scored 0 and listed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar, Literal

import polars as pl
from pydantic import Field, model_validator

from emocaustics.core.errors import UsageError
from emocaustics.scoring.reducers import majority, reduce_votes
from emocaustics.core.task import (DatasetOptions, Failure, Loaded, Methods, Options, Placement, Sample, ScoreContext,
                                   Scored, SolveFailed, Task, rows_frame)
from emocaustics.tasks.aer import predictors, prompts, scoring
from emocaustics.tasks.aer.context import cut_summary, prepare_samples
from emocaustics.tasks.aer.data import load_split, pick_shots, shots_split, to_sample
from emocaustics.tasks.aer.fetch import SOURCE
from emocaustics.tasks.parts import lazy

USED_BY = {"shots": ("prompt", "few-shot"), "shots_from": ("prompt", "few-shot"), "top_k": ("context", "retrieve"),
           "chunk_tokens": ("context", "retrieve")}


class AerOptions(Options):
    method: str = "llm"
    prompt: Literal[prompts.PROMPT_MODES] = "zero-shot"
    # retrieve by default: `full` keeps the topic's documents in file order up to the budget, which for most topics is
    # the first 2 of ~15 documents, whatever the question (issue 41); the passages closest to the question serve it
    # better. A config that names its context keeps it.
    context: Literal["none", "full", "retrieve"] = "retrieve"
    shots: int = Field(3, ge=1, le=16)  # few-shot: examples per prompt
    shots_from: Literal["sample", "dev", "test", "train"] | None = None  # default: dev (sample when the run is on dev)
    top_k: int = Field(8, ge=1, le=64)  # retrieve: passages per question
    chunk_tokens: int = Field(160, ge=16, le=4096)  # retrieve: approximate tokens per chunk
    samples: int = Field(1, ge=1, le=64)  # self-consistency: answers per question, voted per option
    temperature: float = Field(0.7, gt=0.0, le=2.0)  # sampling temperature when samples > 1 (n = 1 is greedy)
    seed: int = 0
    max_context_tokens: int = Field(8192, ge=256)  # the model's context window the prompt must fit
    chars_per_token: float = Field(4.0, gt=0.0, le=16.0)  # the token estimate (see context.py); ~1 for `smoke`
    # epochs (scoring/reducers.py): `mode` votes the epochs' answers per option, as self-consistency does
    reducers: ClassVar[dict[str, Any]] = {"mode": reduce_votes, "mean": None, "max": None, "pass@k": None}

    @model_validator(mode="after")
    def _relevant(self) -> "AerOptions":
        default = {key: field.default for key, field in type(self).model_fields.items()}
        for key, (mode, value) in USED_BY.items():
            if getattr(self, key) != default[key] and getattr(self, mode) != value:
                raise ValueError(f"option {key} applies to {mode}: {value} only (this run has {mode}: "
                                 f"{getattr(self, mode)})")
        if self.samples == 1 and self.temperature != default["temperature"]:
            raise ValueError("temperature applies to self-consistency only (samples > 1); one sample is greedy")
        return self


class AerDataset(DatasetOptions):
    split: Literal["sample", "dev", "test", "train"] = "sample"
    ids: list[str] | None = None  # only these questions (in this order)
    max_samples: int | None = Field(None, ge=1)  # the first N questions (file order), like the baseline's flag


def prediction_letters(pred: Any) -> tuple[str, ...] | None:
    """The letters of a prediction ({"answer": [...]}, a list, "A,C"), or None for a failure / nothing."""
    if pred is None or isinstance(pred, Failure):
        return None
    if isinstance(pred, dict):
        pred = pred.get("answer")
    if isinstance(pred, str):
        return scoring.parse_letters(pred)
    if isinstance(pred, (list, tuple)):
        return tuple(sorted({str(x) for x in pred}))
    return None


class AerTask(Task):
    name = "aer"
    description = "SemEval-2026 Task 12: pick the direct cause(s) of an event among A-D, given the topic's documents"
    Options = AerOptions
    Dataset = AerDataset
    methods = Methods(solver=("llm",), calibration=predictors.PREDICTORS)
    primary_metric = "score"
    prompts_version = prompts.PROMPTS_VERSION
    submission_files = ("submission.jsonl", "submission.zip")  # written by finalize (core.submission)
    data_sources = (SOURCE,)
    # the per-config column of the summary that says what the questions were asked with (`report.columns`)
    option_column_docs: ClassVar[dict[str, str]] = {
        "context_kept": "what the questions were asked with (context mode): documents with any text in the prompt of "
                        "the topic's documents, approximate tokens (retrieve: passages), means per question"}

    # -- data ------------------------------------------------------------------------------------------------------
    def context_free(self, options: AerOptions) -> bool:
        return options.context == "none" or options.method not in self.methods.solver

    def load(self, dataset: AerDataset, options: AerOptions) -> Loaded:
        data = load_split(dataset.data, dataset.split)
        defects = data.check(require_documents=not self.context_free(options))
        samples = [to_sample(q, data) for q in data.questions]
        for s in samples:  # finalize says when a submission covers fewer (ids, max_samples, a --limit run)
            s.meta["set_size"] = len(samples)
        if dataset.ids is not None:
            by_id = {s.id: s for s in samples}
            unknown = [i for i in dataset.ids if i not in by_id]
            if unknown:
                raise UsageError(f"split {dataset.split}: no question(s) {', '.join(unknown[:10])}")
            samples = [by_id[i] for i in dataset.ids]
        if dataset.max_samples is not None:
            samples = samples[:dataset.max_samples]
        if options.method in self.methods.solver and options.prompt == "few-shot":
            shots = load_split(data.root, shots_split(dataset.split, options.shots_from))
            if shots.split == dataset.split:
                raise UsageError(f"few-shot examples must come from another split than {dataset.split!r}")
            shots.check(require_documents=False)
            drawn = {t: pick_shots(shots, t, options.shots, options.seed, dataset.split)  # a draw per topic
                     for t in dict.fromkeys(s.input["topic_id"] for s in samples)}
            for s in samples:
                s.meta["shots"] = drawn[s.input["topic_id"]]
        return Loaded(samples, defects, {
            "dataset": "aer", "split": dataset.split, "root": str(data.root), "questions": len(samples),
            "topics": len({s.input["topic_id"] for s in samples}), "files": data.files, "cluster": "topic",
            "prompts_version": prompts.PROMPTS_VERSION})

    def check_ground_truth(self, loaded: Loaded, options: AerOptions) -> None:  # jobs.preflight.require_ground_truth
        """No gold answer for any selected question is an error, but for a model's run on the test split without
        reference.jsonl: its product is the Codabench submission (each question's row says unscored)."""
        split = loaded.info.get("split")
        if any(s.target is not None for s in loaded.samples) or (split == "test" and options.method in
                                                                  self.methods.solver):
            return
        where = "reference.jsonl at the data root or in test_data/" if split == "test" else "their 'golden_answer'"
        raise UsageError(f"{loaded.info.get('files', {}).get('questions', loaded.info.get('root'))}: none of the "
                         f"{len(loaded.samples)} selected question(s) of split {split} has a gold answer ({where}): "
                         "the ground truth is missing; nothing to score against")

    # -- solving ---------------------------------------------------------------------------------------------------
    def prepare(self, samples: list[Sample], options: AerOptions, ctx: ScoreContext) -> list[Sample]:
        if options.method not in self.methods.solver:
            return samples
        return prepare_samples(samples, options, ctx)

    async def solve(self, llm: Any, sample: Sample, options: AerOptions) -> dict[str, Any]:
        from emocaustics.tasks.aer.solver import ask_samples

        meta = sample.meta
        if "context_kind" not in meta:
            raise SolveFailed("prompt", "sample not prepared (Task.prepare attaches the examples and the context)")
        user = prompts.user_message(context=meta.get("context", ""), topic=meta.get("topic"),
                                    context_kind=meta["context_kind"], shots=meta.get("shots", []),
                                    target_event=sample.input["target_event"], options=sample.input["options"],
                                    prompt=options.prompt)
        messages = ({"role": "system", "content": prompts.SYSTEM}, {"role": "user", "content": user})
        attempts = await ask_samples(llm, messages, options.prompt, samples=options.samples,
                                     temperature=options.temperature, seed=options.seed,
                                     affinity=self.placement(sample, options).affinity)
        read = [a for a in attempts if a.letters is not None]
        # the self-consistency vote is the one the `mode` reducer uses over epochs (scoring/reducers.py)
        letters, votes, fallback = majority([a.letters or [] for a in read], len(read))
        pred: dict[str, Any] = {"answer": letters, "raw_output": attempts[0].raw, "parsed_from": read[0].how}
        if options.prompt == "cot":
            pred["reasoning"] = read[0].reasoning
        if options.samples > 1:
            pred.update(samples=[a.letters for a in attempts], raw_outputs=[a.raw for a in attempts], votes=votes,
                        vote_fallback=fallback, unreadable=len(attempts) - len(read),
                        unreadable_reasons=[a.reason for a in attempts if a.letters is None])
        if "trim" in meta:
            pred["trim"] = meta["trim"]
        return pred

    def placement(self, sample: Sample, options: AerOptions) -> Placement:
        """Weight ~ prompt size (estimated prompt tokens per 1,000, times the samples asked); affinity: the topic when
        questions share a long prefix (documents, or a topic's examples), else the question."""
        est = sample.meta.get("prompt_tokens_est") or 1000
        shared = options.method in self.methods.solver and (options.context == "full" or options.prompt == "few-shot")
        return Placement(affinity=f"aer:{sample.meta.get('split')}:topic-{sample.input['topic_id']}" if shared
                         else f"aer:{sample.id}", weight=max(1.0, est / 1000) * options.samples)

    def predict(self, method: str, samples: list[Sample], options: AerOptions) -> dict[str, Any]:
        return predictors.predict(method, samples, options.seed)

    # -- scoring ---------------------------------------------------------------------------------------------------
    def items(self, samples: list[Sample], predictions: dict[str, Any]) -> list[scoring.Item]:
        out = []
        for s in samples:
            if s.target is None:
                continue
            pred = predictions.get(s.id)
            letters = prediction_letters(pred)
            reason = None
            if letters is None:
                reason = f"failed: {pred}" if isinstance(pred, Failure) else "no prediction"
            out.append(scoring.Item(s.id, s.input["topic_id"], tuple(s.target), letters, reason))
        return out

    def score(self, samples: list[Sample], predictions: dict[str, Any], options: AerOptions,
              ctx: ScoreContext) -> Scored:
        items = self.items(samples, predictions)
        rows: list[dict[str, Any]] = []
        for it in items:  # the score, then one 0/1 row per outcome
            status = "ok" if it.predicted is not None else "failed"
            for name, value in (("score", it.score), *((o, float(it.outcome == o)) for o in scoring.OUTCOMES)):
                rows.append({"sample_id": it.id, "metric": name, "value": value, "status": status, "reason": it.reason})
        for s in samples:
            if s.target is None:
                rows.append({"sample_id": s.id, "metric": "score", "value": None, "status": "unscored",
                             "reason": "no gold answer for this question"})
        split = samples[0].meta.get("split") if samples else None
        summary = scoring.summarize(items, split=split)
        summary["failed"] = sum(1 for s in samples if isinstance(predictions.get(s.id), Failure))
        summary["unscored"] = sum(1 for s in samples if s.target is None)
        # each question's topic and gold size travel in scores.parquet (sample_info), for the report's by-topic table
        kept = None
        if options.method in self.methods.solver:  # the cut, from each prediction's trim record
            kept = cut_summary(options.context, [p.get("trim") if isinstance(p, dict) else None
                                                 for p in (predictions.get(s.id) for s in samples)])
        info = pl.DataFrame([{"sample_id": s.id, "aer_topic": int(s.input["topic_id"]),
                              "aer_gold_size": None if s.target is None else len(s.target), "context_kept": kept}
                             for s in samples],
                            schema={"sample_id": pl.Utf8, "aer_topic": pl.Int64, "aer_gold_size": pl.Int64,
                                    "context_kept": pl.Utf8})
        return Scored(rows_frame(rows), summary, {
            "by_gold_size": _table(summary["by_gold_size"], "gold_size"),
            "by_topic": _table(summary["by_topic"], "topic_id"),
            "sample_info": info})

    report_sections = lazy("emocaustics.tasks.aer.report", "sections")
    view_sample = lazy("emocaustics.tasks.aer.view", "view_sample")  # options marked gold / chosen, the credit

    def finalize(self, out: Path, samples: list[Sample], predictions: dict[str, Any],
                 options: AerOptions) -> list[Path]:
        """submission.jsonl (+ .zip) for every question, and results.json in the published baseline's shape."""
        out.mkdir(parents=True, exist_ok=True)
        answers = {s.id: prediction_letters(predictions.get(s.id)) for s in samples}
        sub, zpath = scoring.write_submission(out / "submission.jsonl", answers)
        items = self.items(samples, predictions)
        raw = {}
        for s in samples:
            p = predictions.get(s.id)
            if isinstance(p, dict):
                raw[s.id] = "\n---\n".join(p["raw_outputs"]) if "raw_outputs" in p else p.get("raw_output", "")
            elif isinstance(p, Failure):
                raw[s.id] = str(p)
        split, of = (samples[0].meta.get("split"), samples[0].meta.get("set_size", 0)) if samples else (None, 0)
        if len(samples) < of:  # Codabench scores every question the file lacks as 0
            print(f"{zpath}: a partial submission: it covers {len(samples)} of the {of} questions of split {split}",
                  flush=True)
        config = {"task": "aer", "split": split, **options.model_dump(mode="json"),
                  "prompts_version": prompts.PROMPTS_VERSION, "covers": {"questions": len(samples), "of": of}}
        doc = scoring.results_document(config, scoring.summarize(items, split=split), items, raw)
        res = out / "results.json"
        res.write_text(json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8")
        return [sub, zpath, res]


def _table(block: dict[str, dict[str, Any]], key: str) -> pl.DataFrame:
    return pl.DataFrame([{key: int(k) if k.isdigit() else k, **v} for k, v in block.items()])  # none: (0, 0)
