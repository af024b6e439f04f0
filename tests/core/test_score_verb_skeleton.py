"""Every `score TASK` verb is built on the one skeleton (`core.clihelp.verb`): the same four options, and its handler
prints, then ends as `finish` says (status 0, 2 or 3), whatever the task."""

from __future__ import annotations

import argparse

import pytest

from emocaustics.cli import build_parser
from emocaustics.core.clihelp import Scored, finish
from emocaustics.core.errors import SamplesFailed, UsageError


def _score_verbs() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    score = next(a for a in parser._subparsers._group_actions[0].choices.items() if a[0] == "score")[1]
    return dict(score._subparsers._group_actions[0].choices)


def test_every_score_verb_has_the_skeletons_options():
    verbs = _score_verbs()
    assert {"aer", "ecpe", "narrative", "sextuple", "emotion"} <= set(verbs)
    for name, p in verbs.items():
        flags = {s for a in p._actions for s in a.option_strings}
        assert {"--pred", "--data", "--json", "--allow-failures"} <= flags, name


@pytest.mark.parametrize("as_json", [False, True])
def test_finish_prints_then_ends_by_the_failure(capsys, as_json):
    args = argparse.Namespace(json=as_json, allow_failures=False)
    doc = {"score": 0.5, "name": "Ü"}
    assert finish(args, Scored(doc, "score 0.5\n")) == 0
    out = capsys.readouterr().out
    assert out == ('{\n "score": 0.5,\n "name": "Ü"\n}\n' if as_json else "score 0.5\n")
    with pytest.raises(SamplesFailed):
        finish(args, Scored(doc, "x\n", SamplesFailed(1, 2)))
    assert capsys.readouterr().out  # printed before the exit status is said
    assert finish(argparse.Namespace(json=as_json, allow_failures=True), Scored(doc, "x\n", SamplesFailed(1, 2))) == 0
    # an error found after the summary: printed as `main` prints it, status 2, --allow-failures or not
    assert finish(argparse.Namespace(json=as_json, allow_failures=True), Scored(doc, "x\n", UsageError("bad"))) == 2
    assert capsys.readouterr().err == "emocaustics: error: bad\n"
