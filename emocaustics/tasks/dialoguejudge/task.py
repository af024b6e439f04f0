"""`dialogue-judge`: a model rates each conversation of a human-assessment round on the round's criteria (0-100, as
the workers did), and is scored as a worker by the ACL 2022 method (`agreement.py`).

- load: one Sample per conversation (`data.py`), clustered by assignment (the bootstrap's and the intervals' unit).
- solve: one schema-constrained call per conversation (`prompts.py`): the criteria and an optional reason.
- predict: `oracle` (the worker's own ratings), `constant` (50 on every criterion), `random` (uniform, seeded).
- score: per conversation `system_r` (primary: its share of the system-level Pearson r, so that the mean over the
  judged conversations is r itself) and `diff` (judge minus worker, mean raw rating); an unreadable or failed answer
  is unscored, never 0, and counted. Per config: QC verdict and p, system-level Pearson / Spearman overall and per
  criterion with intervals, item-level r and Krippendorff's alpha.
"""

from __future__ import annotations

import random
from typing import Any, ClassVar, Literal

import polars as pl
from pydantic import Field, ValidationError

from emocaustics.core.task import (DatasetOptions, Failure, Loaded, Methods, Options, Sample, ScoreContext,
                                   Scored, Task, rows_frame)
from emocaustics.tasks.dialoguejudge import prompts
from emocaustics.tasks.parts import lazy
from emocaustics.tasks.dialoguejudge.data import ROUNDS, SOURCE, load_round
from emocaustics.tasks.human.data import parse_metadata


class JudgeDataset(DatasetOptions):
    split: Literal[ROUNDS] = "FreeTopicRound1"  # type: ignore[valid-type]


def keep_epochs(answers: list[Any]) -> dict[str, Any]:
    """A conversation's answers over the epochs, a failed one as its reason (the eval log's reduced prediction)."""
    return {"epochs": [a if isinstance(a, dict) else {"failed": str(a)} for a in answers]}


class JudgeOptions(Options):
    method: str = "llm"
    qc_threshold: float = Field(0.05, gt=0, le=1)  # the judge passes QC iff its p-value is below this
    resamples: int = Field(1000, ge=0, le=100_000)  # bootstrap resamples of assignments (0: no intervals)
    seed: int = 0  # of the bootstrap and of the `random` method
    # epochs (scoring/reducers.py): the epochs' answers kept side by side (`keep_epochs`), scored as one judge whose
    # rating is the mean of its epochs', with the self-replication of the epochs' system z (`self_r`)
    reducers: ClassVar[dict[str, Any]] = {"mean": keep_epochs}


def ratings_of(pred: Any, names: tuple[str, ...]) -> tuple[dict[str, float] | None, str | None]:
    """(ratings, None) of a prediction the answer model accepts, else (None, why it is unscored)."""
    if isinstance(pred, Failure) or isinstance(pred, dict) and "failed" in pred:
        return None, f"failed: {pred['failed'] if isinstance(pred, dict) else pred}"
    try:
        got = prompts.answer_model(names).model_validate(pred.get("ratings") if isinstance(pred, dict) else None)
    except ValidationError as exc:
        return None, "unreadable answer: " + "; ".join(f"{e['loc']}: {e['msg']}" for e in exc.errors()[:3])
    return {n: float(getattr(got, n)) for n in names}, None


