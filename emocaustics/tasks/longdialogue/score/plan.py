"""The Ray Data plan for scoring many dialogues:

    dialogue ids -> [embed stage: actor pool hosting the embedder (EmbedderActor for local models); per batch the
    distinct texts are embedded once and each dialogue's pair cosines computed] -> [judge + score stage: judge
    questions of the whole batch in one call, rules applied, per-item rows] -> driver: Polars tables.

Both stages run the same functions as the in-process path (`policy.collect_pairs`, `similarity`, `engine.score_ok`),
so the two paths cannot disagree. The dialogues and predictions travel once per actor (constructor arguments); rows
carry only ids, cosines and the scored rows (JSON), and in a job each dialogue's judge calls: the actor's judge logs
to a `sink.Kept` (no eval log is current there), and the driver hands each line to the config's log as the in-process
judge does (`Judge.emit`). Why Ray Data here rather than `ray.data.llm`: the embed stage is a
plain sentence-transformers (or HTTP) call and the judge is any `LLM` of our model layer, possibly a shared vLLM pool,
so generic `map_batches` actor stages fit; the judge must see a batch's questions together to batch them.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from emocaustics.evallog import sink
from emocaustics.tasks.longdialogue.data.schema import Dialogue
from emocaustics.tasks.longdialogue.score.engine import resolve_judge, score_ok
from emocaustics.tasks.longdialogue.score.policy import Policy, collect_pairs, triage
from emocaustics.scoring.similarity import SimilarityTable, clean_pairs, cosines, distinct_texts
from emocaustics.tasks.longdialogue.score.tables import ScoreResult, build_result


class EmbedStage:
    """Actor-pool UDF: {dialogue} -> {dialogue, sims (JSON [[a, b, cos], ...]), texts_requested, distinct_texts}."""

    def __init__(self, task: str, embedder: str, ok: dict[int, tuple[Dialogue, Any]]) -> None:
        from emocaustics.models.embedders import EmbedderActor, make_embedder, parse_embedder_spec

        self.task = task
        self.ok = ok
        if parse_embedder_spec(embedder).kind == "openai":
            self.encode = lambda texts: asyncio.run(make_embedder(embedder).embed(texts))
        else:
            self.encode = EmbedderActor(embedder).encode

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        ids = [int(i) for i in batch["dialogue"]]
        per_dialogue = {i: clean_pairs(sorted(collect_pairs(self.task, *self.ok[i]))) for i in ids}  # as ascore
        all_pairs = clean_pairs(p for ps in per_dialogue.values() for p in ps)
        texts = distinct_texts(all_pairs)
        values = cosines(all_pairs, texts, self.encode(texts)) if texts else {}
        sims = [json.dumps([[a, b, values[(a, b)]] for a, b in per_dialogue[i]], ensure_ascii=False) for i in ids]
        first = [k == 0 for k in range(len(ids))]
        return {"dialogue": ids, "sims": sims,
                "texts_requested": [2 * len(all_pairs) if f else 0 for f in first],
                "distinct_texts": [len(texts) if f else 0 for f in first]}


class ScoreStage:
    """UDF: the judge (if any) and the rules over a batch -> {dialogue, items (JSON), row (JSON), judge (JSON: the
    dialogue's eval-log line of judge calls, or null)}; `prompts`: the driver's eval log's setting (None: no log)."""

    def __init__(self, task: str, judge: Any, compat: str, on_judge_error: str,
                 ok: dict[int, tuple[Dialogue, Any]], notes: Mapping[int, int], prompts: bool | None = None) -> None:
        self.task = task
        self.ok = ok
        self.notes = dict(notes)
        self.kept = sink.Kept(prompts) if prompts is not None else None
        with sink.active(self.kept):  # the judge keeps its calls for the sink current when it is made
            self.judge = resolve_judge(judge) if task == "emotion" else None
        self.policy = Policy(on_judge_error, judge=self.judge is not None)

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        ids = [int(i) for i in batch["dialogue"]]
        table = SimilarityTable({(a, b): s for raw in batch["sims"] for a, b, s in json.loads(raw)})
        pairs = [self.ok[i] for i in ids]
        items, rows = asyncio.run(score_ok(self.task, pairs, table, self.judge, self.policy, self.notes))
        by_dialogue: dict[int, list[dict[str, Any]]] = {i: [] for i in ids}
        for it in items:
            by_dialogue[it["dialogue"]].append(it)
        row_by = {r["dialogue"]: r for r in rows}
        return {"dialogue": ids,
                "items": [json.dumps(by_dialogue[i], ensure_ascii=False) for i in ids],
                "row": [json.dumps(row_by[i], ensure_ascii=False) for i in ids],
                "judge": [json.dumps(self.kept and self.kept.lines.pop(str(i), None), ensure_ascii=False) for i in ids],
                "texts_requested": list(batch["texts_requested"]), "distinct_texts": list(batch["distinct_texts"])}


def score_with_ray(task: str, dialogues: Sequence[Dialogue], predictions: Mapping[int, Any], *,
                   embedder: Any = "minilm", judge: Any = None, compat: str = "spec",
                   on_judge_error: str = "zero", batch_size: int = 100, embed_actors: int = 1,
                   notes: Mapping[int, int] | None = None, ray: bool = True) -> ScoreResult:
    """Score through Ray Data (`scoring.fanout`: a small local Ray is started when none is running, and stopped);
    in this process (`engine.ascore`, `embedder` an `Embedder` or a spec) when `ray` is False, and always for the
    reference, whose path is a sequence of judge rounds. The one dispatch of a job's scoring and the `score` verb."""
    if compat == "reference" or not ray:
        from emocaustics.tasks.longdialogue.score.engine import ascore

        return asyncio.run(ascore(task, dialogues, predictions, embedder=embedder, judge=judge, compat=compat,
                                  on_judge_error=on_judge_error, notes=notes))
    from emocaustics.scoring.fanout import Stage, ray_map

    t0 = time.perf_counter()
    log = sink.current()
    ok, failed = triage(task, dialogues, predictions)
    ok_by = {d.id: (d, p) for d, p in ok}
    items: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    requested = distinct = 0
    if ok:
        stages = [Stage(EmbedStage, {"task": task, "embedder": embedder, "ok": ok_by}, actors=embed_actors),
                  Stage(ScoreStage, {"task": task, "judge": judge, "compat": compat, "on_judge_error": on_judge_error,
                                     "ok": ok_by, "notes": notes or {}, "prompts": log and log.prompts}, actors=1)]
        for r in ray_map([{"dialogue": i} for i in ok_by], stages, batch_size=batch_size,
                         blocks=max(1, len(ok_by) // batch_size), num_cpus=2):
            items += json.loads(r["items"])
            rows.append(json.loads(r["row"]))
            if log is not None and (line := json.loads(r["judge"])) is not None:
                log.emit(str(r["dialogue"]), line)
            requested += int(r["texts_requested"])
            distinct += int(r["distinct_texts"])
    from emocaustics.models.embedders import parse_embedder_spec

    extra = {"compat": compat, "embedder": parse_embedder_spec(embedder).name, "judge": judge or "none",
             "on_judge_error": on_judge_error, "texts_requested": requested, "distinct_texts": distinct,
             "seconds": round(time.perf_counter() - t0, 3), "path": "ray"}
    return build_result(task, items, rows + failed, extra)
