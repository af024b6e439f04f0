"""In-process benchmarks' way to solve EmoCaustics dialogues on the shared plan (`solve.plan.asolve_samples`), with
the summary the removed `extract` driver returned (counts, failures, calls, tokens, seconds). The command line's one
driver is `emocaustics eval TASK --no-score` (startup_bench and race_bench time that); engine_bench and reference_bench
run inside their own process beside an engine or server they watch, so they call the plan directly."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

TOTALS = ("llm_calls", "cache_hits", "prompt_tokens", "generated_tokens", "unparseable", "retries")


def run_extract(dialogues: list[Any], cfg: Any, *, llm_spec: str, out: Path, from_dir: Path | None = None,
                cache_dir: Path | None = None, concurrency: int = 256, embedder_spec: str = "minilm") -> dict[str, Any]:
    """One `ExtractConfig` over the dialogues: predictions and failures written to `out` as each dialogue ends;
    `from_dir`: the sextuple window run a chain window config builds on."""
    from emocaustics.core import aio
    from emocaustics.core.task import Sample, get_task
    from emocaustics.models.factory import make_llm, pool
    from emocaustics.models.registry import is_remote
    from emocaustics.models.spec import parse_llm_spec
    from emocaustics.solve.plan import asolve_samples
    from emocaustics.tasks.longdialogue.task import EmoOptions

    t0 = time.perf_counter()
    spec = parse_llm_spec(llm_spec)
    if not is_remote(spec):
        pool(spec)  # in this (main) thread, as the job does (jobs/together.py)
    llm = make_llm(spec, cache_dir=cache_dir)
    samples = [Sample(str(d.id), d, meta={"n_utterances": len(d.utterances)}) for d in dialogues]
    out.mkdir(parents=True, exist_ok=True)

    async def solve() -> list[dict[str, Any]]:
        try:
            return await asolve_samples(get_task(cfg.task), samples, EmoOptions(**cfg.model_dump(exclude={"task"})),
                                        llm, out, concurrency=concurrency, prior=from_dir,
                                        embedder_spec=embedder_spec)
        finally:
            await llm.aclose()

    rows = aio.run(solve())
    totals = {k: sum(int((r.get("stats") or {}).get(k, 0)) for r in rows) for k in TOTALS}
    return {"task": cfg.task, "method": cfg.method, "dialogues": len(rows), "predicted": sum(1 for r in rows if r["ok"]),
            "failures": [{"dialogue": int(r["id"]), "reason": f"{r.get('step')}: {r.get('reason')}"}
                         for r in rows if not r["ok"]],
            **totals, "seconds": round(time.perf_counter() - t0, 3)}
