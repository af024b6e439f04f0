"""`--help` that shows each option's default once: appended when the help text does not already say it, and left out
for options whose default is "not given" (None, False); and the exit statuses, listed alike by every command that
runs a job (`exit_epilog`)."""

from __future__ import annotations

import argparse
import re

from emocaustics.core import errors

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
