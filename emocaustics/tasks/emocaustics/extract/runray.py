"""One extraction run, streamed, and its manifest.

dialogues -> work items -> every dialogue at once through `run_items` (the model pool's `run`: each dialogue's state
machine inside a replica actor; or, for an endpoint, here), each awaiting its own embeddings only when a step needs
them (`embedfeed.py` in this process, `embedboard.py` for replicas; only methods that retrieve or join by
similarity) -> result rows, files as each finishes -> manifest.json

Why not `ray.data.llm`'s processor: it is built for one-shot prompts; `window` makes 5-40 dependent calls per
dialogue, so each dialogue runs as an async loop next to a long-lived engine instead (see DESIGN.md).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from emocaustics.core import aio
from emocaustics.tasks.emocaustics.extract.output import clear_previous, read_sextuple_predictions, write_json_atomic
from emocaustics.tasks.emocaustics.extract.prompts import PROMPTS_VERSION
from emocaustics.tasks.emocaustics.extract.runner import ExtractConfig, make_item, run_items

SMOKE_NOTE = "smoke model: random weights, its text is noise; these outputs check the engine path, not quality"


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
                from_dir: Path | None = None, cache_dir: Path | None = None, concurrency: int = 256,
                marks: dict[str, float] | None = None, progress: bool = True) -> dict[str, Any]:
    """Run one task/method over the dialogues; writes predictions, failures.jsonl and manifest.json.

    `marks` (optional) receives the epoch seconds at which each phase began and ended (the fixed-cost breakdown of
    `benchmarks/startup_bench.py`); `progress` prints the project's progress line on standard error."""
    marks = marks if marks is not None else {}
    t0 = time.perf_counter()
    marks["plan_start"] = time.time()
    out.mkdir(parents=True, exist_ok=True)
    clear_previous(out, cfg.task, [d.id for d in dialogues])
    items = build_items(dialogues, cfg, from_dir)
    rows, engine = aio.run(_stream(items, cfg, llm_spec=llm_spec, out=out, embedder_spec=embedder_spec,
                                   cache_dir=cache_dir, concurrency=concurrency, marks=marks, progress=progress))
    marks["extract_done"] = time.time()
    rows.sort(key=lambda r: r["dialogue"])
    summary = write_manifest(out, cfg, rows, llm_spec=llm_spec, embedder_spec=embedder_spec, from_dir=from_dir,
                             seconds=time.perf_counter() - t0, engine=engine)
    marks["manifest_written"] = time.time()
    return summary


async def _stream(items: list[dict[str, Any]], cfg: ExtractConfig, *, llm_spec: str, out: Path, embedder_spec: str,
                  cache_dir: Path | None, concurrency: int, marks: dict[str, float],
                  progress: bool) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Every dialogue through `run_items` at once (up to `concurrency` in flight), embeddings fed beside them.

    No Ray Data plan: each dialogue already runs as one async state machine (inside a replica for a Ray-hosted
    model, here for an endpoint), so a dataset stage only added start-up and held dialogues back in blocks. Ray is
    connected only when the model is hosted in Ray actors (`smoke`, `vllm:`)."""
    import sys

    from emocaustics.models.factory import make_llm
    from emocaustics.models.spec import REMOTE_KINDS, parse_llm_spec
    from emocaustics.tasks.emocaustics.extract.embedfeed import EmbedFeed

    feed = None
    remote = parse_llm_spec(llm_spec).kind in REMOTE_KINDS
    if any(it.get("needs_emb") and not it.get("skip_reason") for it in items):
        # Starts loading now, beside the model's start. In this process (an endpoint) window consults embeddings only
        # for unnamed events, so the embedder yields the CPU to the loop that drives the calls; for a replica the
        # embedder runs at full priority (niced, it starved behind a CPU engine and held window dialogues back).
        # A model in Ray actors may be a CPU engine on these cores: the embedder then takes half of them.
        threads = None if remote else max(1, (os.cpu_count() or 2) // 2)
        feed = EmbedFeed(embedder_spec, items, marks, background=cfg.method == "window" and remote, threads=threads)
        feed.start()
        await asyncio.sleep(0)  # lets the feed start its embedder process before Ray's start blocks this loop
    pool = board = None
    marks["llm_start"] = time.time()
    if not remote:
        marks["ray_start"] = time.time()
        pool = _driver_pool(llm_spec)  # in this (main) thread: ray.init installs signal handlers
        marks["ray_connected"] = time.time()
        if feed is not None:  # dialogues go to their replicas at once and await their rows there (embedboard.py)
            from emocaustics.tasks.emocaustics.extract.embedboard import start_board

            board = start_board()
            feed.attach_board(board)
    llm = make_llm(llm_spec, cache_dir=cache_dir)
    marks["llm_ready"] = time.time()
    bar = None
    if progress:
        from emocaustics.core.progress import Progress

        bar = Progress(f"extract {cfg.task}/{cfg.method}", len(items), stream=sys.stderr)
    marks["first_submitted"] = time.time()
    try:
        rows = await run_items(llm, items, out, cfg.task, concurrency=concurrency,
                               embeddings=feed,
                               on_row=(lambda r: bar.update(1, 0 if r["ok"] else 1)) if bar is not None else None)
    finally:
        if bar is not None:
            bar.close()
        if feed is not None:
            await feed.close()
        if board is not None:
            import ray

            ray.kill(board)
        close = getattr(getattr(llm, "llm", llm), "aclose", None)
        if close is not None:
            await close()
    engine = await _engine_stats(pool)
    return rows, engine


def _driver_pool(llm_spec: str) -> Any:
    """The model pool of a Ray-hosted model, created (or found) by the driver, which then owns the replicas (Ray ties
    a non-detached actor to its creator: a job's later runs find the loaded model)."""
    from emocaustics.core.cluster import connect
    from emocaustics.models.pool import get_pool

    connect()
    return get_pool(llm_spec)


async def _engine_stats(pool: Any) -> dict[str, Any] | None:
    """The pool's own counters, cumulative over the job (engine calls, engine starts, prefix-cache hit rate)."""
    if pool is None:
        return None
    try:
        stats = await pool.stats()
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
