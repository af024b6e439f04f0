"""AER prefix caching: vLLM's prefix-cache hit rate of `context: full` with and without per-topic affinity.

Under `full` context every question of a topic starts with the same system text and documents (thousands of tokens);
only the question differs. With affinity per topic (the task's `affinity`) all questions of a topic go to one replica,
so its prefix cache serves the documents after the first question; without it (affinity = the question id, least
loaded replica) the questions of a topic spread over the replicas and each replica computes the documents again.

The same prepared questions run twice through `ModelPool.run` (the task's own solver, next to the engine), once per
placement; a phase tag at the start of the system text keeps one phase from hitting the other's cache. Reported per
phase: prefix-cache hit rate (cached / prompt tokens, from vLLM's per-request `num_cached_tokens`), prompt and
generated tokens, wall seconds, generated tokens/s, unreadable answers (failures). Needs >= 2 replicas to show a
difference. The smoke model's answers are noise: this measures the machinery.

    python -m benchmarks.aer_prefix_bench --llm 'smoke?replicas=2&max_model_len=8192' --split sample \
        --max-questions 80 --max-context-tokens 8192 --chars-per-token 0.8
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


class _Tagged:
    """The pool with a phase tag prepended to every system message (a fresh prefix per phase)."""

    def __init__(self, llm: Any, tag: str) -> None:
        self.llm, self.tag, self.name = llm, tag, getattr(llm, "name", "llm")

    async def generate(self, requests: list[Any]) -> list[Any]:
        from dataclasses import replace

        tagged = [replace(r, messages=({**r.messages[0], "content": f"[{self.tag}] " + r.messages[0]["content"]},
                                       *r.messages[1:])) for r in requests]
        return await self.llm.generate(tagged)


def _make_solver(task: Any, options: Any, tag: str):  # noqa: ANN202 (a closure shipped to the replicas)
    async def solve(llm: Any, sample: Any) -> Any:
        from emocaustics.core.task import SolveFailed

        try:
            return await task.solve(_Tagged(llm, tag), sample, options)
        except SolveFailed as exc:
            return {"failed": str(exc)}

    return solve


async def _phase(pool: Any, task: Any, samples: list[Any], options: Any, affinity: bool, tag: str) -> dict[str, Any]:
    before = await pool.stats()
    t0 = time.perf_counter()
    key = (lambda s: task.affinity(s, options)) if affinity else (lambda s: f"aer:{s.id}")
    out = await pool.run(_make_solver(task, options, tag), samples, affinity_key=key,
                         weight_key=lambda s: task.weight(s, options))
    wall = time.perf_counter() - t0
    after = await pool.stats()
    d = {k: after[k] - before[k] for k in ("prompt_tokens", "cached_prompt_tokens", "generated_tokens", "calls")}
    failed = sum(1 for r in out if not r or (isinstance(r, dict) and "failed" in r))
    return {
        "affinity": "topic" if affinity else "question", "questions": len(samples), "wall_s": round(wall, 2),
        "prefix_cache_hit_rate": (round(d["cached_prompt_tokens"] / d["prompt_tokens"], 4) if d["prompt_tokens"]
                                  else None),
        **d, "generated_tok_s": round(d["generated_tokens"] / wall, 1) if wall else None, "failed": failed,
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    from emocaustics.core.task import ScoreContext, get_task
    from emocaustics.models.spec import make_llm

    task = get_task("aer")
    options = task.parse_options({"method": "llm", "prompt": args.prompt, "context": "full",
                                  "max_context_tokens": args.max_context_tokens,
                                  "chars_per_token": args.chars_per_token})
    loaded = task.load(task.Dataset(split=args.split, data=args.data, max_samples=args.max_questions), options)
    samples = task.prepare(loaded.samples, options, ScoreContext())
    pool = make_llm(args.llm)
    start_s = await pool.start()
    phases = [await _phase(pool, task, samples, options, affinity=False, tag="phase-1"),
              await _phase(pool, task, samples, options, affinity=True, tag="phase-2")]
    stats = await pool.stats()
    return {"llm": args.llm, "split": args.split, "prompt": args.prompt, "questions": len(samples),
            "topics": len({s.input["topic_id"] for s in samples}), "replicas": stats.get("replicas"),
            "engine_start_s": round(start_s, 1), "phases": phases,
            "mean_prompt_tokens_est": round(sum(s.meta["prompt_tokens_est"] for s in samples) / len(samples))}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--llm", default="smoke?replicas=2&max_model_len=8192")
    p.add_argument("--split", default="sample")
    p.add_argument("--data", default=None)
    p.add_argument("--prompt", default="zero-shot", choices=("zero-shot", "few-shot", "cot"))
    p.add_argument("--max-questions", type=int, default=None)
    p.add_argument("--max-context-tokens", type=int, default=8192)
    p.add_argument("--chars-per-token", type=float, default=0.8)
    p.add_argument("--out", type=Path, default=RESULTS / "aer_prefix_bench.json")
    args = p.parse_args(argv)
    result = asyncio.run(main_async(args))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
