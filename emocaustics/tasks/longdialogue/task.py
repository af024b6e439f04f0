"""The two EmoCaustics tasks on the task interface: `sextuple` (emotion sextuples per utterance) and `emotion`
(emotion event chains per speaker).

Both solve on the shared plan (`solve.plan`): each dialogue's state machine (`extract/dialogue.py`) runs inside a
replica, its utterances' embeddings streaming in beside the calls, and a chain `window` config builds on the same
model's sextuple `window` config: the side inputs of `side.py`. Predictions are written in the reference formats
(`extract/output.py`). Scoring is the spec-exact scorer of `score/`, its per-dialogue table turned into the
core's long rows.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import model_validator

from emocaustics.core.datasource import DataSource
from emocaustics.core.errors import UsageError
from emocaustics.core.task import (DatasetOptions, Defect, Failure, Loaded, Methods, Options, Placement, Sample,
                                   ScoreContext, Scored, Side, SolveFailed, Task, rows_frame)
from emocaustics.scoring.fanout import wants_ray
from emocaustics.tasks.longdialogue.data.fetch import SOURCE
from emocaustics.tasks.longdialogue.extract.knobs import ExtractKnobs
from emocaustics.tasks.longdialogue.extract.windows import DEFAULT_WINDOWS
from emocaustics.tasks.longdialogue.side import DialogueSide
from emocaustics.tasks.longdialogue.extract.output import DialogueStore
from emocaustics.tasks.parts import lazy

RAY_ABOVE = 50  # dialogues; at or below this Ray's start-up costs more than it saves in scoring (`scoring.fanout`)


def all_of_given_data(cls: Any, raw: Any) -> Any:
    """The dataset options' default subset (a pydantic before-validator): every dialogue of an explicit data folder,
    as in every other command (`data.subsets.default_subset`); a run with `-D data=DIR` and no subset read the repo's
    sample dialogues instead of DIR."""
    return {**raw, "subset": "all"} if isinstance(raw, dict) and raw.get("data") and "subset" not in raw else raw


class EmoDataset(DatasetOptions):
    # `eval --split` sets the subset; a selection's ids are read alone (core/optionkeys.py)
    option_for: ClassVar[dict[str, str]] = {"split": "subset", "ids": "ids"}
    subset: str | None = "sample"  # all | paper-100 | long-20 | sample
    ids: list[int] | None = None
    pairing: Literal["verified", "published"] = "verified"
    repair: bool = False
    strict: bool = False
    _all_of_given_data = model_validator(mode="before")(all_of_given_data)  # -D data=DIR: every dialogue of DIR


class EmoOptions(Options, ExtractKnobs):
    """The extraction knobs of `extract.dialogue.ExtractConfig`, plus the calibration predictors."""

    # The knobs are declared once, in `extract.knobs.ExtractKnobs` (ExtractConfig's too); `method` adds the predictors.

    # Older job files wrote these beside `task` in a run; they are moved under `options` (core.optionkeys).
    legacy_run_keys: ClassVar[tuple[str, ...]] = ("window", "step")
    method: Literal["direct", "rag", "window", "oracle", "baseline"]

    @model_validator(mode="after")
    def _check(self) -> "EmoOptions":
        if self.step is not None and self.window is not None and self.step > self.window:
            raise ValueError(f"step {self.step} is larger than window {self.window}: utterances would be skipped")
        return self

    def extract_options(self) -> dict[str, Any]:
        """Options other than method/window/step that differ from their defaults (what `ExtractConfig` gets)."""
        data = self.model_dump(exclude={"method", "window", "step"})
        return {k: v for k, v in data.items() if v != type(self).model_fields[k].default}


@functools.lru_cache(maxsize=8)
def _resolve(dataset_json: str) -> tuple[list[Any], Any]:
    """Dialogues and corpus of a dataset spec, loaded once per process (every config of a job shares them)."""
    from emocaustics.tasks.longdialogue.data.subsets import resolve

    ds = EmoDataset.model_validate_json(dataset_json)
    return resolve(ds.subset, ds.ids, root=ds.data, pairing=ds.pairing, repair=ds.repair, strict=ds.strict)


class EmoCausticsTask(Task):
    Options: ClassVar[type[Options]] = EmoOptions
    Dataset: ClassVar[type[DatasetOptions]] = EmoDataset
    data_sources: ClassVar[tuple[DataSource, ...]] = (SOURCE,)
    # what each per-dialogue component means (the report's legend); the scorers in score/ define them
    metric_docs: ClassVar[dict[str, str]] = {
        "score": "the dialogue's spec score: sextuples, points / utterances / 4; chains, the weighted share of "
                 "ground-truth events, emotions, states and sources matched",
        "sentiment": "share of the dialogue's utterances whose sentiment equals the ground truth (trimmed, "
                     "lower-cased; an utterance without ground-truth sextuple counts when the prediction is empty)",
        "aspect": "share of utterances whose aspect has cosine >= 0.8 with the ground truth's",
        "opinion": "share of utterances whose opinion has cosine >= 0.8 with the ground truth's",
        "rationale": "share of utterances whose rationale has cosine >= 0.8 with the ground truth's",
        "target_sim": "mean cosine between predicted and ground-truth target (reported, never scored; utterances "
                      "with a ground-truth sextuple only)",
        "event_match": "share of ground-truth events matched (cosine >= 0.7 and the judge agrees)",
        "reason_match": "share of ground-truth emotions in matched events whose reason has a counterpart with "
                        "cosine >= 0.8",
        "state": "share of ground-truth emotions whose state equals their counterpart's",
        "source": "share of ground-truth emotions whose source id equals their counterpart's",
    }

    def __init__(self, name: str, description: str, methods: tuple[str, ...]) -> None:
        self.name = name  # type: ignore[misc]
        self.description = description  # type: ignore[misc]
        self.methods = Methods(solver=methods, calibration=("oracle", "baseline"))  # type: ignore[misc]
        self.side = DialogueSide(self)  # type: ignore[misc]
        self.store = DialogueStore(name)  # type: ignore[misc]

    @property
    def prompts_version(self) -> str:  # type: ignore[override]
        from emocaustics.tasks.longdialogue.extract.prompts import PROMPTS_VERSION

        return PROMPTS_VERSION

    def k_s(self, opts: EmoOptions) -> tuple[int, int]:
        k, s = DEFAULT_WINDOWS[self.name]
        return opts.window or k, opts.step or s

    def label(self, options: Options, model: str | None = None, axes: list[str] | None = None) -> str:
        """`task_method[_model][_K20-S5][_key=value...]`: the names run folders have always had; with `axes` (the
        options that vary between the job's configs of this method) K-S only when window or step is one of them."""
        opts: EmoOptions = options  # type: ignore[assignment]
        parts: list[Any] = [self.name, opts.method]
        if model:
            parts.append(model)
        if opts.method in ("window", "rag") and (axes is None or {"window", "step"} & set(axes)):
            k, s = self.k_s(opts)
            parts.append(f"K{k}-S{s}")
        extra = opts.extract_options() if axes is None else {
            k: v for k, v in opts.model_dump(mode="json", exclude={"method", "window", "step"}).items() if k in axes}
        parts += [f"{key}={extra[key]}" for key in sorted(extra)]
        return "_".join(str(p).replace("/", "-") for p in parts)

    # The per-config columns `summary_columns` adds, for the report (`Report.option_column_docs`).
    option_column_docs: ClassVar[dict[str, str]] = {
        "K": "window size of a windowed config (utterances)",
        "S": "window step of a windowed config (utterances)",
    }

    def summary_columns(self, options: Options) -> dict[str, Any]:
        opts: EmoOptions = options  # type: ignore[assignment]
        k, s = self.k_s(opts) if opts.method in ("window", "rag") else (None, None)
        return {"K": k, "S": s}

    report_sections = lazy("emocaustics.tasks.longdialogue.report", "sections")

    # -- data ----------------------------------------------------------------------------------------------------
    def load(self, dataset: DatasetOptions, options: Options) -> Loaded:
        dialogues, corpus = _resolve(dataset.model_dump_json())
        samples = [Sample(str(d.id), d, meta={"n_utterances": len(d.utterances), "cluster": str(d.id)})
                   for d in dialogues]  # a sample is one dialogue: its own cluster
        defects = [Defect(d.kind, d.where(), d.message) for d in corpus.defects]
        return Loaded(samples, defects, {"dataset": "emocaustics", "root": str(corpus.root), "cluster": "dialogue"})

    def check_ground_truth(self, loaded: Loaded, options: Options) -> None:
        """`sextuple` scores against the sextuples on the chat files' utterances, `emotion` against the emotion
        chains of the emo files that pair with the dialogues: a selection in which no dialogue has any is refused
        before a run (an empty `emo/` gave "100 samples, 0 failures, score None", issue 41)."""
        dialogues = [s.input for s in loaded.samples]
        root = Path(loaded.info.get("root", "."))
        n = f"{len(dialogues)} selected dialogue(s)"
        if self.name == "emotion" and not any(d.chains for d in dialogues):
            raise UsageError(f"{root / 'emo'}: no emotion-chain annotation (emo_N.json) pairs with any of the {n}: "
                             "the emotion task's ground truth is missing or empty; nothing to score against")
        if self.name == "sextuple" and not any(u.gt for d in dialogues for u in d.utterances):
            raise UsageError(f"{root / 'chat'}: no utterance of the {n} has a ground-truth sextuple: the sextuple "
                             "task's ground truth is missing or empty; nothing to score against")

    # -- solving -------------------------------------------------------------------------------------------------
    def extract_config(self, options: Options) -> Any:
        from emocaustics.tasks.longdialogue.extract.dialogue import ExtractConfig

        opts: EmoOptions = options  # type: ignore[assignment]
        return ExtractConfig(task=self.name, method=opts.method, window=opts.window, step=opts.step,
                             **opts.extract_options())

    async def solve(self, llm: Any, sample: Sample, options: Options, side: Side) -> Any:
        from emocaustics.tasks.longdialogue.extract.dialogue import solve_dialogue

        return await solve_dialogue(llm, sample.input, side.embeddings, side.stats)

    def placement(self, sample: Sample, options: Options) -> Placement:
        """Read on what travels to the replica (the work item `side.solver_view` makes), except the size, which the
        plan reads on the loaded dialogue to start the longest first."""
        from emocaustics.tasks.longdialogue.extract.dialogue import item_affinity, item_chain, item_weight

        item = sample.input
        if not isinstance(item, dict):  # a loaded dialogue
            return Placement(affinity=sample.id, size=len(item.utterances))
        return Placement(affinity=item_affinity(item), weight=item_weight(item), chain=item_chain(item),
                         size=len(item["sentences"]))

    def dry_solve(self, samples: list[Sample], options: Options, llm: Any, embedder: Any, *,
                  prior: bool = False) -> None:
        """The dry run's pass (solve/forecast.py): each dialogue through the same state machine as a run
        (`solve_dialogue`), with the stand-ins' answers and embeddings. `prior`: a chain `window` config that builds
        on the job's sextuple `window` config, whose calls are that config's (made here uncounted, for its records)."""
        from emocaustics.core import aio
        from emocaustics.solve.forecast import RecordingLLM, TokenCounter
        from emocaustics.tasks.longdialogue.embeddings import Embeddings
        from emocaustics.tasks.longdialogue.extract.dialogue import ExtractConfig, make_item, solve_dialogue

        opts: EmoOptions = options  # type: ignore[assignment]
        cfg = self.extract_config(options)
        uncounted = RecordingLLM(TokenCounter("uncounted"))

        async def solved(model: Any, item: dict[str, Any], vecs: Any) -> Any:
            try:  # a dialogue that fails (one without utterances) fails in the run too, at no cost
                return await solve_dialogue(model, item, None if vecs is None else Embeddings(vecs), {})
            except SolveFailed:
                return None

        async def each() -> None:
            for s in samples:
                d = s.input
                sentences, holders = [u.sentence for u in d.utterances], [u.holder for u in d.utterances]
                vecs = await embedder.embed(sentences) if sentences else None
                records = None
                if prior and self.name == "emotion" and opts.method == "window":
                    base = make_item(d.id, sentences, holders, ExtractConfig(task="sextuple", method="window"))
                    records = await solved(uncounted, base, vecs)
                emb = vecs if cfg.needs_embeddings(records is not None, len(sentences)) else None
                await solved(llm, make_item(d.id, sentences, holders, cfg, prior=records), emb)

        aio.run(each())

    def predict(self, method: str, samples: list[Sample], options: Options) -> dict[str, Any]:
        from emocaustics.tasks.longdialogue.score.predictors import predict

        found = predict(method, self.name, [s.input for s in samples])
        return {str(k): v for k, v in found.items()}

    # -- scoring -------------------------------------------------------------------------------------------------
    # the viewer's sample page (`Report.view_sample`): sextuples per utterance, events and chain matches
    view_sample = lazy("emocaustics.tasks.longdialogue.view", "view_sample")

    def score(self, samples: list[Sample], predictions: dict[str, Any], options: Options,
              ctx: ScoreContext) -> Scored:
        dialogues = [s.input for s in samples]
        preds = {int(k): (f"extraction failed at {v}" if isinstance(v, Failure) else v) for k, v in predictions.items()}
        kw = dict(judge=ctx.judge, compat=ctx.scoring.get("compat", "spec"),
                  on_judge_error=ctx.scoring.get("on_judge_error", "zero"))
        from emocaustics.tasks.longdialogue.score.plan import score_with_ray

        ray = wants_ray("auto", len(dialogues), RAY_ABOVE, allowed=ctx.use_ray)  # Ray's stages load their own embedder
        return to_scored(score_with_ray(self.name, dialogues, preds, ray=ray, **kw,
                                        embedder=(ctx.embedder_spec or "minilm") if ray else ctx.embedder))


def to_scored(result: Any) -> Scored:
    """The scorer's per-dialogue table as long rows: `score` (status failed where extraction or reading failed),
    each component `c_<name>` as metric `<name>`, and `judge_failures`; the dialogue size as sample info."""
    rows: list[dict[str, Any]] = []
    comps = [c for c in result.dialogues.columns if c.startswith("c_")]
    for d in result.dialogues.iter_rows(named=True):
        sid, weight = str(d["dialogue"]), float(d["weight"] or 0.0)
        status = "failed" if d["failed"] else ("ok" if d["score"] is not None else "unscored")
        rows.append({"sample_id": sid, "metric": "score", "value": d["score"], "weight": weight, "status": status,
                     "reason": d["reason"]})
        for c in comps:
            rows.append({"sample_id": sid, "metric": c[2:], "value": d[c], "weight": weight,
                         "status": "ok" if d[c] is not None else "unscored"})
    import polars as pl

    info = result.dialogues.select(pl.col("dialogue").cast(pl.Utf8).alias("sample_id"), "n_utterances",
                                   pl.col("judge_failures").fill_null(0).cast(pl.Int64))
    summary = {"score": result.summary.get("score"), "micro_score": result.summary.get("micro_score")}
    return Scored(rows_frame(rows), summary, {"sample_info": info}, result.items)
