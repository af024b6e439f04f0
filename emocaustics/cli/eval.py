"""`emocaustics eval TASK --model SPEC`: one evaluation in one line, no job file (`jobs.oneline` builds the job; it
runs as `emocaustics run` would: same run folder, cache, resume, report and exit statuses)."""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path
from typing import Any

from emocaustics.cli.job import run_flags
from emocaustics.core.clihelp import ExamplesFormatter, exit_epilog

EXAMPLES = """examples:
  emocaustics eval aer --model openai:gpt-4o-mini --split dev --limit 10 --submission-file sub.jsonl
  emocaustics eval aer --model ollama:llama3.1:8b -T context=none -T prompt=cot
  emocaustics eval ecpe --method oracle --ids 1401,1424
  emocaustics eval sextuple --model vllm:Qwen/Qwen2.5-7B-Instruct --method window --split paper-100
  emocaustics eval aer --model hf:Qwen/Qwen2.5-0.5B-Instruct --limit 10
  emocaustics eval emotion --model openai:gpt-4o-mini --method window --ids 207 --no-score

models: openai:MODEL (base URL $OPENAI_BASE_URL, default https://api.openai.com/v1; key $OPENAI_API_KEY),
  anthropic:MODEL (key $ANTHROPIC_API_KEY), ollama:MODEL ($OLLAMA_HOST, default localhost:11434), vllm:PATH_OR_NAME
  (the local engine), hf:PATH_OR_NAME or huggingface:PATH_OR_NAME (transformers, no vLLM needed; GPU when there is
  one), smoke (a tiny random model: an engine check; hf:smoke is it on transformers), or a full spec
  openai:MODEL@URL?concurrency=8.
  `emocaustics tasks` lists each task's methods and options.

""" + "\n  ".join(textwrap.wrap(exit_epilog(), 116))


def _ids(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "eval", help="evaluate one task with one model (or a calibration method) in one line, no job file",
        description="Run one task with one method and model, as a one-config job: predictions, scores, summary and "
                    "report land in a run folder, resumable like `emocaustics run`.",
        formatter_class=ExamplesFormatter, epilog=EXAMPLES)
    p.add_argument("task", help="the task (aer, ecpe, narrative, sextuple, emotion, human; `emocaustics tasks`)")
    p.add_argument("--model", default=None, help="model spec (see below); none for a calibration method")
    p.add_argument("--method", default=None, help="the task's method (default: its own, e.g. aer llm)")
    p.add_argument("--split", default=None, help="the dataset's split or subset (aer: sample|dev|test|train; "
                                                 "sextuple/emotion: sample|paper-100|long-20|all)")
    p.add_argument("--limit", type=int, default=None, help="only the first N samples (after --ids)")
    p.add_argument("--ids", type=_ids, action="extend", default=None,
                   help="only these sample ids (comma-separated; repeatable)")
    p.add_argument("-T", dest="options", action="append", metavar="KEY=VALUE", default=None,
                   help="a task option (value read as YAML: 3, true, [a, b]); repeatable")
    p.add_argument("-D", dest="dataset", action="append", metavar="KEY=VALUE", default=None,
                   help="a dataset option (e.g. data=PATH); repeatable")
    p.add_argument("--judge", default=None, help="the LLM judge of scoring (a model spec; default none)")
    p.add_argument("--embedder", default=None, help="the scoring embedder (default minilm)")
    p.add_argument("--submission-file", default=None, metavar="PATH",
                   help="also copy the task's submission file there (aer: .jsonl or .zip; ecpe: .zip)")
    p.add_argument("--out", default=None, help="run folder (default: runs/eval-<task>-<method>[-<model>]/<time>)")
    p.add_argument("--no-score", action="store_true",
                   help="solve and write the predictions only (predictions/<config>/): no scores, tables or report")
    run_flags(p)
    p.add_argument("--epochs", type=int, default=None, metavar="N",
                   help="solve each sample N times and reduce (docs/jobs.md, epochs and reducers)")
    p.add_argument("--reducer", default=None, help="mean, mode, max or pass@K (default: the task's own)")
    p.add_argument("--token-limit", type=int, default=None, metavar="N",
                   help="a sample that generates more than N tokens over its calls is a failure row")
    p.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                   help="a sample still running SECONDS after its first call is a failure row")
    p.add_argument("--config-time-limit", type=float, default=None, metavar="SECONDS",
                   help="samples still running (or not started) SECONDS after the config started are failures")
    p.set_defaults(func=_eval)


def _eval(args: argparse.Namespace) -> int:
    from emocaustics.api import eval as run_eval
    from emocaustics.cli.job import dry_run, resume_or_force
    from emocaustics.core.errors import SamplesFailed, Stop, UsageError
    from emocaustics.jobs.oneline import check_submission, eval_job, parse_assignments

    resume_or_force(args)
    kwargs: dict[str, Any] = dict(model=args.model, method=args.method, split=args.split, limit=args.limit,
                                  ids=args.ids, options=parse_assignments(args.options, "-T"),
                                  dataset=parse_assignments(args.dataset, "-D"), judge=args.judge,
                                  embedder=args.embedder, epochs=args.epochs, reducer=args.reducer,
                                  token_limit=args.token_limit, time_limit=args.time_limit,
                                  config_time_limit=args.config_time_limit)
    if args.no_score and args.submission_file:  # the scorer writes it
        raise UsageError("--submission-file: a --no-score run writes no submission (scoring does); leave out one")
    if args.dry_run or args.no_score:
        job = eval_job(args.task, **kwargs, no_score=args.no_score).model_copy(update={"cache": args.cache})
        if args.dry_run:
            if args.submission_file:
                check_submission(job, Path(args.submission_file))
            return dry_run(job, args)
    try:
        if args.no_score:  # the job stops after solving (`jobs.runner`): predictions, no scores to read back
            return _solved(job, args)
        run = run_eval(args.task, **kwargs, submission_file=args.submission_file, out=args.out, resume=args.resume,
                       force=args.force, ray_address=args.ray_address, quiet=False, cache=args.cache,
                       retry_limits=args.retry_limits)
    except Stop as exc:  # the runner's hint names a job file; an eval is continued by its own command (every stop:
        # a dead endpoint, the budget, a full disk), its type and exit status kept
        exc.args = (str(exc).replace("emocaustics run JOB.yaml", "emocaustics eval <the same arguments>"),)
        raise exc from None
    if args.submission_file:
        print(f"submission: {Path(args.submission_file).resolve()}")
    failed = run.failed
    if failed and not args.allow_failures:
        raise SamplesFailed(failed, run.scores.height if run.scores is not None else failed,
                            f"see {run.dir / 'summary.md'}")
    return 0


def _solved(job: Any, args: argparse.Namespace) -> int:
    """`--no-score`: the job solved and its predictions written (`score TASK --pred FOLDER`, or this command again
    with `--resume` and without `--no-score`, scores them); exit 3 when samples failed, as a scored run."""
    from emocaustics.core.errors import SamplesFailed
    from emocaustics.jobs.rundir import read_run
    from emocaustics.jobs.runner import run_job

    run_dir = run_job(job, out=args.out, resume=args.resume, force=args.force, ray_address=args.ray_address,
                      retry_limits=args.retry_limits)
    record = read_run(run_dir) or {}
    failed = int(record.get("failed_samples") or 0)
    if failed and not args.allow_failures:
        raise SamplesFailed(failed, int(record.get("samples") or failed), f"see {run_dir / 'predictions'}")
    return 0
