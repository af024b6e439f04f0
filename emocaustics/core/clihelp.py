"""`--help` that shows each option's default once: appended when the help text does not already say it, and left out
for options whose default is "not given" (None, False)."""

from __future__ import annotations

import argparse


class DefaultsFormatter(argparse.HelpFormatter):
    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if ("default" in text or action.default in (None, False, argparse.SUPPRESS)
                or action.option_strings == [] or text == argparse.SUPPRESS):
            return text
        return f"{text} (default: %(default)s)"
