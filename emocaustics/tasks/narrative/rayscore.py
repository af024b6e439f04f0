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


def _score_file_batch(batch: dict[str, np.ndarray], *, weights: dict[str, float] | None, taxonomy: str | None,
                      n_t: int) -> dict[str, np.ndarray]:
    from emocaustics.tasks.narrative.aggregate import compact
    from emocaustics.tasks.narrative.scoring import score_files, taxonomy_for

    tax = taxonomy_for(taxonomy)
    out = [json.dumps(compact(score_files(str(p) or None, str(g), missing=str(m), weights=weights, taxonomy=tax,
                                          n_t=n_t)), ensure_ascii=False)
           for p, g, m in zip(batch["pred"], batch["gt"], batch["missing"])]
    return {"key": batch["key"], "result": np.array(out, dtype=object)}


def _encode_pred(pred: Any) -> Any:
    return {"__failure__": [pred.step, pred.reason]} if isinstance(pred, Failure) else {"value": pred}


def _decode_pred(obj: dict[str, Any]) -> Any:
    return Failure(*obj["__failure__"]) if "__failure__" in obj else obj["value"]


def _score_sample_batch(batch: dict[str, np.ndarray], *, weights: dict[str, float] | None, taxonomy: str | None,
                        n_t: int) -> dict[str, np.ndarray]:
    from emocaustics.tasks.narrative.scoring import score_sample

    out = []
    for raw in batch["sample"]:
        s = json.loads(raw)
        out.append(json.dumps(score_sample(s["id"], _decode_pred(s["pred"]), s["target"], s["meta"], weights=weights,
                                           taxonomy=taxonomy, n_t=n_t), ensure_ascii=False))
    return {"key": batch["key"], "result": np.array(out, dtype=object)}


def _stream(items: list[dict[str, Any]], batch_fn: Any, batch_size: int, **kwargs: Any) -> dict[str, dict[str, Any]]:
    """{item key: its decoded result} of `batch_fn` over `items` as a Ray Data stream; every item comes back."""
    rows = ray_map(items, [Stage(batch_fn, kwargs)], batch_size=batch_size)
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
    items = [{"key": name, "pred": str(p) if p else "", "gt": str(g), "missing": (missing or {}).get(name, "")}
             for name, p, g in pairs]
    got = _stream(items, _score_file_batch, batch_size, weights=weights, taxonomy=taxonomy, n_t=n_t)
    return {name: got[name] for name, _, _ in pairs}  # in the pairs' order: the aggregate's sums are then identical


def score_samples_ray(samples: list[Sample], predictions: dict[str, Any], *, weights: dict[str, float] | None = None,
                      taxonomy: str | None = None, n_t: int = 2,
                      batch_size: int = BATCH_SIZE) -> dict[str, dict[str, Any]]:
    """The task's samples and predictions -> {sample id: scoring.score_sample output}, through Ray Data."""
    if not samples:
        return {}
    missing = Failure("predict", "no prediction for this story")
    items = [{"key": s.id, "sample": json.dumps({"id": s.id, "target": s.target, "meta": s.meta,
                                                 "pred": _encode_pred(predictions.get(s.id, missing))},
                                                ensure_ascii=False)} for s in samples]
    return _stream(items, _score_sample_batch, batch_size, weights=weights, taxonomy=taxonomy, n_t=n_t)
