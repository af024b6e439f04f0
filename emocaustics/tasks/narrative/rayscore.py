"""Scoring large collections through Ray Data: thousands of stories as a stream of `map_batches` over batches of
stories, each batch scored in a Ray worker, the small per-story outputs gathered and aggregated in the driver.

Two entry points, one per input shape:
- `score_file_pairs`: (story, prediction file or none, GT file) paths -> compact composite results by story
  (what `score narrative --pred DIR --gt DIR` aggregates). Workers read the files themselves: the driver ships paths.
- `score_samples_ray`: the task's samples and predictions (decoded JSON) -> `scoring.score_sample` outputs by sample
  id (rows, items, issues for the job's common score tables).

Rows cross the Ray boundary as JSON strings: the documents are irregular (an alias is a string or a list, any value
may be null), which Arrow's column inference would reject or coerce. Scoring is pure CPU in Python, so plain Ray
tasks (no actor pool) are used (`scoring.fanout`, the core's one fan-out); each worker loads the taxonomy once (`scoring.taxonomy_for` is cached). Ray Data
does not keep row order by default, so outputs are keyed by story / sample id and put back in the input's order.

Below a few thousand files the local loop is as fast (Ray's start-up and per-batch overhead outweigh the gain on
one machine; `benchmarks/narrative_bench.py` measures both): the callers use Ray from `RAY_ABOVE` stories up, or
when told to.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from emocaustics.core.task import Failure, Sample
from emocaustics.scoring.fanout import Stage, ray_map

RAY_ABOVE = 2000  # stories; at or below this the local loop is used (see the module docstring)
BATCH_SIZE = 64


def _file_result(item: dict[str, Any], **options: Any) -> dict[str, Any]:
    from emocaustics.tasks.narrative.aggregate import compact
    from emocaustics.tasks.narrative.scoring import score_files, taxonomy_for

    options["taxonomy"] = taxonomy_for(options["taxonomy"])  # a folder name crosses; each worker loads it once
    return compact(score_files(item["pred"] or None, item["gt"], missing=item["missing"], **options))


def _encode_pred(pred: Any) -> Any:
    return {"__failure__": [pred.step, pred.reason]} if isinstance(pred, Failure) else {"value": pred}


def _sample_result(item: dict[str, Any], **options: Any) -> dict[str, Any]:
    from emocaustics.tasks.narrative.scoring import score_sample

    pred = Failure(*item["pred"]["__failure__"]) if "__failure__" in item["pred"] else item["pred"]["value"]
    return score_sample(item["id"], pred, item["target"], item["meta"], **options)


def _score_batch(batch: dict[str, np.ndarray], *, score: Any, **options: Any) -> dict[str, np.ndarray]:
    """`score` of each item of a batch; items and results cross as JSON strings (see the module docstring)."""
    out = [json.dumps(score(json.loads(raw), **options), ensure_ascii=False) for raw in batch["item"]]
    return {"key": batch["key"], "result": np.array(out, dtype=object)}


def _stream(items: list[tuple[str, Any]], score: Any, batch_size: int, **options: Any) -> dict[str, dict[str, Any]]:
    """{item key: its decoded result} of `score` over (key, item) pairs as a Ray Data stream; every item comes back."""
    rows = ray_map([{"key": k, "item": json.dumps(v, ensure_ascii=False)} for k, v in items],
                   [Stage(_score_batch, {"score": score, **options})], batch_size=batch_size)
    got = {str(r["key"]): json.loads(r["result"]) for r in rows}
    if len(got) != len(items):  # never a silent gap: every story comes back
        raise RuntimeError(f"Ray Data scoring returned {len(got)} of {len(items)} stories")
    return got


def score_file_pairs(pairs: list[tuple[str, Path | None, Path]], *, weights: dict[str, float] | None = None,
                     taxonomy: str | None = None, n_t: int = 2, missing: dict[str, str] | None = None,
                     batch_size: int = BATCH_SIZE) -> dict[str, dict[str, Any]]:
    """(story, pred file or None, GT file) -> {story: compact composite result}, scored as a Ray Data stream
    (`scoring.score_files` per story; `missing[story]` is the reason of a story without a prediction file)."""
    if not pairs:
        return {}
    items = [(name, {"pred": str(p) if p else "", "gt": str(g), "missing": (missing or {}).get(name, "")})
             for name, p, g in pairs]
    got = _stream(items, _file_result, batch_size, weights=weights, taxonomy=taxonomy, n_t=n_t)
    return {name: got[name] for name, _, _ in pairs}  # in the pairs' order: the aggregate's sums are then identical


def score_samples_ray(samples: list[Sample], predictions: dict[str, Any], *, weights: dict[str, float] | None = None,
                      taxonomy: str | None = None, n_t: int = 2,
                      batch_size: int = BATCH_SIZE) -> dict[str, dict[str, Any]]:
    """The task's samples and predictions -> {sample id: scoring.score_sample output}, through Ray Data."""
    if not samples:
        return {}
    missing = Failure("predict", "no prediction for this story")
    items = [(s.id, {"id": s.id, "target": s.target, "meta": s.meta,
                     "pred": _encode_pred(predictions.get(s.id, missing))}) for s in samples]
    return _stream(items, _sample_result, batch_size, weights=weights, taxonomy=taxonomy, n_t=n_t)
