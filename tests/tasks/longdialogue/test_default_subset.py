"""One default selection rule for extract, score and data stats: the named subset; else all of an explicit dataset
folder or of the given ids; else our sample dialogues."""

from __future__ import annotations

import json

from emocaustics.cli import main
from emocaustics.tasks.longdialogue.data.subsets import default_subset


def test_the_rule():
    assert default_subset("long-20", [1], "/x") == "long-20"
    assert default_subset(None, [207], None) == "all"
    assert default_subset(None, None, "/data") == "all"
    assert default_subset(None, None, None) == "sample"


def test_data_stats_defaults_to_the_sample_and_ids_select_within_all(capsys):
    assert main(["data", "stats", "--json"]) == 0
    sample = json.loads(capsys.readouterr().out)
    assert main(["data", "stats", "--subset", "sample", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == sample
