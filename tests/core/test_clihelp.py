"""Issue 41 point 15: the exit statuses a script can rely on are the same in core/errors.py (its constants and its
table), docs/jobs.md's table and every --help that lists them (`emocaustics --help` left out 6)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from emocaustics.cli import build_parser
from emocaustics.core import errors

REPO = Path(__file__).resolve().parents[2]


def _table(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"^\| (\d+) \|", text, re.M)]


def _listed(help_text: str) -> list[int]:
    """The statuses after 'exit status:' in a --help (each '<n> <words>', separated by '; ')."""
    tail = " ".join(help_text.split("exit status:", 1)[1].split())
    return [int(n) for n in re.findall(r"(?:^|; )(\d+) ", tail)]


def test_the_constants_the_module_table_and_the_docs_table_agree():
    constants = sorted(v for k, v in vars(errors).items() if k.startswith("EXIT_"))
    assert _table(errors.__doc__) == constants
    assert _table((REPO / "docs" / "jobs.md").read_text(encoding="utf-8").split("## Exit statuses", 1)[1]) == constants


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["eval", "--help"]])
def test_every_help_that_lists_exit_statuses_lists_them_all(argv, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(argv)
    constants = sorted(v for k, v in vars(errors).items() if k.startswith("EXIT_"))
    assert _listed(capsys.readouterr().out) == constants
