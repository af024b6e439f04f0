"""`emocaustics extract sextuple|emotion --method direct|rag|window --llm SPEC ...`

Writes `OUT/output_chat_N.json` (sextuples) or `OUT/output_emotions_N.json` (chains) per dialogue as it finishes, `failures.jsonl` and
`manifest.json`; `emocaustics score ... --pred OUT` reads the predictions unchanged. Heavy imports stay in the handler.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def _ids(raw: str) -> list[int]:
    try:
        ids = [int(x) for x in raw.replace("，", ",").split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--ids wants comma-separated integers, got {raw!r}") from None
    if not ids:
        raise argparse.ArgumentTypeError("--ids is empty")
    return ids


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("extract", help="run an extraction method (sextuples or emotion chains) with an LLM",
                              description=__doc__.splitlines()[0])
    p.add_argument("task", choices=["sextuple", "emotion"])
    p.add_argument("--method", required=True, choices=["direct", "rag", "window"])
    p.add_argument("--llm", default="smoke", help="model spec: smoke | vllm:PATH[?replicas=..] | openai:MODEL@URL")
    p.add_argument("--embedder", default="minilm", help="embedder spec for rag/window (default: minilm)")
    sel = p.add_mutually_exclusive_group()
    sel.add_argument("--subset", help="all | paper-100 | long-20 | sample (default: all of an explicit --data folder or of --ids, else sample)")
    sel.add_argument("--ids", type=_ids, help="dialogue ids, e.g. 1,2,3")
    p.add_argument("--data", help="dataset folder (default: $EMOCAUSTICS_DATA or the fetch cache)")
    p.add_argument("--pairing", choices=["verified", "published"], default="verified")
    p.add_argument("--window", type=int, help="window K (default 20 for sextuples, 30 for chains)")
    p.add_argument("--step", type=int, help="step S (default 5 for sextuples, 10 for chains)")
    p.add_argument("--top-k", type=int, default=3, help="rag: earlier utterances retrieved per utterance")
    p.add_argument("--rag-threshold", type=float, default=0.5, help="rag: minimum cosine of a retrieved utterance")
    p.add_argument("--join-threshold", type=float, default=0.85, help="window: cosine to join an event")
    p.add_argument("--event-context", choices=["asof", "strict", "final"], default="asof",
                   help="window pass 2: bucket as of the utterance's window (default), before it, or the final "
                        "bucket (the reference's behaviour, which leaks later utterances)")
    p.add_argument("--from", dest="from_dir", help="emotion window: the sextuple run (output_chat_N.json files) to build on; "
                                                   "without it the sextuple window method runs first")
    p.add_argument("--out", help="output folder (default: runs/extract/TASK-METHOD)")
    p.add_argument("--cache-dir", help="response cache folder (default: the shared one, $EMOCAUSTICS_CACHE/responses)")
    p.add_argument("--no-cache", action="store_true", help="do not use the response cache")
    p.add_argument("--retries", type=int, default=2, help="re-asks of an answer that fails to parse")
    p.add_argument("--json", action="store_true", help="print the run summary as JSON")
    p.set_defaults(func=handle)


def _select(args: argparse.Namespace) -> list[Any]:
    from emocaustics.core.errors import UsageError
    from emocaustics.tasks.longdialogue.data.subsets import default_subset, resolve

    dialogues, _ = resolve(default_subset(args.subset, args.ids, args.data), args.ids, root=args.data,
                           pairing=args.pairing)
    if not dialogues:
        raise UsageError("no dialogues selected")
    return dialogues


def handle(args: argparse.Namespace) -> int:
    import time

    marks = {"handler": time.time()}  # phase marks (epoch seconds): the fixed-cost breakdown in `--json`
    from pydantic import ValidationError

    from emocaustics.core.errors import UsageError
    from emocaustics.tasks.longdialogue.extract.dialogue import ExtractConfig

    try:
        cfg = ExtractConfig(task=args.task, method=args.method, window=args.window, step=args.step, top_k=args.top_k,
                            rag_threshold=args.rag_threshold, join_threshold=args.join_threshold,
                            event_context=args.event_context, retries=args.retries)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise UsageError(f"extract: {where + ': ' if where else ''}{first['msg']}") from None
    from_dir = Path(args.from_dir) if args.from_dir else None
    if from_dir is not None:
        if cfg.task != "emotion" or cfg.method != "window":
            raise UsageError("--from is for `extract emotion --method window` (it builds on a sextuple run)")
        if not from_dir.is_dir():
            raise UsageError(f"--from {from_dir}: not a directory")
    from emocaustics.models.spec import parse_llm_spec

    # A bad spec is a usage error before anything starts. (The `openai` package is not imported here: the endpoint
    # client is our own, and importing it beside the calls cost a run about a second of CPU and GIL.)
    spec = parse_llm_spec(args.llm)
    marks["data_start"] = time.time()
    dialogues = _select(args)
    marks["data_loaded"] = time.time()
    out = Path(args.out) if args.out else Path("runs") / "extract" / f"{cfg.task}-{cfg.method}"
    cache_dir = None
    if not args.no_cache:
        from emocaustics.models.cacheplace import shared_folder

        cache_dir = Path(args.cache_dir) if args.cache_dir else shared_folder()

    from emocaustics.tasks.longdialogue.data.subsets import default_subset
    from emocaustics.tasks.longdialogue.extract.output import write_provenance
    from emocaustics.tasks.longdialogue.extract.run import SMOKE_NOTE, run_extract

    # What these predictions were made for, so that `score` takes the right ground truth and refuses the wrong one.
    write_provenance(out, task=cfg.task, dialogues=dialogues,
                     dataset={"subset": default_subset(args.subset, args.ids, args.data), "ids": args.ids,
                              "data": args.data, "pairing": args.pairing},
                     method=cfg.method, options=cfg.model_dump(mode="json"), llm_spec=args.llm)

    had_ray = _ray_connected()
    try:
        summary = run_extract(dialogues, cfg, llm_spec=args.llm, out=out, embedder_spec=args.embedder,
                              from_dir=from_dir, cache_dir=cache_dir, marks=marks)
    finally:
        if not had_ray and _ray_connected():  # Ray was started for a Ray-hosted model: stop what we started
            import ray

            from emocaustics.models.pool import shutdown_pools

            shutdown_pools()
            ray.shutdown()
    marks["teardown_done"] = time.time()
    summary["timings"] = marks
    summary["cpu_seconds"] = _cpu_seconds()
    if args.json:
        print(json.dumps(summary, ensure_ascii=False))
    else:
        print(f"{summary['task']} / {summary['method']}: {summary['predicted']}/{summary['dialogues']} dialogues "
              f"predicted, {len(summary['failures'])} failed; {summary['llm_calls']} LLM calls, "
              f"{summary['cache_hits']} cache hits, {summary['generated_tokens']} generated tokens, "
              f"{summary['seconds']} s -> {out}")
        for f in summary["failures"][:20]:
            print(f"  failed: dialogue {f['dialogue']}: {f['reason']}", file=sys.stderr)
        if spec.kind == "smoke":
            print(f"note: {SMOKE_NOTE}", file=sys.stderr)
    return 1 if summary["dialogues"] and not summary["predicted"] else 0


def _ray_connected() -> bool:
    """Whether this process is connected to Ray, without importing Ray when nothing imported it yet."""
    ray = sys.modules.get("ray")
    return bool(ray is not None and ray.is_initialized())


def _cpu_seconds() -> float:
    """CPU seconds of this process so far (the driver's share of a run's cost)."""
    import resource

    u = resource.getrusage(resource.RUSAGE_SELF)
    return round(u.ru_utime + u.ru_stime, 3)
