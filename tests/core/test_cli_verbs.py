"""The command line builds only the parser of the verb it runs (`emocaustics.cli.VERB_MODULES`), and that parser is
the whole parser's verb: same verbs, same module, nothing else imported (issue 31: `extract`'s start-up)."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from emocaustics import cli

REPO = Path(__file__).resolve().parents[2]


def _verbs_of(module: str) -> set[str]:
    sub = argparse.ArgumentParser().add_subparsers()
    importlib.import_module(module).register(sub)
    return set(sub.choices)


def test_the_table_names_every_verb_of_the_whole_parser_but_data_and_score_and_its_module() -> None:
    whole = cli.build_parser()
    verbs = set(next(a for a in whole._actions if isinstance(a, argparse._SubParsersAction)).choices)
    assert verbs - set(cli.VERB_MODULES) == {"data", "score"}
    assert set(cli.VERB_MODULES) <= verbs
    for verb, module in cli.VERB_MODULES.items():
        assert verb in _verbs_of(module), (verb, module)


@pytest.mark.parametrize("argv", [["eval", "sextuple", "--method", "window", "--ids", "207,218", "--no-score"],
                                  ["ecpe", "validate", "pred.json"], ["tasks"]])
def test_a_verbs_own_parser_reads_its_arguments_as_the_whole_parser_does(argv) -> None:
    mine, whole = vars(cli.verb_parser(argv).parse_args(argv)), vars(cli.build_parser().parse_args(argv))
    assert mine == whole
    assert mine["command"] == argv[0]


def test_options_first_or_an_unknown_verb_build_the_whole_parser() -> None:
    assert cli.verb_parser([]) is None
    assert cli.verb_parser(["--help"]) is None
    assert cli.verb_parser(["score", "sextuple"]) is None
    assert cli.verb_parser(["data", "fetch", "ecpe"]) is None
    assert cli.verb_parser(["nonsense"]) is None


def test_version_is_read_when_asked(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"emocaustics {version('emocaustics')}\n"


def test_extract_names_the_verb_it_became(capsys) -> None:
    """`extract` is `eval ... --no-score` now (issue 54 item 5): one line naming it, exit status 2."""
    from emocaustics.cli import main

    assert main(["extract", "sextuple", "--method", "window", "--llm", "smoke"]) == 2
    assert "is now `eval TASK --method M --model SPEC --no-score`" in capsys.readouterr().err


PROGRAM = """
import argparse, atexit, sys, threading, time
from emocaustics import cli

class Noisy:
    def __del__(self):
        sys.stdout.write("module teardown\\n")

KEEP = Noisy()

def later():
    time.sleep(0.2)
    sys.stdout.write("thread done; ")

def handler(args):
    if args.mode == "raise":
        raise RuntimeError("boom")
    threading.Thread(target=later).start()  # not a daemon: the exit waits for it
    atexit.register(lambda: sys.stdout.write("atexit ran\\n"))
    sys.stdout.write("no newline yet; ")  # still in the buffer when the command returns
    return 3

class Parser:
    def parse_args(self, argv):
        return argparse.Namespace(func=handler, mode=sys.argv[1])

cli.build_parser = Parser
cli.run()
"""


def test_the_program_exits_with_its_status_after_threads_atexit_and_flush_without_module_teardown() -> None:
    done = subprocess.run([sys.executable, "-c", PROGRAM, "return"], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (3, "no newline yet; thread done; atexit ran\n", "")


def test_a_command_that_raises_leaves_as_the_interpreter_does() -> None:
    done = subprocess.run([sys.executable, "-c", PROGRAM, "raise"], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1
    assert done.stdout == "module teardown\n"
    assert done.stderr.rstrip().endswith("RuntimeError: boom")


def test_the_solving_modules_leave_polars_unloaded() -> None:
    """Polars (~0.1 s of start-up) loads where scores are tabled, not by the plan or a dialogue's solver."""
    code = ("import sys\nimport emocaustics.tasks.longdialogue.task, "
            "emocaustics.solve.plan, emocaustics.tasks.longdialogue.extract.dialogue\n"
            "print([m for m in ('polars', 'torch', 'ray') if m in sys.modules])\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"
