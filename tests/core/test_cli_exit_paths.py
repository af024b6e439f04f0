"""cli.main's ending of a command that raised: our errors one line and their status, a Ctrl-C (or an error of the
clean-up after one) status 130, a full disk no writer named one line, anything else raised as it is."""

from __future__ import annotations

import argparse
import errno

import pytest

import emocaustics.cli as cli
from emocaustics.core.errors import EXIT_INTERRUPTED, SamplesFailed, UsageError


def _main(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> int:
    def func(args: argparse.Namespace) -> int:
        raise exc

    parser = argparse.ArgumentParser()
    parser.set_defaults(func=func, command="boom")
    monkeypatch.setattr(cli, "verb_parser", lambda argv: parser)
    return cli.main([])


def _after_ctrl_c() -> OSError:
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise OSError("the file could not be saved on the way out")
    except OSError as exc:
        return exc


def test_each_kind_of_failure_ends_as_before(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    assert _main(monkeypatch, UsageError("--x: bad")) == 2
    assert capsys.readouterr().err == "emocaustics: error: --x: bad\n"
    failed = SamplesFailed(2, 5, "see there")
    assert _main(monkeypatch, failed) == failed.exit_code == 3
    assert capsys.readouterr().err == f"emocaustics: error: {failed}\n"
    assert _main(monkeypatch, KeyboardInterrupt()) == EXIT_INTERRUPTED
    assert _main(monkeypatch, _after_ctrl_c()) == EXIT_INTERRUPTED
    assert capsys.readouterr().err == "emocaustics: interrupted\nemocaustics: interrupted\n"
    with pytest.raises(ZeroDivisionError):
        _main(monkeypatch, ZeroDivisionError("a bug"))
    full = OSError(errno.ENOSPC, "No space left on device")
    code = _main(monkeypatch, full)
    assert code != 0 and capsys.readouterr().err.startswith("emocaustics: error: ")
