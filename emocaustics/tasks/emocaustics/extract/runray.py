"""One extraction run as a Ray Data plan, and its manifest.

dialogues -> work items -> [EmbedStage: utterance embeddings, only for methods that retrieve or join by similarity]
          -> ExtractStage (map_batches: a batch of dialogues through the model pool's `run`, i.e. each dialogue's
             state machine inside a replica actor, many at once) -> result rows -> manifest.json

Why not `ray.data.llm`'s processor: it is built for one-shot prompts; `window` makes 5-40 dependent calls per
dialogue, so each dialogue runs as an async loop next to a long-lived engine instead (see DESIGN.md).
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from emocaustics.tasks.emocaustics.extract.output import clear_previous, read_sextuple_predictions, write_json_atomic
from emocaustics.tasks.emocaustics.extract.prompts import PROMPTS_VERSION
from emocaustics.tasks.emocaustics.extract.runner import EmbedStage, ExtractConfig, ExtractStage, make_item

SMOKE_NOTE = "smoke model: random weights, its text is noise; these outputs check the engine path, not quality"


def ensure_ray() -> bool:
    """Connect to Ray (see `core.cluster.connect`); returns whether this call started it."""
    from emocaustics.core.cluster import connect

    return connect()


def _prior(from_dir: Path | None, dialogue_id: int, files: dict[int, Path]) -> tuple[list[dict] | None, str | None]:
    if from_dir is None:
        return None, None
    path = files.get(dialogue_id)
    if path is None:
        return None, f"no sextuple prediction (output_)chat_{dialogue_id}.json in {from_dir}"
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, f"{path}: unreadable sextuple prediction: {exc}"
    if not isinstance(obj, list) or not all(isinstance(r, dict) for r in obj):
        return None, f"{path}: a sextuple prediction must be a list of records"
    return obj, None


def build_items(dialogues: list[Any], cfg: ExtractConfig, from_dir: Path | None) -> list[dict[str, Any]]:
    files = read_sextuple_predictions(from_dir) if from_dir is not None else {}
    items = []
    for d in dialogues:
        prior, why = _prior(from_dir, d.id, files)
        item = make_item(d.id, [u.sentence for u in d.utterances], [u.holder for u in d.utterances], cfg, prior=prior)
        item["needs_emb"] = cfg.needs_embeddings(prior is not None)
        if why:
            item["skip_reason"] = why
        items.append(item)
    return items


def run_extract(dialogues: list[Any], cfg: ExtractConfig, *, llm_spec: str, out: Path, embedder_spec: str = "minilm",
                from_dir: Path | None = None, cache_dir: Path | None = None, batch_size: int = 256,
                concurrency: int = 256) -> dict[str, Any]:
    """Run one task/method over the dialogues on Ray Data; writes predictions, failures.jsonl and manifest.json."""
    import ray

    t0 = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    clear_previous(out, cfg.task, [d.id for d in dialogues])
    items = build_items(dialogues, cfg, from_dir)
    pool = _driver_pool(llm_spec)
    ds = ray.data.from_items([{"item": json.dumps(it, ensure_ascii=False)} for it in items])
    if any(it["needs_emb"] for it in items):
        ds = ds.map_batches(EmbedStage, fn_constructor_kwargs={"embedder_spec": embedder_spec}, batch_size=64,
                            concurrency=1, num_cpus=0.25)
    ds = ds.map_batches(
        ExtractStage,
        fn_constructor_kwargs={"llm_spec": llm_spec, "cache_dir": str(cache_dir) if cache_dir else None,
                               "out": str(out), "task": cfg.task, "concurrency": concurrency},
        batch_size=batch_size, concurrency=1, num_cpus=0.25)
    rows = [json.loads(r["row"]) for r in ds.iter_rows()]
    rows.sort(key=lambda r: r["dialogue"])
    return write_manifest(out, cfg, rows, llm_spec=llm_spec, embedder_spec=embedder_spec, from_dir=from_dir,
                          seconds=time.perf_counter() - t0, engine=_engine_stats(pool))


def _driver_pool(llm_spec: str) -> Any:
    """The model pool, created (or found) by the driver so that the driver owns the replicas: Ray ties a non-detached
    actor to its creator, and a replica created by the extract stage's worker would die with that worker, making the
    next run of the job load the model again. The stage's own `make_llm` then attaches to these replicas by name."""
    from emocaustics.models.spec import REMOTE_KINDS, parse_llm_spec

    if parse_llm_spec(llm_spec).kind in REMOTE_KINDS:
        return None
    from emocaustics.models.pool import get_pool

    return get_pool(llm_spec)


def _engine_stats(pool: Any) -> dict[str, Any] | None:
    """The pool's own counters, cumulative over the job (engine calls, engine starts, prefix-cache hit rate)."""
    if pool is None:
        return None
    import asyncio

    try:
        stats = asyncio.run(pool.stats())
    except Exception as exc:  # numbers for the manifest only; never fail a finished run over them
        return {"error": f"{type(exc).__name__}: {exc}"}
    stats.pop("per_replica", None)
    return stats


def summarise(cfg: ExtractConfig, rows: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    """The `--json` summary of the issue: task, method, counts, failures with reasons, calls, tokens, seconds."""
    total = {k: 0 for k in ("llm_calls", "cache_hits", "prompt_tokens", "generated_tokens", "unparseable", "retries")}
    for r in rows:
        for k in total:
            total[k] += int(r.get("stats", {}).get(k, 0))
    return {
        "task": cfg.task,
        "method": cfg.method,
        "dialogues": len(rows),
        "predicted": sum(1 for r in rows if r["ok"]),
        "failures": [{"dialogue": r["dialogue"], "reason": f"{r['step']}: {r['reason']}"} for r in rows if not r["ok"]],
        **total,
        "seconds": round(seconds, 3),
    }


def write_manifest(out: Path, cfg: ExtractConfig, rows: list[dict[str, Any]], *, llm_spec: str,
                   embedder_spec: str | None, from_dir: Path | None, seconds: float,
                   engine: dict[str, Any] | None = None) -> dict[str, Any]:
    summary = summarise(cfg, rows, seconds)
    manifest = {
        **summary,
        "config": cfg.model_dump(),
        "window": cfg.k, "step": cfg.s,
        "model": llm_spec,
        "embedder": embedder_spec if any(r.get("stats") for r in rows) else None,
        "prompts_version": PROMPTS_VERSION,
        "from": str(from_dir) if from_dir else None,
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "engine": engine,
        "per_dialogue": [{k: r.get(k) for k in ("dialogue", "utterances", "ok", "seconds", "stats",
                                                              "retry_reasons")} for r in rows],
    }
    if llm_spec.split("?", 1)[0] == "smoke":
        manifest["note"] = SMOKE_NOTE
    write_json_atomic(out / "manifest.json", manifest)
    return summary
