"""`emocaustics` command line: the core's verbs (run, report, compare, tasks) and each task package's own verbs.

A task package's `cli` module may define `register(subparsers)` (top-level verbs, e.g. `human`, `ecpe`),
`register_data(data_subparsers)` (`data` verbs of its own) and `register_score(score_subparsers)` (its `emocaustics
score <task>` verb; a task without one is scored by the core's `score TASK` over `Task.score`). Handlers keep heavy
imports (ray, torch, vllm) inside, so that `--help` and bad-argument errors stay instant.
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import os
import sys

from emocaustics.cli import data as datacli
from emocaustics.core.clihelp import DefaultsFormatter, exit_epilog
from emocaustics.core.errors import (EXIT_CLUSTER_LOST, EXIT_INTERRUPTED, BudgetReached, EndpointDown, SamplesFailed,
                                     UsageError, WriteFailed)

# The module whose `register(subparsers)` adds each top-level verb: a command builds the parser of its own verb only.
# Building every verb imports every task package (its task module, polars, numpy, its data layer) and the job
# layer; for the old `emocaustics extract` that was about 0.15 s of a 0.45 s start before its first call (issue 31). `data`
# and `score` gather verbs of every task, and `--help`, `--version` and unknown words list or name them all, so
# those build the whole parser (`build_parser`). tests/core/test_cli_verbs.py checks this table against it.
VERB_MODULES = {
    "run": "emocaustics.cli.job", "tasks": "emocaustics.cli.job", "report": "emocaustics.cli.job",
    "compare": "emocaustics.cli.job", "eval": "emocaustics.cli.eval", "serve": "emocaustics.cli.serve",
    "models": "emocaustics.cli.serve", "view": "emocaustics.cli.view", "ui": "emocaustics.cli.ui",
    "export": "emocaustics.cli.export", "ecpe": "emocaustics.tasks.ecpe.cli",
    "human": "emocaustics.tasks.human.cli", "aer": "emocaustics.tasks.aer.cli",
}
# The core's own modules of those verbs, in the order `--help` lists their verbs.
CORE_COMMAND_MODULES = tuple(dict.fromkeys(m for m in VERB_MODULES.values() if m.startswith("emocaustics.cli.")))


def _task_cli_modules() -> list:
    from emocaustics.tasks import BUILT_IN

    modules = []
    for package in sorted(set(BUILT_IN.values())):
        try:
            modules.append(importlib.import_module(f"emocaustics.tasks.{package}.cli"))
        except ModuleNotFoundError as exc:
            if exc.name != f"emocaustics.tasks.{package}.cli":  # a task without a command line is fine; a broken import is not
                raise
    return modules


class _Version(argparse._VersionAction):
    """`--version`, reading the installed version only when asked (importlib.metadata: ~15 ms at every start)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        from emocaustics.core.software import version

        self.version = f"emocaustics {version()}"
        super().__call__(parser, namespace, values, option_string)


def _top_parser() -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    parser = argparse.ArgumentParser(prog="emocaustics",
                                     description="Run evaluation jobs on a Ray cluster (local by default), score "
                                                 "predictions against ground truth, and build score reports. "
                                                 "`emocaustics run jobs/quickstart.yaml --dry-run` shows what a job "
                                                 "would do.",
                                     formatter_class=DefaultsFormatter,
                                     epilog=exit_epilog())
    parser.add_argument("--version", action=_Version)
    return parser, parser.add_subparsers(dest="command", required=True)


def verb_parser(argv: list[str]) -> argparse.ArgumentParser | None:
    """The parser of the one verb that `argv` starts with, when a single module registers it; else None."""
    module = VERB_MODULES.get(argv[0]) if argv else None
    if module is None:
        return None
    parser, sub = _top_parser()
    importlib.import_module(module).register(sub)
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: every core verb and every task package's verbs."""
    parser, sub = _top_parser()
    for name in CORE_COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    data_sub = datacli.register(sub)  # `data fetch TASK`, every task's; a task may add its own `data` verbs
    score = sub.add_parser("score", help="score predictions or a submission of one task against its ground truth")
    score_sub = score.add_subparsers(dest="score_task", required=True, metavar="TASK")
    for module in _task_cli_modules():
        if hasattr(module, "register"):
            module.register(sub)
        if hasattr(module, "register_data"):
            module.register_data(data_sub)
        if hasattr(module, "register_score"):
            module.register_score(score_sub)
    from emocaustics.cli.score import register_generic
    from emocaustics.core.task import task_names

    try:  # `score TASK` over `Task.score` for every task (plug-ins included) without a score verb of its own
        register_generic(score_sub, task_names())
    except UsageError:  # a broken plug-in: named by the command that needs the tasks, not by every --help
        pass
    return parser


