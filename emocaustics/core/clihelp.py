"""`--help` that shows each option's default once: appended when the help text does not already say it, and left out
for options whose default is "not given" (None, False); the exit statuses, listed alike by every command that runs a
job (`exit_epilog`); and the one skeleton of every `score TASK` verb (`verb`, `Scored`, `finish`, `listed`), the
generic one's (cli/score.py) and each task's own (`tasks/<name>/cli.py`), here below the tasks that build on it."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from emocaustics.core import errors
from emocaustics.core.errors import SamplesFailed, UsageError

# Each exit status of core/errors.py (its EXIT_* constants) in a few words, by the constant's name; a status without
# words here is listed with its row of the table in core/errors.py. tests/core/test_clihelp.py holds the constants,
# that table, docs/jobs.md's table and every --help that lists statuses to the same statuses.
SHORT = {
    "OK": "done",
    "USAGE": "usage error (nothing run)",
    "FAILURES": "some samples failed (unless --allow-failures)",
    "ENDPOINT_DOWN": "a model endpoint stopped answering (--resume continues)",
    "CLUSTER_LOST": "the Ray cluster was lost (--resume continues)",
    "BUDGET_REACHED": "the job's max_cost_usd would have been crossed by the next call (--resume continues)",
    "WRITE_FAILED": "an output could not be written, e.g. a full disk (--resume continues)",
    "INTERRUPTED": "interrupted",
}


def exit_statuses() -> dict[int, str]:
    """status -> its words, in the order of the statuses."""
    table = dict(re.findall(r"^\| (\d+) \| (.+?) \|$", errors.__doc__ or "", re.M))
    named = {v: k.removeprefix("EXIT_") for k, v in vars(errors).items()
             if k.startswith("EXIT_") and isinstance(v, int)}
    return {code: SHORT.get(named[code]) or table.get(str(code), "") for code in sorted(named)}


def exit_epilog(**say: str) -> str:
    """'exit status: 0 done; 2 ...; 130 interrupted', with a command's own words for some statuses, by the name of
    the constant without EXIT_ in lower case (`usage="..."`)."""
    words = exit_statuses()
    for name, text in say.items():
        words[getattr(errors, f"EXIT_{name.upper()}")] = text
    return "exit status: " + "; ".join(f"{code} {text}" for code, text in words.items())


class DefaultsFormatter(argparse.HelpFormatter):
    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if ("default" in text or action.default in (None, False, argparse.SUPPRESS)
                or action.option_strings == [] or text == argparse.SUPPRESS):
            return text
        return f"{text} (default: %(default)s)"


class ExamplesFormatter(DefaultsFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults shown once, and an epilog of examples kept as written."""


@dataclass
class Scored:
    """What a task's score verb found. `doc` is what --json prints (a string is printed as it is), `text` the summary
    printed without it, `failure` what ends the command once it is printed: a `SamplesFailed` (status 3, unless
    --allow-failures) or a `UsageError` (status 2)."""

    doc: Any
    text: str
    failure: SamplesFailed | UsageError | None = None


def verb(score_subparsers: Any, name: str, score: Callable[[argparse.Namespace], Scored], *, pred: dict[str, Any],
         data: dict[str, Any], allow: str, options: Callable[[Any], None] = lambda p: None,
         json_help: str = "print the summary as JSON", **parser: Any) -> Any:
    """`score NAME`: --pred and --data (their add_argument keywords; `flags` gives --data's older names too), the
    task's own `options`, --json and --allow-failures; the handler prints what `score(args)` returns (`finish`)."""
    p = score_subparsers.add_parser(name, **parser)
    p.add_argument("--pred", required=True, **pred)
    p.add_argument(*data.get("flags", ("--data",)), **{k: v for k, v in data.items() if k != "flags"})
    options(p)
    p.add_argument("--json", action="store_true", help=json_help)
    p.add_argument("--allow-failures", action="store_true", help=allow)
    p.set_defaults(func=lambda args: finish(args, score(args)))
    return p


def finish(args: argparse.Namespace, scored: Scored) -> int:
    """Print the summary (or its JSON), then raise the failure: every score verb's exit status (0, 2 or 3)."""
    if not args.json:
        sys.stdout.write(scored.text)
    else:
        print(scored.doc if isinstance(scored.doc, str) else json.dumps(scored.doc, ensure_ascii=False, indent=1,
                                                                        default=str))
    if isinstance(scored.failure, UsageError):  # found once the summary was printed: said as `main` says it
        print(f"emocaustics: error: {scored.failure}", file=sys.stderr)
        return scored.failure.exit_code
    if scored.failure is not None and not args.allow_failures:
        raise scored.failure
    return 0


def listed(ids: list[Any], shown: int = 10) -> str:
    """The first `shown` of `ids`, `...` when there are more: how every score verb names the samples it lists."""
    return ", ".join(map(str, ids[:shown])) + (" ..." if len(ids) > shown else "")
