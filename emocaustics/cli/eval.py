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
  emocaustics eval emotion --model openai:gpt-4o-mini --method window --ids 207 --no-score

models: openai:MODEL (base URL $OPENAI_BASE_URL, default https://api.openai.com/v1; key $OPENAI_API_KEY),
  anthropic:MODEL (key $ANTHROPIC_API_KEY), ollama:MODEL ($OLLAMA_HOST, default localhost:11434), vllm:PATH_OR_NAME
  (the local engine), smoke (a tiny random model: an engine check), or a full spec openai:MODEL@URL?concurrency=8.
  `emocaustics tasks` lists each task's methods and options.

""" + "\n  ".join(textwrap.wrap(exit_epilog(), 116))


def register(subparsers: Any) -> None:
    from emocaustics.jobs.evaloptions import EVAL_OPTIONS  # one row per option (the job and the docs check read it too)

    p = subparsers.add_parser(
        "eval", help="evaluate one task with one model (or a calibration method) in one line, no job file",
        description="Run one task with one method and model, as a one-config job: predictions, scores, summary and "
                    "report land in a run folder, resumable like `emocaustics run`.",
        formatter_class=ExamplesFormatter, epilog=EXAMPLES)
    p.add_argument("task", help="the task (aer, ecpe, narrative, sextuple, emotion, human; `emocaustics tasks`)")
    for option in EVAL_OPTIONS:
        p.add_argument(option.switch, dest=option.name, help=option.help, **{"default": None, **option.argparse})
    run_flags(p)
    p.set_defaults(func=_eval)


def _eval(args: argparse.Namespace) -> int:
    from emocaustics.api import eval as run_eval
    from emocaustics.cli.job import dry_run, resume_or_force, resume_words
    from emocaustics.core.errors import SamplesFailed, Stop, UsageError
    from emocaustics.jobs.oneline import check_submission, eval_arguments, eval_job

    resume_or_force(args)
    kwargs = eval_arguments(args)
    no_score = kwargs.pop("no_score")  # `ec.eval` scores: a --no-score run is the job's, stopped after solving
    if no_score and args.submission_file:  # the scorer writes it
        raise UsageError("--submission-file: a --no-score run writes no submission (scoring does); leave out one")
    if args.dry_run or no_score:
        job = eval_job(args.task, **kwargs, no_score=no_score).model_copy(update={"cache": args.cache})
        if args.dry_run:
            if args.submission_file:
                check_submission(job, Path(args.submission_file))
            return dry_run(job, args)
    try:
        if no_score:  # the job stops after solving (`jobs.runner`): predictions, no scores to read back
            return _solved(job, args)
        run = run_eval(args.task, **kwargs, submission_file=args.submission_file, out=args.out, resume=args.resume,
                       force=args.force, ray_address=args.ray_address, quiet=False, cache=args.cache,
                       retry_limits=args.retry_limits)
    except Stop as exc:  # the runner's hint names a job file; an eval is continued by its own command (every stop:
        # a dead endpoint, the budget, a full disk), its type and exit status kept
        exc.args = (resume_words(args, str(exc)),)
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