def _task_file(argv: list[str]) -> list[str]:
    """`score PATH.yaml ...`: the task of a task file (tasks/yamltask), by the name it registers under (`score` has
    one sub-command per task name)."""
    if len(argv) > 1 and argv[0] == "score":  # the other verbs never import the task registry here (startup)
        from emocaustics.core.task import get_task, is_task_file

        if is_task_file(argv[1]):
            return [argv[0], get_task(argv[1]).name, *argv[2:]]
    return argv


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        argv = _task_file(argv)
    except UsageError as exc:
        print(f"emocaustics: error: {exc}", file=sys.stderr)
        return exc.exit_code
    if argv[:1] == ["extract"]:  # the verb it became (issue 54): one driver of the solving plan
        print("emocaustics: error: `extract TASK --method M --llm SPEC` is now `eval TASK --method M --model SPEC "
              "--no-score` (the predictions under RUN/predictions/<config>/)", file=sys.stderr)
        return 2
    parser = verb_parser(argv) or build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (KeyboardInterrupt, Exception) as exc:
        if _interrupted(exc):  # a Ctrl-C, or an error of the clean-up after one
            return _interrupt(args)
        # a lost Ray cluster surfaces as whatever Ray call came next (our own errors too): one line, status 5
        if (lost := _lost_cluster(exc)) is not None and not isinstance(exc, UsageError):
            return _cluster_lost(lost, exc)
        if isinstance(exc, (UsageError, EndpointDown, BudgetReached, SamplesFailed, WriteFailed)):
            print(f"emocaustics: error: {exc}", file=sys.stderr)
            return exc.exit_code  # exit statuses: core.errors
        from emocaustics.core.writes import unnamed

        if (full := unnamed(exc)) is not None:  # a full disk under a write that no writer named
            print(f"emocaustics: error: {full}", file=sys.stderr)
            return full.exit_code
        raise


def _interrupted(exc: BaseException) -> bool:
    """A Ctrl-C that an error of the clean-up after it replaced (a file that could not be saved on the way out):
    still an interrupt, status 130."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__context__  # type: ignore[assignment]
    return False


def _interrupt(args: argparse.Namespace) -> int:
    """A Ctrl-C: the runs the command had going are marked and their resume command printed (`cli.job.interrupted`:
    `run` and `eval` alike), then one line, status 130."""
    if "emocaustics.jobs.rundir" in sys.modules:  # no run folder was claimed without it
        from emocaustics.cli.job import interrupted

        interrupted(args)
    print("emocaustics: interrupted", file=sys.stderr)
    return EXIT_INTERRUPTED


def run() -> None:
    """The program (`python -m emocaustics`): `main` on the command line, then an exit without the interpreter's
    teardown of every module (numpy, polars, pydantic, aiohttp ...: ~0.1 s that each command's end waited for, issue
    31). The exit is the interpreter's up to that step: `sys.exit` unwinds, non-daemon threads are joined, every
    atexit handler runs (the response cache's flush, multiprocessing's children, logging), and the standard streams
    are flushed. Only a command that returned takes it; an exception or argparse's exit leaves as before."""
    atexit.register(_leave)  # registered first, so it runs after every other atexit handler
    code = main()
    _EXIT_CODE.append(code)
    sys.exit(code)


_EXIT_CODE: list[int] = []


def _leave() -> None:
    if not _EXIT_CODE:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # e.g. a reader that closed the pipe: the interpreter's exit reports it, as before
        return
    os._exit(_EXIT_CODE[0] or 0)  # sys.exit(None) is status 0


def _lost_cluster(exc: BaseException) -> str | None:
    if "emocaustics.core.cluster" not in sys.modules:  # no Ray was used: nothing to lose
        return None
    from emocaustics.core.cluster import lost_cluster

    return lost_cluster(exc)


def _cluster_lost(reason: str, exc: BaseException) -> int:
    detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    print(f"emocaustics: error: the Ray cluster was lost: {reason}; the command stopped ({detail}); finished samples "
          "are kept and `run --resume` continues; exit status 5", file=sys.stderr)
    return EXIT_CLUSTER_LOST


if __name__ == "__main__":
    sys.exit(main())
