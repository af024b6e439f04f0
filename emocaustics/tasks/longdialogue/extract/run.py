"""`emocaustics extract`: one extraction config over the selected dialogues, on the shared plan, and its manifest.

dialogues -> the EmoCaustics task's samples -> `solve.plan.solve_samples` (every task's path: each dialogue's state
machine inside a replica, or here for an endpoint, its embeddings streaming in beside the calls) -> the reference
files as each dialogue finishes (`output.py`) -> manifest.json (config, model, prompts' version, counts, per-dialogue
cost). A job runs the same plan for each of its configs (`jobs/runner.py`).
"""

from __future__ import annotations

import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emocaustics.core import aio
from emocaustics.tasks.longdialogue.extract.dialogue import ExtractConfig
from emocaustics.tasks.longdialogue.extract.output import clear_previous
from emocaustics.tasks.longdialogue.extract.prompts import PROMPTS_VERSION

if TYPE_CHECKING:
    from emocaustics.models.spec import LLMSpec

SMOKE_NOTE = "smoke model: random weights, its text is noise; these outputs check the engine path, not quality"


def run_extract(dialogues: list[Any], cfg: ExtractConfig, *, llm_spec: str | LLMSpec, out: Path,
                embedder_spec: str = "minilm", from_dir: Path | None = None, cache_dir: Path | None = None,
                concurrency: int = 256, marks: dict[str, float] | None = None, progress: bool = True) -> dict[str, Any]:
    """Run one task/method over the dialogues; writes predictions, failures.jsonl, stats.jsonl and manifest.json.

    `llm_spec`: a spec string (the manifest names the model as written) or an `LLMSpec`; parsed once, here, and the
    plan and the pool take the object. `marks` (optional) receives the epoch seconds at which each phase began and
    ended (the fixed-cost breakdown of `benchmarks/startup_bench.py`); `progress` prints the project's progress line
    on standard error."""
    from emocaustics.core.task import Sample, get_task
    from emocaustics.models.spec import as_llm_spec
    from emocaustics.solve.plan import solve_samples
    from emocaustics.tasks.longdialogue.task import EmoOptions

    marks = marks if marks is not None else {}
    t0 = time.perf_counter()
    marks["plan_start"] = time.time()
    spec = as_llm_spec(llm_spec)
    out.mkdir(parents=True, exist_ok=True)
    clear_previous(out, cfg.task, [d.id for d in dialogues])
    task = get_task(cfg.task)
    options = EmoOptions(**cfg.model_dump(exclude={"task"}))
    samples = [Sample(str(d.id), d, meta={"n_utterances": len(d.utterances)}) for d in dialogues]
    bar = None
    if progress:
        from emocaustics.core.progress import Progress

        bar = Progress(f"extract {cfg.task}/{cfg.method}", len(samples), stream=sys.stderr)
    try:
        rows = solve_samples(task, samples, options, llm_spec=spec, out=out, cache_dir=cache_dir,
                             concurrency=concurrency, prior=from_dir, embedder_spec=embedder_spec, marks=marks,
                             on_row=(lambda r: bar.update(1, 0 if r["ok"] else 1)) if bar is not None else None)
    finally:
        if bar is not None:
            bar.close()
    marks["extract_done"] = time.time()
    sizes = {str(d.id): len(d.utterances) for d in dialogues}
    rows = sorted((_row(r, sizes) for r in rows), key=lambda r: r["dialogue"])
    summary = write_manifest(out, cfg, rows, llm_spec=llm_spec, embedder_spec=embedder_spec, from_dir=from_dir,
                             seconds=time.perf_counter() - t0, engine=_engine_stats(spec))
    marks["manifest_written"] = time.time()
    return summary


def _row(res: dict[str, Any], sizes: dict[str, int]) -> dict[str, Any]:
    """The plan's result row as the manifest's per-dialogue row."""
    stats = dict(res.get("stats") or {})
    return {"dialogue": int(res["id"]), "utterances": sizes.get(str(res["id"])), "ok": res["ok"],
            "step": res.get("step"), "reason": res.get("reason"), "seconds": stats.pop("seconds", 0.0),
            "retry_reasons": stats.pop("retry_reasons", []), "stats": stats}


def _engine_stats(spec: LLMSpec) -> dict[str, Any] | None:
    """The pool's own counters, cumulative over the process (engine calls, engine starts, prefix-cache hit rate)."""
    from emocaustics.models.registry import is_remote

    if is_remote(spec):
        return None
    from emocaustics.models.pool import get_pool

    try:
        stats = aio.run(get_pool(spec).stats())
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


def write_manifest(out: Path, cfg: ExtractConfig, rows: list[dict[str, Any]], *, llm_spec: str | LLMSpec,
                   embedder_spec: str | None, from_dir: Path | None, seconds: float,
                   engine: dict[str, Any] | None = None) -> dict[str, Any]:
    from emocaustics.models.spec import as_llm_spec

    summary = summarise(cfg, rows, seconds)
    manifest = {
        **summary,
        "config": cfg.model_dump(),
        "window": cfg.k, "step": cfg.s,
        "model": llm_spec if isinstance(llm_spec, str) else llm_spec.canonical(),  # a string: as the user wrote it
        "embedder": embedder_spec if any(r.get("stats") for r in rows) else None,
        "prompts_version": PROMPTS_VERSION,
        "from": str(from_dir) if from_dir else None,
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "engine": engine,
        "per_dialogue": [{k: r.get(k) for k in ("dialogue", "utterances", "ok", "seconds", "stats",
                                                              "retry_reasons")} for r in rows],
    }
    if as_llm_spec(llm_spec).kind == "smoke":  # the vLLM one (hf:smoke never had the note)
        manifest["note"] = SMOKE_NOTE
    from emocaustics.tasks.longdialogue.score.predictions import write_json

    write_json(out / "manifest.json", manifest, indent=2)
    return summary