class DialogueJudgeTask(Task):
    name: ClassVar[str] = "dialogue-judge"
    description: ClassVar[str] = "an LLM judge rates a human-assessment round's conversations and is scored as a worker"
    Options: ClassVar[type[Options]] = JudgeOptions
    Dataset: ClassVar[type[DatasetOptions]] = JudgeDataset
    methods = Methods(solver=("llm",), calibration=("oracle", "constant", "random"))
    primary_metric: ClassVar[str] = "system_r"
    data_sources = (SOURCE,)  # `data fetch dialogue-judge`: the HIT_detail files of both rounds
    prompts_version: ClassVar[str] = prompts.PROMPTS_VERSION
    answer_models = (prompts.answer_model(tuple(prompts.STATEMENTS)),)
    metric_docs: ClassVar[dict[str, str]] = {
        "system_r": "the conversation's share of the system-level Pearson r between the judge's and the QC-passed "
                    "workers' overall system z-scores (mean over the judged conversations = r)",
        "diff": "the judge's mean raw rating of the conversation minus the worker's",
    }
    option_column_docs: ClassVar[dict[str, str]] = {  # per config, from `sample_info`
        "qc_pass": "the judge passed the method's quality control (qc system below the others, p < qc_threshold)",
        "qc_p": "the judge's quality-control p-value (one-sided Mann-Whitney)",
        "item_alpha": "Krippendorff's alpha (interval) between the judge's and the worker's ratings of a conversation",
        "self_r": "the judge's self-replication with --epochs N: Pearson r between two epochs' overall system z "
                  "(mean over every two epochs), beside the humans' round-to-round r = 0.969 (Ji et al. 2022)",
    }
    job_tables = lazy("emocaustics.tasks.dialoguejudge.across", "pairs_table")  # the judges compared, once per run
    report_sections = lazy("emocaustics.tasks.dialoguejudge.report", "sections")  # QC, per criterion, scatter, pairs
    view_sample = lazy("emocaustics.tasks.dialoguejudge.view", "view_sample")  # worker and judge side by side
    # `ci_low`/`ci_high` in `sample_info` are the summary's interval of score: the bootstrap of the system-level r
    # itself (assignments resampled with their judge twins), not of the shares (`report.tables.config_statistics`)

    def load(self, dataset: JudgeDataset, options: Options) -> Loaded:
        meta, samples, path = load_round(dataset.data, dataset.split)
        return Loaded(samples, [], {"dataset": "humaneval", "split": dataset.split, "file": str(path),
                                    "cluster": "assignment", "conversations": len(samples),
                                    "prompts_version": prompts.PROMPTS_VERSION})

    async def solve(self, llm: Any, sample: Sample, options: Options) -> dict[str, Any]:
        from emocaustics.solve.ask import Ask, Asker
        from emocaustics.solve.schema import schema_of

        names = tuple(sample.meta["metadata"]["score"])
        model = prompts.answer_model(names)
        asker = Asker(llm, system=prompts.system_prompt(names), affinity=sample.id)
        answer = await asker.ask(Ask(f"conversation {sample.id}", prompts.user_message(sample.input), model,
                                     schema_of(model)))
        return {"ratings": {n: getattr(answer, n) for n in names}, "reason": answer.reason}

    def predict(self, method: str, samples: list[Sample], options: JudgeOptions) -> dict[str, Any]:
        rng = random.Random(options.seed)
        fixed = {"oracle": lambda s: dict(s.target), "constant": lambda s: {k: 50 for k in s.target},
                 "random": lambda s: {k: rng.randint(0, 100) for k in s.target}}
        if method not in fixed:
            return super().predict(method, samples, options)
        return {s.id: {"ratings": fixed[method](s)} for s in samples}

    def score(self, samples: list[Sample], predictions: dict[str, Any], options: JudgeOptions,
              ctx: ScoreContext) -> Scored:
        from emocaustics.tasks.dialoguejudge.agreement import judge, replication
        from emocaustics.tasks.human.cli import PAPER_R

        meta = parse_metadata(samples[0].meta["metadata"])
        ratings, why, epochs = {}, {}, []  # epochs: each epoch's readable ratings (one for a single answer)
        for s in samples:
            pred = predictions.get(s.id)
            got = [ratings_of(p, meta.score_names) for p in (pred.get("epochs") if isinstance(pred, dict)
                                                              and "epochs" in pred else [pred])]
            epochs += [{} for _ in range(len(got) - len(epochs))]
            for e, (r, _) in enumerate(got):
                if r is not None:
                    epochs[e][s.id] = r
            read = [r for r, _ in got if r is not None]
            if read:  # the mean of the epochs' readable ratings
                ratings[s.id] = {n: sum(r[n] for r in read) / len(read) for n in meta.score_names}
            else:
                why[s.id] = got[0][1] if s.id in predictions else "no prediction"
        self_r = replication(meta, samples, epochs) if len(epochs) > 1 else None
        result = judge(meta, samples, ratings, threshold=options.qc_threshold, resamples=options.resamples,
                       seed=options.seed)
        rows: list[dict[str, Any]] = []
        for s in samples:
            if s.id in why:
                rows += [{"sample_id": s.id, "metric": m, "value": None, "status": "unscored", "reason": why[s.id]}
                         for m in ("system_r", "diff")]
                continue
            share = result.contribution[s.id] * len(ratings)
            ok = share == share
            rows.append({"sample_id": s.id, "metric": "system_r", "value": share if ok else None,
                         "status": "ok" if ok else "unscored",
                         "reason": None if ok else "system-level r undefined (constant system z-scores)"})
            mean = lambda r: sum(r.values()) / len(r)  # noqa: E731
            rows.append({"sample_id": s.id, "metric": "diff", "value": mean(ratings[s.id]) - mean(s.target)})
        overall = result.agreement.row(0, named=True)
        qc = result.workers.row(-1, named=True)  # the judge's: p_value, n_qc, n_systems, passed, reason
        summary = {"system_r": overall["pearson"], "system_rho": overall["spearman"],
                   **{k: overall[k] for k in ("pearson_low", "pearson_high", "spearman_low", "spearman_high")},
                   "qc_pass": bool(qc["passed"]), "qc_p": qc["p_value"], "item_r": result.item_r,
                   "item_alpha": result.item_alpha, "self_r": self_r, "human_self_r": PAPER_R,
                   "judged": len(ratings), "unscored": len(why),
                   "unreadable": sum(r.startswith("unreadable") for r in why.values()),
                   "failed": sum(r.startswith("failed") for r in why.values())}
        per_config = {"qc_pass": bool(qc["passed"]), "qc_p": qc["p_value"], "item_alpha": result.item_alpha,
                      "self_r": self_r, "ci_low": overall["pearson_low"], "ci_high": overall["pearson_high"],
                      **{f"r:{c}": v for c, v in result.agreement.select("column", "pearson").iter_rows()}}
        info = result.per_sample.with_columns(pl.lit(v, pl.Float64 if k != "qc_pass" else None).alias(k)
                                              for k, v in per_config.items())
        systems = result.human.select("model", "N", pl.col("z").alias("human_z")).with_columns(
            result.judge.get_column("z").alias("judge_z"))
        tables = {"judge_agreement": result.agreement, "judge_system_z": systems, "sample_info": info,
                  "judge_qc": result.workers.with_columns(pl.lit(options.qc_threshold).alias("threshold"))}
        return Scored(rows_frame(rows), summary, tables)
