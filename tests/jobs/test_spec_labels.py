"""Two runs that would share a label but differ (another dataset file) are an error, never one of them dropped;
`name:` sets a run's label."""

from __future__ import annotations

import pytest

from emocaustics.jobs.spec import JobSpec


def _job(runs):
    return {"name": "labels", "runs": runs}


def test_same_label_different_dataset_is_an_error_naming_the_label():
    runs = [{"task": "sextuple", "method": "oracle", "dataset": {"subset": "sample"}},
            {"task": "sextuple", "method": "oracle", "dataset": {"subset": "paper-100"}}]
    with pytest.raises(ValueError, match=r"both labelled 'sextuple_oracle'.*give one of them a `name:`"):
        JobSpec.model_validate(_job(runs)).expand()


def test_a_name_keeps_both_runs_and_exact_duplicates_collapse():
    runs = [{"task": "sextuple", "method": "oracle", "dataset": {"subset": "sample"}},
            {"task": "sextuple", "method": "oracle", "dataset": {"subset": "paper-100"}, "name": "oracle-paper"},
            {"task": "sextuple", "method": "oracle", "dataset": {"subset": "sample"}}]
    labels = [r.label for r in JobSpec.model_validate(_job(runs)).expand()]
    assert labels == ["sextuple_oracle", "oracle-paper"]
